#!/bin/bash
# Watching work dirs: a deletion in a protected dir by a process that is not
# the worker is journaled with that process's pid (fanotify, on /tmp's tmpfs);
# on a file system that cannot say who (the guest's overlayfs /var/lib, kernel
# 6.1) it is journaled as "unknown". `infervisorctl remove-workdir` deletes a
# removed worker's work dir, never a configured one's, and never follows a
# symlink planted inside it.
#
# Naming the deleter needs CAP_SYS_ADMIN in the daemon's effective set (without
# it fanotify hides other processes' pids): units/infervisord.service's
# CapabilityBoundingSet must include it.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

cache=/tmp/keeper-cache
workers_dir=/var/lib/infervisor/workers

workers() { # NAMES...: keeper always, plus `gone` when asked
	{
		cat <<-YAML
			workers:
			  - name: keeper
			    command: [$ivd_example_worker, --serve-interval-ms, "1000"]
			    notify: true
			    memory: {max: 64M}
			    extra_dirs: [{path: $cache, protect: true}]
		YAML
		if [[ ${1:-} == gone ]]; then
			cat <<-YAML
				  - name: gone
				    command: [$ivd_example_worker, --serve-interval-ms, "1000"]
				    notify: true
				    memory: {max: 64M}
			YAML
		fi
	} | use_workers workdir.yaml
}

# deletions_by PID: protected-entry-deleted entries naming PID as the deleter.
deletions_by() {
	ivd_journal INFERVISOR_EVENT=protected-entry-deleted INFERVISOR_DELETER_PID="$1" -o cat |
		grep -c . || true
}

has_deletion_by() { (($(deletions_by "$1") >= 1)); }

deletion_field() { # PID FIELD
	ivd_journal INFERVISOR_EVENT=protected-entry-deleted INFERVISOR_DELETER_PID="$1" -o export |
		sed -n "s/^INFERVISOR_$2=//p" | head -n1
}

unknown_deletions_of() { # ENTRY
	ivd_journal INFERVISOR_EVENT=protected-entry-deleted INFERVISOR_DELETER=unknown \
		INFERVISOR_ENTRY="$1" -o cat | grep -c . || true
}

released() { ! grep -qxF "x $workers_dir/$1" /run/tmpfiles.d/infervisor-workdirs.conf 2>/dev/null; }

has_unknown_deletion_of() { (($(unknown_deletions_of "$1") >= 1)); }

deletion_by_outsider_is_journaled() {
	install_infervisor
	systemctl stop infervisord
	rm -rf "$cache"
	workers
	fresh_daemon
	wait_until 300 has_events keeper ready 1
	echo weights >"$cache/weights.bin"
	echo state >"$workers_dir/keeper/state.json"

	# The deleter lingers, as a cleanup job would, so it can be identified.
	perl -e 'unlink $ARGV[0] or die "unlink: $!"; sleep 60' "$cache/weights.bin" &
	local deleter=$!
	at_exit kill "$deleter"
	wait_until 120 has_deletion_by "$deleter"
	assert_eq other "$(deletion_field "$deleter" DELETER)" "deleter kind"
	assert_eq perl "$(deletion_field "$deleter" DELETER_COMM)" "deleter comm"
	assert_eq "$cache/weights.bin" "$(deletion_field "$deleter" PATH)" "deleted path"
	log "$(ivd_journal INFERVISOR_EVENT=protected-entry-deleted -o cat | head -n3)"

	# /var/lib is overlayfs in the guest: no file handles on 6.1, so inotify,
	# which cannot say who; the worker runs, so "unknown".
	rm "$workers_dir/keeper/state.json"
	wait_until 120 has_unknown_deletion_of state.json
	assert_eq 1 "$(event_count keeper started)" "keeper starts"
}
run_scenario deletion-by-outsider-is-journaled-with-its-pid deletion_by_outsider_is_journaled

remove_workdir_of_removed_worker() {
	install_infervisor
	systemctl stop infervisord
	rm -rf "$workers_dir/gone" /root/precious
	workers gone
	fresh_daemon
	wait_until 300 has_events gone ready 1
	echo data >"$workers_dir/gone/data"
	echo precious >/root/precious
	ln -s /root/precious "$workers_dir/gone/link"

	local out code=0
	out=$(infervisorctl remove-workdir gone 2>&1) || code=$?
	assert_eq 1 "$code" "remove-workdir of a configured worker"
	assert_contains "$out" "is configured" "refusal"
	assert_cmd test -e "$workers_dir/gone/data"

	workers
	systemctl reload infervisord
	wait_until 300 has_events gone stopped 1
	wait_until 120 released gone # its locks and x line go once it has stopped
	code=0
	out=$(infervisorctl remove-workdir gone 2>&1) || code=$?
	assert_eq 2 "$code" "remove-workdir without --yes and without a terminal"
	assert_contains "$out" "would delete $workers_dir/gone" "names the dir"
	assert_cmd test -e "$workers_dir/gone/data"
	out=$(infervisorctl remove-workdir --dry-run gone 2>&1)
	assert_eq "would remove $workers_dir/gone" "$out" "remove-workdir --dry-run"
	assert_cmd test -e "$workers_dir/gone/data"
	code=0
	out=$(infervisorctl remove-workdir --yes gone 2>&1) || code=$?
	assert_eq 0 "$code" "remove-workdir of a removed worker"
	assert_eq "removed $workers_dir/gone" "$out" "remove-workdir output"
	assert_fails test -e "$workers_dir/gone"
	assert_eq precious "$(cat /root/precious)" "symlink target untouched"
	assert_eq 1 "$(event_count gone workdir-removed)" "workdir-removed events"
	assert_cmd test -d "$workers_dir/keeper"
	rm -f /root/precious
}
run_scenario remove-workdir-deletes-a-removed-workers-dir remove_workdir_of_removed_worker
