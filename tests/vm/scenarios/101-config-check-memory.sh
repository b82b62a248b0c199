#!/bin/bash
# Issue 26, defects 6 and 7: `infervisorctl config check` as nobody.
# 6: three hostile checks in a row (a 939 KB text with 50,000 extra dirs)
# once grew the mlockall'd daemon from 27 MB to 189 MB RSS for good. The
# checks now run in a helper process with its own memory limit: the daemon's
# RSS after them is what it was before (within a few MiB). VmLck is logged,
# not asserted: under mlockall(MCL_FUTURE | MCL_ONFAULT) it counts the
# virtual size of locked mappings (e.g. the 64 MiB malloc arena a check's
# thread reserves once), of which only the touched pages, in RSS, are locked.
# 7: the credential paths of the text are looked at with nobody's rights:
# a path in root's private dir gets the same answer whether it is missing,
# a directory or a file.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

work=/var/tmp/config-check-memory
slack_kib=$((8 * 1024))

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

status_kib() { # PID FIELD: the field of /proc/PID/status in KiB
	awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"
}

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
run_scenario hostile-config-checks-by-nobody-leave-the-daemons-memory-as-it-was hostile_checks_leave_the_daemons_memory_as_it_was
run_scenario config-check-looks-at-credential-paths-as-the-caller credential_paths_are_looked_at_as_the_caller
