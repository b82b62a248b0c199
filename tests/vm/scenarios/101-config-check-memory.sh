#!/bin/bash
# Issue 26, defects 6 and 7: `infervisorctl config check` as nobody.
# 6: three hostile checks in a row (a 939 KB text with 50,000 extra dirs)
# once grew the mlockall'd daemon from 27 MB to 189 MB RSS for good. The
# checks now run in a helper process with its own memory limit, and the
# daemon's large blocks are mappings of their own, unmapped when freed
# (app/memory_lock.h): its RSS after them is what it was before, within
# 2 MiB (measured: +0.3 MiB; +3 MiB when the 1 MiB texts stayed in its heap). VmLck is logged,
# not asserted: under mlockall(MCL_FUTURE | MCL_ONFAULT) it counts the
# virtual size of locked mappings (e.g. the 64 MiB malloc arena a check's
# thread reserves once), of which only the touched pages, in RSS, are locked.
# 7: the credential paths of the text are looked at with nobody's rights:
# a path in root's private dir gets the same answer whether it is missing,
# a directory or a file.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
source "${BASH_SOURCE[0]%/*}/../footprint.sh" # status_kib
at_exit systemctl stop infervisord
at_exit dump_state

work=/var/tmp/config-check-memory
slack_kib=$((2 * 1024))

# write_extra_dirs FILE N: one worker with N distinct extra dirs, a flow list.
write_extra_dirs() {
	{
		printf 'workers:\n  - name: w\n    command: [/bin/true]\n    memory: {max: 1G}\n    extra_dirs: ['
		local i
		for ((i = 0; i < $2; i++)); do
			((i == 0)) || printf ', '
			printf '{path: /s/d%d}' "$i"
		done
		printf ']\n'
	} >"$1"
	chmod 0644 "$1"
}

as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

hostile_checks_leave_the_daemons_memory_as_it_was() {
	install_infervisor
	start_two_idle_workers config-check-memory.yaml
	local pid
	pid=$(systemctl show -P MainPID infervisord)
	rm -rf "$work"
	mkdir -p "$work"
	chmod 0755 "$work"
	write_extra_dirs "$work/small.yaml" 3
	write_extra_dirs "$work/hostile.yaml" 50000
	log "hostile config: $(wc -c <"$work/hostile.yaml") bytes"

	# One benign check first: whatever a first check sets up once counts
	# in "before".
	assert_cmd as_nobody infervisorctl config check "$work/small.yaml"
	local rss_before lck_before
	rss_before=$(status_kib "$pid" VmRSS)
	lck_before=$(status_kib "$pid" VmLck)
	local i rc
	for i in 1 2 3; do
		rc=0
		as_nobody infervisorctl config check "$work/hostile.yaml" >"$work/check-$i.out" 2>&1 || rc=$?
		log "hostile check $i: exit $rc: $(head -c 300 "$work/check-$i.out" | tr '\n' '|')"
		log "  daemon VmRSS $(status_kib "$pid" VmRSS) KiB, VmLck $(status_kib "$pid" VmLck) KiB"
		# An answer (errors, or "could not check" with the reason), never a hang.
		assert_eq 1 "$rc" "exit status of hostile check $i"
	done
	local rss_after lck_after
	rss_after=$(status_kib "$pid" VmRSS)
	lck_after=$(status_kib "$pid" VmLck)
	log "daemon VmRSS before ${rss_before} KiB, after ${rss_after} KiB; VmLck before ${lck_before} KiB, after ${lck_after} KiB"
	assert_cmd test "$rss_after" -le $((rss_before + slack_kib))
	assert_eq "$pid" "$(systemctl show -P MainPID infervisord)" "the same daemon"
	# The daemon still checks: a valid text is valid.
	assert_cmd as_nobody infervisorctl config check "$work/small.yaml"
}

credential_paths_are_looked_at_as_the_caller() {
	install_infervisor
	service_active || start_two_idle_workers config-check-memory.yaml
	local private=/root/config-check-private
	rm -rf "$private"
	mkdir -m 0700 "$private" "$private/dir"
	echo secret >"$private/file"
	local kind
	for kind in missing dir file; do
		cat >"$work/cred-$kind.yaml" <<-YAML
			workers:
			  - name: w
			    command: [/bin/true]
			    memory: {max: 1G}
			    credentials: {token: $private/$kind}
		YAML
		chmod 0644 "$work/cred-$kind.yaml"
		# The text names the kind twice (file name, path): out of the answer.
		as_nobody infervisorctl config check "$work/cred-$kind.yaml" 2>&1 | sed "s/$kind/KIND/g" >"$work/cred-$kind.out" || true
		# As root the daemon would tell them apart.
		infervisorctl config check "$work/cred-$kind.yaml" >"$work/cred-$kind.root.out" 2>&1 || true
		log "$kind: as nobody: $(tr '\n' '|' <"$work/cred-$kind.out"); as root: $(tr '\n' '|' <"$work/cred-$kind.root.out")"
	done
	assert_cmd cmp "$work/cred-missing.out" "$work/cred-dir.out"
	assert_cmd cmp "$work/cred-missing.out" "$work/cred-file.out"
	assert_file_contains "$work/cred-missing.root.out" "No such file or directory"
	assert_file_contains "$work/cred-dir.root.out" "is not a regular file"
	rm -rf "$private"
}
# Issue 27, point 2: `config check MAIN` said OK while a drop-in in MAIN's
# workers.d was broken, where `infervisord --check-config` found the errors.
# Now the drop-ins are read (as the caller) and checked with the main file:
# the same errors as the daemon's own check, on a copy of the installed
# configuration (what a new user edits) with a broken drop-in added.
dropins_are_checked_as_the_daemon_checks_them() {
	assert_cmd systemctl is-active --quiet infervisord
	local dir=$work/dropins rc=0
	rm -rf "$dir"
	mkdir -p "$dir/workers.d"
	cp /etc/infervisor/infervisor.yaml "$dir/"
	cp /etc/infervisor/workers.d/*.yaml "$dir/workers.d/"
	cat >"$dir/workers.d/50-broken.yaml" <<-YAML
		log_level: debug
		workers:
		  - name: one
		    command: [relative/server]
		    memory: {max: 1G}
	YAML
	chmod -R a+rX "$dir"
	as_nobody infervisorctl config check "$dir/infervisor.yaml" >"$dir/ctl.out" 2>"$dir/ctl.err" || rc=$?
	assert_eq 1 "$rc" "config check's exit status"
	assert_fails grep -q "not running" "$dir/ctl.err"
	assert_file_contains "$dir/ctl.out" "$dir/workers.d/50-broken.yaml:1:1: unknown key 'log_level'"
	rc=0
	infervisord -c "$dir/infervisor.yaml" --check-config 2>"$dir/daemon.err" || rc=$?
	assert_eq 1 "$rc" "--check-config's exit status"
	# The same errors, line for line (the daemon's last line is the count).
	head -n -1 "$dir/daemon.err" >"$dir/daemon.errors"
	log "config check: $(tr '\n' '|' <"$dir/ctl.out")"
	assert_cmd diff "$dir/daemon.errors" "$dir/ctl.out"
	rm "$dir/workers.d/50-broken.yaml"
	assert_cmd as_nobody infervisorctl config check "$dir/infervisor.yaml"
	as_nobody infervisorctl config check "$dir/infervisor.yaml" >"$dir/ok.out"
	assert_file_contains "$dir/ok.out" "drop-in(s) from $dir/workers.d: OK"
	rm -rf "$dir"
}
# Issue 27, point 12: a worker whose program is not there is a warning with
# its place, from the daemon's helper (as nobody) and from --check-config
# alike; the configuration stays valid.
a_missing_command_is_a_warning_with_its_place() {
	local dir=$work/missing rc=0
	rm -rf "$dir"
	mkdir -p "$dir/workers.d"
	cat >"$dir/infervisor.yaml" <<-YAML
		workers:
		  - name: llama
		    command: [/opt/llama.cpp/bin/llama-server, --port, "8080"]
		    memory: {max: 1G}
	YAML
	chmod -R a+rX "$dir"
	as_nobody infervisorctl config check "$dir/infervisor.yaml" >"$dir/ctl.out" 2>"$dir/ctl.err" || rc=$?
	log "config check: $(tr '\n' '|' <"$dir/ctl.out") stderr: $(tr '\n' '|' <"$dir/ctl.err")"
	assert_eq 0 "$rc" "config check's exit status"
	assert_file_contains "$dir/ctl.out" "$dir/infervisor.yaml with 0 drop-in(s) from $dir/workers.d: OK"
	assert_file_contains "$dir/ctl.err" "warning: $dir/infervisor.yaml:3:5: worker 'llama': command[0] '/opt/llama.cpp/bin/llama-server' does not exist: starting the worker will fail"
	assert_fails grep -q "not running" "$dir/ctl.err"
	infervisord -c "$dir/infervisor.yaml" --check-config >"$dir/daemon.out" 2>&1 || rc=$?
	assert_eq 0 "$rc" "--check-config's exit status"
	assert_file_contains "$dir/daemon.out" "warning: $dir/infervisor.yaml:3:5: worker 'llama': command[0] '/opt/llama.cpp/bin/llama-server' does not exist"
	rm -rf "$dir"
}
run_scenario hostile-config-checks-by-nobody-leave-the-daemons-memory-as-it-was hostile_checks_leave_the_daemons_memory_as_it_was
run_scenario config-check-looks-at-credential-paths-as-the-caller credential_paths_are_looked_at_as_the_caller
run_scenario config-check-checks-the-dropins-as-the-daemon-does dropins_are_checked_as_the_daemon_checks_them
run_scenario a-missing-command-is-a-warning-with-its-place a_missing_command_is_a_warning_with_its_place
