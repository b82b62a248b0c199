# shellcheck shell=bash
# Guest-side helpers for the adoption scenarios (150: re-execution in place,
# 151: the daemon's process ends). Source after infervisor.sh.
#   start_serving [with-gone]: two serving workers (one with a rule that
#     parks it on a spike, two with heartbeats), a fresh daemon, both ready;
#     sets pid_one, pid_two, uptime_before_s, before_s.
#   adopted_and_supervised_again: after the daemon was replaced, both are
#     adopted with their pids, serve on, show their uptime, and their rule
#     and heartbeat watch act again.
#   config_change_while_down_is_applied END: a config change made while the
#     daemon is frozen is applied as a reload once END has ended it.

daemon_pid() { systemctl show -P MainPID infervisord; }

# status_field WORKER FIELD: a field of `infervisorctl status --json WORKER`.
status_field() {
	infervisorctl status --json "$1" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["workers"][0][sys.argv[1]])' "$2"
}

process_gone() { [[ ! -e /proc/$1 ]] || grep -q '^[0-9]* (.*) Z' "/proc/$1/stat"; }

# serving_yaml [with-gone]: one bursts 64M on SIGUSR2, which its rule kills
# and parks; two sends heartbeats (watchdog 5s). Both print a "served
# request" line every 500 ms.
serving_yaml() {
	cat <<-YAML
		workers:
		  - name: one
		    command: [$ivd_example_worker, --serve-interval-ms, "500", --burst-mb, "64"]
		    notify: true
		    memory: {max: 128M}
		    rules:
		      - {name: runaway-growth, enabled: false}
		      - {name: memory-pressure, enabled: false}
		      - {name: spike, when: "memory.current > 48M", action: kill, then: park}
		  - name: two
		    command: [$ivd_example_worker, --serve-interval-ms, "500"]
		    notify: true
		    watchdog: 5s
		    memory: {max: 64M}
	YAML
	if [[ ${1:-} == with-gone ]]; then
		printf '  - name: gone\n    command: [%s]\n    notify: true\n    memory: {max: 64M}\n' "$ivd_example_worker"
	fi
}

start_serving() { # [with-gone]
	install_infervisor
	serving_yaml "$@" | use_workers adoption.yaml
	fresh_daemon
	wait_until 300 has_events one ready 1
	wait_until 300 has_events two ready 1
	pid_one=$(main_pid one)
	pid_two=$(main_pid two)
	uptime_before_s=$(($(status_field one uptime_usec) / 1000000))
	before_s=$(date +%s)
}

# The workers of start_serving, after the daemon was replaced: adopted, same
# pids, still serving, shown running with their uptime, watched again.
adopted_and_supervised_again() {
	wait_until 300 has_events one adopted 1
	wait_until 300 has_events two adopted 1
	assert_eq "$pid_one" "$(worker_pids one)" "one's processes"
	assert_eq "$pid_two" "$(worker_pids two)" "two's processes"
	assert_eq "$pid_one" "$(event_field one adopted PID)" "one's adopted pid"
	assert_eq 1 "$(event_count one started)" "one's starts"
	assert_eq 1 "$(event_count two started)" "two's starts"
	assert_eq 0 "$(event_count one exited)" "one's exits"
	assert_eq 0 "$(event_count two exited)" "two's exits"
	local served
	served=$(served_count one)
	wait_until 120 served_more_than one $((served + 2))
	assert_eq running "$(status_field one state)" "one's state"
	assert_eq "$pid_one" "$(status_field one main_pid)" "one's pid as shown"
	# Its uptime goes on from where it was, not from the adoption.
	local uptime_s elapsed_s
	uptime_s=$(($(status_field one uptime_usec) / 1000000))
	elapsed_s=$(($(date +%s) - before_s))
	log "one: up ${uptime_before_s}s, then ${uptime_s}s ${elapsed_s}s later"
	assert_cmd test "$uptime_s" -ge $((uptime_before_s + elapsed_s - 2))
	# A rule acts on an adopted worker: the spike is killed, the worker parked.
	kill -USR2 "$pid_one"
	wait_until 300 has_events one parked 1
	assert_eq spike "$(event_field one policy-action RULE)" "one's rule"
	# Heartbeats are watched again: a frozen worker is killed by its watchdog.
	kill -STOP "$pid_two"
	wait_until 300 has_events two policy-action 1
	assert_eq watchdog "$(event_field two policy-action RULE)" "two's rule"
	wait_until 300 has_events two started 2
}

# freeze_daemon; ...; then end or crash it: the old daemon sees nothing in between.
freeze_daemon() {
	frozen=$(daemon_pid)
	kill -STOP "$frozen"
}

config_change_while_down_is_applied() { # END_FROZEN_DAEMON: how the frozen daemon ends
	local end_frozen_daemon=$1
	start_serving with-gone
	wait_until 300 has_events gone ready 1
	freeze_daemon
	# two changes, three is new, gone is removed; one stays as it was.
	{
		serving_yaml | sed 's/--serve-interval-ms, "500"\]$/--serve-interval-ms, "700"]/'
		printf '  - name: three\n    command: [%s]\n    notify: true\n    memory: {max: 64M}\n' "$ivd_example_worker"
	} | use_workers adoption.yaml
	"$end_frozen_daemon"
	wait_until 300 has_events two ready 2
	wait_until 300 has_events three ready 1
	wait_until 300 has_events gone stopped 1
	assert_eq "$pid_one" "$(worker_pids one)" "one's processes (unchanged: kept)"
	assert_eq "started ready adopted" "$(event_sequence one)" "one's events"
	assert_eq "started ready adopted exited stopped started ready" "$(event_sequence two)" "two's events"
	assert_ne "$pid_two" "$(worker_pids two)" "two's pid (changed: restarted)"
	assert_contains "$(tr '\0' ' ' </proc/"$(worker_pids two)"/cmdline)" "--serve-interval-ms 700"
	wait_until 120 cgroup_gone gone
	assert_eq "started ready adopted exited stopped" "$(event_sequence gone)" "gone's events"
}
