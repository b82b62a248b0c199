#!/bin/bash
# Issue 4 end to end: the real daemon under systemd, driven by the real
# infervisorctl over /run/infervisor/io.infervisor; reading is for anyone,
# changing needs root or the control group.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

ctl_exit() { # EXPECTED_CODE ARGS...: run infervisorctl, compare its exit code
	local expected=$1 rc=0
	shift
	"$@" >/dev/null 2>&1 || rc=$?
	assert_eq "$expected" "$rc" "exit code of: $*"
}

infervisorctl_drives_the_daemon() {
	install_infervisor
	start_two_idle_workers ctl.yaml
	wait_until 120 test -S /run/infervisor/io.infervisor
	local status
	status=$(infervisorctl status)
	assert_contains "$status" "one" "status lists one"
	assert_contains "$status" "two" "status lists two"
	assert_contains "$(infervisorctl status --json)" '"name":' "status --json"
	assert_contains "$(infervisorctl show one)" "64M" "show one has its spec"
	ctl_exit 3 infervisorctl show nosuch
	# Reading is for anyone; changing needs root or the infervisor group.
	ctl_exit 0 setpriv --reuid=65534 --regid=65534 --clear-groups infervisorctl status
	ctl_exit 5 setpriv --reuid=65534 --regid=65534 --clear-groups infervisorctl stop two
	assert_cmd worker_running two
	ctl_exit 0 infervisorctl stop one
	assert_eq 1 "$(event_count one stopped)" "one stopped"
	assert_cmd worker_running two
	ctl_exit 0 infervisorctl start one
	wait_until 300 has_events one ready 2
}
run_scenario infervisorctl-drives-the-daemon-and-denies-the-unprivileged infervisorctl_drives_the_daemon
