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

# Issue 27, points 1 and 4: `start` of a worker whose command does not exist
# printed nothing and exited 0; `restart` returned while the new run still
# loaded. Now each answers with what the start came to.
starts_say_what_they_came_to() {
	install_infervisor
	use_workers ctl-starts.yaml <<-YAML
		workers:
		  - name: loader
		    command: [$ivd_example_worker, --load-ms, "3000"]
		    notify: true
		    memory: {max: 64M}
		  - name: broken
		    command: [/usr/bin/nonexistent-server]
		    memory: {max: 64M}
	YAML
	fresh_daemon
	wait_until 300 has_events loader ready 1
	wait_until 300 has_events broken failed 1 # its start limit
	local rc=0 err=/run/ctl-start.err
	infervisorctl start broken 2>"$err" || rc=$?
	log "start broken: exit $rc: $(cat "$err")"
	assert_eq 1 "$rc" "exit code of start broken"
	assert_file_contains "$err" "infervisorctl: broken: could not start: "
	assert_file_contains "$err" "execve: No such file or directory"
	# When restart returns the new run is ready: running, its READY=1 seen.
	assert_cmd infervisorctl restart loader
	assert_cmd infervisorctl status loader
	assert_eq 2 "$(infervisorctl events -n 1000 | grep -c ' loader ready')" "loader's ready events when restart returned"
	assert_cmd infervisorctl stop loader
	assert_cmd infervisorctl start loader
	assert_cmd infervisorctl status loader
}
run_scenario start-and-restart-say-what-they-came-to starts_say_what_they_came_to
