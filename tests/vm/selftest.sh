#!/bin/bash
# Guest payload that proves the VM rig gives the daemon what it needs: a
# systemd-managed cgroup2-only system with the memory controller, delegation,
# a working journal, PSI, OOM kills confined to a worker cgroup, and zram swap.
# run-all runs it first in every boot; on its own:
#   tests/vm/run-vm --build-dir build --results build/vm-results -- tests/vm/selftest.sh
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "${BASH_SOURCE[0]%/*}/lib.sh"

delegate_unit=vmtest-selftest-delegate.service

check_filesystems() {
	assert_eq overlay "$(findmnt -no FSTYPE /)" "fs type of /"
	assert_eq tmpfs "$(findmnt -no FSTYPE /tmp)" "fs type of /tmp"
	touch /etc/vmtest-probe && rm /etc/vmtest-probe
	touch "$VMTEST_RESULTS/probe" && rm "$VMTEST_RESULTS/probe"
	assert_cmd test -r "$VMTEST_SRC_DIR/tests/vm/lib.sh"
	if [[ -n ${VMTEST_BUILD_DIR:-} ]]; then
		assert_cmd test -d "$VMTEST_BUILD_DIR"
	fi
}

check_cgroup2() {
	assert_eq cgroup2 "$(findmnt -no FSTYPE /sys/fs/cgroup)" "fs type of /sys/fs/cgroup"
	assert_word "$(cat /sys/fs/cgroup/cgroup.controllers)" memory "root cgroup.controllers"
	assert_word "$(cat /sys/fs/cgroup/cgroup.subtree_control)" memory "root cgroup.subtree_control"
	# No v1 hierarchy left anywhere (the development hosts are hybrid).
	assert_eq "" "$(findmnt -rn -t cgroup -o TARGET || true)" "cgroup v1 mounts"
}

check_systemd() {
	local state
	assert_eq systemd "$(cat /proc/1/comm)" "PID 1"
	# degraded is fine for a rig that masks units; starting/maintenance is not.
	state=$(systemctl is-system-running || true)
	case $state in
	running) ;;
	degraded) log "degraded; failed units: $(systemctl --failed --no-legend --plain | tr '\n' ' ')" ;;
	*) assert_eq "running or degraded" "$state" "systemctl is-system-running" ;;
	esac
}

journal_has() { # IDENTIFIER TEXT
	journalctl -q -t "$1" -o cat | grep -qxF -- "$2"
}

check_journald() {
	local marker="vmtest marker $$ $RANDOM"
	logger -t vmtest-selftest -- "$marker"
	wait_until 300 journal_has vmtest-selftest "$marker"
}

stop_delegate_unit() {
	systemctl stop "$delegate_unit" 2>/dev/null
	rm -f "/etc/systemd/system/$delegate_unit"
	systemctl daemon-reload
}

delegate_cgroup() {
	echo "/sys/fs/cgroup$(systemctl show -P ControlGroup "$delegate_unit")"
}

# The shape infervisord uses (DESIGN.md): a Delegate=yes service moves itself to
# <its cgroup>/supervisor and enables controllers for worker children.
check_delegation() {
	local cg pid
	cat >"/etc/systemd/system/$delegate_unit" <<-'EOF'
		[Service]
		Type=exec
		ExecStart=/bin/sleep infinity
		Delegate=yes
		OOMPolicy=continue
	EOF
	at_exit stop_delegate_unit
	systemctl daemon-reload
	systemctl start "$delegate_unit"
	cg=$(delegate_cgroup)
	assert_word "$(cat "$cg/cgroup.controllers")" memory "$cg/cgroup.controllers"
	pid=$(systemctl show -P MainPID "$delegate_unit")
	mkdir "$cg/supervisor"
	echo "$pid" >"$cg/supervisor/cgroup.procs"
	echo "+memory +pids +cpu" >"$cg/cgroup.subtree_control"
	mkdir "$cg/worker"
	echo 16M >"$cg/worker/memory.max"
	echo 0 >"$cg/worker/memory.swap.max"
	echo 1 >"$cg/worker/memory.oom.group"
	assert_eq 16777216 "$(cat "$cg/worker/memory.max")" "worker memory.max"
}

# A process over its worker's memory.max is OOM-killed; the service survives.
check_worker_oom() {
	local cg rc=0
	cg=$(delegate_cgroup)
	# tail buffers its one endless "line" from /dev/zero: it grows until killed.
	# timeout is only a hang guard.
	# shellcheck disable=SC2016 # $$ and $1 belong to the inner bash
	# The braces keep bash's "Killed" job notice out of the log.
	{ timeout 900 bash -c 'echo $$ >"$1/cgroup.procs" && exec tail /dev/zero' _ "$cg/worker"; } 2>/dev/null || rc=$?
	assert_eq 137 "$rc" "exit status of the allocating process (128+SIGKILL)"
	assert_file_matches "$cg/worker/memory.events" '^oom_kill [1-9]'
	assert_file_matches "$cg/worker/memory.events" '^oom_group_kill [1-9]'
	assert_eq active "$(systemctl is-active "$delegate_unit")" "delegating service after the OOM kill"
}

check_psi() {
	local cg
	cg=$(delegate_cgroup)
	assert_file_matches /proc/pressure/memory '^some avg10='
	assert_file_matches "$cg/worker/memory.pressure" '^full avg10='
	# A trigger is registered by writing it to an open fd (kernel 6.1: window >= 500 ms).
	exec 3<>"$cg/worker/memory.pressure"
	echo "some 150000 1000000" >&3
	exec 3>&-
}

check_zram_swap() {
	if [[ ${VMTEST_SWAP:-0} == 1 ]]; then
		# run-vm --swap set it up before the payload.
		assert_file_contains /proc/swaps /dev/zram0
		return
	fi
	zram_swap_on 64M
	assert_file_contains /proc/swaps /dev/zram0
	assert_file_matches /proc/meminfo '^SwapTotal: +[1-9]'
	zram_swap_off
}

run_scenario rig-filesystems check_filesystems
run_scenario rig-cgroup2-memory check_cgroup2
run_scenario rig-systemd-pid1 check_systemd
run_scenario rig-journald check_journald
run_scenario rig-delegation check_delegation
run_scenario rig-worker-oom check_worker_oom
run_scenario rig-psi check_psi
run_scenario rig-zram-swap check_zram_swap
