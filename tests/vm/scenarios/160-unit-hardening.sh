#!/bin/bash
# Issue 16: the unit's hardening (NoNewPrivileges, UMask=0077,
# ProtectKernelTunables with /sys/fs/cgroup writable, RestrictSUIDSGID, ...)
# leaves what others need: a worker as its own user starts with umask 0022 in
# its cgroup (0755, its memory.max readable by it), the work-dir parents the
# daemon creates are 0755, the control socket 0666 answers an unprivileged
# caller, and the daemon's /proc/sys is read-only while its cgroup tree is
# not. Guest time: ~30 s.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state
at_exit rm -rf /srv/infervisor-hardening

status_field() { # PID FIELD: a field of /proc/PID/status
	sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status"
}

mode_of() { stat -c %a "$1"; }

as_user() { # USER CMD...: CMD with USER's uid and primary group, no supplementary groups
	local user=$1
	shift
	setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups "$@"
}

hardened_unit_still_works() {
	install_infervisor
	use_workers hardening.yaml <<-YAML
		workers:
		  - name: plain
		    command: [$ivd_example_worker, --serve-interval-ms, "1000"]
		    notify: true
		    memory: {max: 64M}
		    extra_dirs: [{path: /srv/infervisor-hardening/deep/cache}]
	YAML
	fresh_daemon
	wait_until 300 has_events plain ready 1

	local daemon worker cg
	daemon=$(systemctl show -P MainPID infervisord)
	worker=$(main_pid plain)
	cg=$(worker_cgroup plain)
	assert_eq 1 "$(status_field "$daemon" NoNewPrivs)" "the daemon's NoNewPrivs"
	assert_eq 0077 "$(status_field "$daemon" Umask)" "the daemon's umask"
	assert_eq 0022 "$(status_field "$worker" Umask)" "the worker's umask"
	assert_eq 1 "$(status_field "$worker" NoNewPrivs)" "the worker's NoNewPrivs"
	# Its own dynamic user (user: dynamic, the default), resolved through the daemon's userdb.
	assert_eq "$(id -u infervisor-w-plain)" "$(stat -c %u "/proc/$worker")" "the worker's user"

	# Modes the daemon sets itself, whatever its umask.
	assert_eq 755 "$(mode_of "$cg")" "mode of the worker's cgroup"
	assert_eq 755 "$(mode_of /srv/infervisor-hardening)" "mode of a work-dir parent the daemon created"
	assert_eq 755 "$(mode_of /srv/infervisor-hardening/deep)" "mode of a work-dir parent the daemon created"
	assert_eq 666 "$(mode_of /run/infervisor/io.infervisor)" "mode of the control socket"
	assert_eq $((64 << 20)) "$(as_user infervisor-w-plain cat "$cg/memory.max")" "memory.max read by the worker's user"
	assert_contains "$(as_user nobody infervisorctl status)" plain "infervisorctl status as nobody"

	# In the daemon's mount namespace: kernel tunables read-only, cgroupfs writable.
	assert_word "$(nsenter -t "$daemon" -m findmnt -no OPTIONS /proc/sys | tr , ' ')" ro "/proc/sys options"
	assert_word "$(nsenter -t "$daemon" -m findmnt -no OPTIONS /sys/fs/cgroup | tr , ' ')" rw "/sys/fs/cgroup options"

	local exposure
	exposure=$(systemd-analyze security --offline=yes /lib/systemd/system/infervisord.service 2>&1 | tail -n1)
	log "systemd-analyze security: $exposure"
	assert_contains "$exposure" "MEDIUM" "exposure level"
}
run_scenario hardened-unit-still-works hardened_unit_still_works
