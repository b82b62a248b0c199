#!/bin/bash
# Policy rules on a real kernel: a memory-growth rule kills a worker leaking
# ~20 MiB/s under a 1 GiB cap before the kernel's OOM killer would, and parks
# it while its sibling keeps serving; a worker that stops sending heartbeats is
# killed by its watchdog and restarted by its policy, and so is one with no
# watchdog configured that sent heartbeats unasked; in dry-run mode the same
# growth rule only journals what it would do.
#
# The guest has 1 GiB of RAM in all, less than the leaker's cap, so the rule
# must act within seconds: growth_window is 10 s (memory.growth answers once
# the samples span half of it), the rule holds 3 s, so it fires ~8 s into the
# leak, at ~250 MiB. With the default 60 s window it would fire after ~40 s,
# at ~900 MiB: past what the guest has.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

main_config=$ivd_conf/infervisor.yaml
main_config_saved=/run/vmtest-80-policy-main.yaml

# use_main_config DRY_RUN [SAMPLE_INTERVAL [GROWTH_WINDOW [LOG_LEVEL]]]: the
# installed main config with dry_run: DRY_RUN, sample_interval: 1s and
# growth_window: 10s unless given (the original comes back at exit).
use_main_config() {
	if [[ ! -e $main_config_saved ]]; then
		cp "$main_config" "$main_config_saved"
		at_exit cp "$main_config_saved" "$main_config"
	fi
	{
		grep -Ev '^(dry_run|sample_interval|growth_window|log_level):' "$main_config_saved"
		echo "dry_run: $1"
		echo "sample_interval: ${2:-1s}"
		echo "growth_window: ${3:-10s}"
		echo "log_level: ${4:-info}"
	} >"$main_config"
}

# The growth rule; the default worker rules are dropped so that only it can act.
leak_rules() {
	cat <<-YAML
		    rules:
		      - {name: runaway-growth, enabled: false}
		      - {name: near-the-cap, enabled: false}
		      - {name: memory-pressure, enabled: false}
		      - {name: leak, when: "memory.growth > 15%/min for 3s", action: kill, then: park}
	YAML
}

growth_rule_kills_before_the_oom_killer() {
	install_infervisor
	use_main_config false
	{
		cat <<-YAML
			workers:
			  - name: leaker
			    command: [$ivd_example_worker, --leak-mb-per-s, "20"]
			    notify: true
			    memory: {max: 1G}
			    restart: {policy: always, backoff_initial: 1s}
		YAML
		leak_rules
		cat <<-YAML
			  - name: sibling
			    command: [$ivd_example_worker, --serve-interval-ms, "1000"]
			    notify: true
			    memory: {max: 128M}
		YAML
	} | use_workers policy.yaml
	fresh_daemon
	wait_until 300 has_events sibling ready 1
	local sibling_pid
	sibling_pid=$(main_pid sibling)
	wait_until 900 has_events leaker exited 1

	# The rule killed it, as itself, with `then: park`.
	assert_eq 1 "$(event_count leaker policy-action)" "leaker policy actions"
	assert_eq leak "$(event_field leaker policy-action RULE)" "rule"
	assert_eq kill "$(event_field leaker policy-action ACTION)" "action"
	assert_eq park "$(event_field leaker policy-action THEN)" "then"
	assert_eq 0 "$(event_field leaker policy-action DRY_RUN)" "dry run"
	assert_eq "done" "$(event_field leaker policy-action RESULT)" "result"
	log "rule fired: $(ivd_journal INFERVISOR_WORKER=leaker INFERVISOR_EVENT=policy-action -o cat)"
	assert_eq SIGKILL "$(event_field leaker exited EXIT_SIGNAL)" "exit signal"

	# Before the kernel's OOM killer: no OOM kill, and far below memory.max.
	assert_eq 0 "$(event_count leaker oom-killed)" "leaker oom-killed events"
	assert_eq 0 "$(event_field leaker exited OOM_KILLS)" "OOM kills counted at exit"
	assert_eq 0 "$(kernel_oom_kills leaker)" "kernel OOM kills in leaker's memcg"
	local peak
	peak=$(event_field leaker exited MEMORY_PEAK)
	log "leaker memory.peak: $peak bytes"
	assert_cmd test "$peak" -lt $((1024 * 1024 * 1024))

	# Parked: its restart policy (always, after 1 s) is overridden. The sibling
	# serving five more requests is the time a restart would have had.
	wait_until 300 cgroup_gone leaker
	local served
	served=$(served_count sibling)
	wait_until 300 served_more_than sibling $((served + 5))
	assert_eq "started ready policy-action:leak exited parked:leak" "$(event_sequence leaker)" "leaker's events"
	assert_eq leak "$(event_field leaker parked RULE)" "parked by"
	assert_eq "killed by SIGKILL" "$(event_field leaker parked LAST_EXIT)" "parked after"
	assert_eq 0 "$(event_count leaker restarting)" "leaker restarts"
	assert_fails worker_running leaker

	# The sibling was never touched and kept serving.
	assert_eq 1 "$(event_count sibling started)" "sibling starts"
	assert_eq "$sibling_pid" "$(main_pid sibling)" "sibling pid"
	assert_cmd kill -0 "$sibling_pid"
	assert_eq 0 "$(event_count sibling policy-action)" "sibling policy actions"
	assert_eq active "$(systemctl is-active infervisord)" "service state"
}
run_scenario growth-rule-kills-a-leak-before-the-oom-killer-and-parks-it growth_rule_kills_before_the_oom_killer

watchdog_kills_a_silent_worker_and_restarts_it() {
	install_infervisor
	use_main_config false
	use_workers policy.yaml <<-YAML
		workers:
		  - name: stuck
		    command: [$ivd_example_worker, --spin-after-ms, "2000"]
		    notify: true
		    watchdog: 5s
		    cpu_weight: 10
		    memory: {max: 64M}
	YAML
	fresh_daemon
	wait_until 600 has_events stuck started 2
	local first_pid
	first_pid=$(event_field stuck started PID | head -n1)
	assert_contains "$(event_sequence stuck)" "started ready policy-action:watchdog exited restarting started" "stuck's events"
	assert_eq kill "$(event_field stuck policy-action ACTION INFERVISOR_RULE=watchdog | head -n1)" "watchdog action"
	assert_eq 5000 "$(event_field stuck policy-action WATCHDOG_MS INFERVISOR_RULE=watchdog | head -n1)" "watchdog interval"
	assert_eq "$first_pid" "$(event_field stuck exited PID | head -n1)" "pid of the killed run"
	assert_eq SIGKILL "$(event_field stuck exited EXIT_SIGNAL | head -n1)" "exit signal"
	assert_eq 0 "$(event_count stuck oom-killed)" "stuck oom-killed events"
	assert_ne "$first_pid" "$(main_pid stuck)" "pid of the restarted run"
	systemctl stop infervisord # the spinning restarts eat a CPU
}
run_scenario watchdog-kills-a-silent-worker-and-restarts-it watchdog_kills_a_silent_worker_and_restarts_it

# Issue 25: a worker configured as the README shows (a command and a cap; no
# notify, no watchdog), under the shipped main config, that sends WATCHDOG=1
# on its own every 500ms and then spins at 100% CPU is held to its pace: the
# learned watchdog (10s, its minimum) ends the run and the policy restarts it.
learned_watchdog_ends_a_worker_that_stops_its_heartbeats() {
	install_infervisor
	[[ ! -e $main_config_saved ]] || cp "$main_config_saved" "$main_config" # the shipped one
	use_workers policy.yaml <<-YAML
		workers:
		  - name: beater
		    command: [$ivd_example_worker, --heartbeat-ms, "500", --spin-after-ms, "6000"]
		    memory: {max: 64M}
	YAML
	fresh_daemon
	wait_until 600 has_events beater started 2
	assert_contains "$(event_sequence beater)" \
		"started ready watchdog-learned policy-action:learned-watchdog exited restarting started" "beater's events"
	assert_eq 10000 "$(event_field beater watchdog-learned WATCHDOG_MS | head -n1)" "the learned timeout"
	assert_eq SIGKILL "$(event_field beater exited EXIT_SIGNAL | head -n1)" "exit signal"
	systemctl stop infervisord # the spinning restarts eat a CPU
}
run_scenario a-worker-that-sends-heartbeats-unasked-is-held-to-them learned_watchdog_ends_a_worker_that_stops_its_heartbeats

dry_run_journals_but_does_not_kill() {
	install_infervisor
	use_main_config true
	# 400M cap: the rule (dry run) fires at ~250 MiB, the kernel kills at 400M.
	{
		cat <<-YAML
			workers:
			  - name: leaker
			    command: [$ivd_example_worker, --leak-mb-per-s, "20"]
			    notify: true
			    memory: {max: 400M}
			    restart: {policy: never}
		YAML
		leak_rules
	} | use_workers policy.yaml
	fresh_daemon
	wait_until 900 has_events leaker exited 1

	# Fired once, or again should growth pause near memory.max and resume.
	assert_ne 0 "$(event_count leaker policy-action)" "leaker policy actions"
	assert_eq leak "$(event_field leaker policy-action RULE | sort -u)" "rule"
	assert_eq kill "$(event_field leaker policy-action ACTION | sort -u)" "action"
	assert_eq 1 "$(event_field leaker policy-action DRY_RUN | sort -u)" "dry run"
	assert_eq "dry-run: not taken" "$(event_field leaker policy-action RESULT | sort -u)" "result"
	log "rule fired: $(ivd_journal INFERVISOR_WORKER=leaker INFERVISOR_EVENT=policy-action -o cat)"
	# The same run went on leaking after the decision until its memory.max.
	assert_eq "started ready policy-action:leak exited oom-killed" \
		"$(event_sequence leaker | tr ' ' '\n' | uniq | paste -sd ' ')" "leaker's events"
	assert_eq "oom-killed (memory.max reached)" "$(event_field leaker exited EXIT_REASON)" "exit reason"
	assert_eq "$(event_field leaker started PID)" "$(event_field leaker exited PID)" "pid"
	assert_ne 0 "$(kernel_oom_kills leaker)" "kernel OOM kills in leaker's memcg"
}
run_scenario dry-run-journals-the-growth-rule-but-does-not-kill dry_run_journals_but_does_not_kill

# A memory.events change wakes the policy at once: with a 10-minute sampling
# tick, a worker crossing its memory.high (memory.events high counts up) is
# evaluated within seconds, and the daemon's debug log names the file that
# woke it.
memory_events_wake_the_policy() {
	install_infervisor
	use_main_config false 10m 20m debug
	use_workers policy.yaml <<-YAML
		workers:
		  - name: squeezed
		    command: [$ivd_example_worker, --leak-mb-per-s, "5"]
		    notify: true
		    memory: {max: 256M, high: 32M}
		    rules:
		      - {name: runaway-growth, enabled: false}
		      - {name: memory-pressure, enabled: false}
		      - {name: over-high, when: "memory.events.high > 0", action: log}
	YAML
	fresh_daemon
	wait_until 300 has_events squeezed policy-action 1
	assert_eq over-high "$(event_field squeezed policy-action RULE | head -n1)" "rule"
	log "woken by: $(ivd_journal -o cat --grep 'wake-up: squeezed: memory.events' | head -n1)"
	assert_ne 0 "$(ivd_journal -o cat --grep 'wake-up: squeezed: memory.events' | grep -c .)" \
		"memory.events wake-ups"
	local ready action
	ready=$(ivd_journal INFERVISOR_WORKER=squeezed INFERVISOR_EVENT=ready -o export | sed -n 's/^__REALTIME_TIMESTAMP=//p' | head -n1)
	action=$(ivd_journal INFERVISOR_WORKER=squeezed INFERVISOR_EVENT=policy-action -o export | sed -n 's/^__REALTIME_TIMESTAMP=//p' | head -n1)
	log "ready to first policy action: $(((action - ready) / 1000)) ms (tick: 10m)"
	assert_cmd test $((action - ready)) -lt 300000000
}
run_scenario memory-events-wake-the-policy-at-once memory_events_wake_the_policy
