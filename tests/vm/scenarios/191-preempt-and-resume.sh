#!/bin/bash
# Issue 13, scenario 1: two workers overcommit the guest (1 GiB, zram swap).
# `low` (priority 0) is a batch job: 300 requests, each a pass over its whole
# model, then it exits 0. `high` (priority 10) serves; on SIGUSR2 it grows by
# a burst it also reads on every request (a long context), on SIGHUP it
# shrinks back. Sizes are fractions of MemAvailable measured on the idle
# guest:
#   low 45%, high 30% + a burst of 45%: 120% with the burst, 75% without.
# The host rule (swap-in, as the shipped one) suspends low, the lowest
# priority, instead of killing it: frozen, its memory pushed to swap. high
# keeps serving. Only once high has shrunk does resume_when (MemAvailable
# above low's size plus a margin, for 5s) hold: low is thawed, pages its
# model back in and finishes its 300 requests — every one of them served
# once, by the same process, exit 0. Checked by order and outcome, never by
# time. Guest time: about 150-250 s under emulation (the work and the
# burst's allocation dominate).
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"

main_config=$ivd_conf/infervisor.yaml
main_config_saved=/run/vmtest-191-preempt-main.yaml
# Enough work that low is still at it when high's burst (slow to allocate
# under emulation on a loaded host: 30-60 s) makes the host thrash.
requests=300

# use_preempt_config RESUME_MIB [ACTION]: a host rule that suspends (or
# checkpoints and parks), resume_when above RESUME_MIB, no worker rules.
# Workers may swap only when suspended (the packaged default swap_max: 0
# stays).
use_preempt_config() {
	local action=${2:-suspend}
	[[ -e $main_config_saved ]] || {
		cp "$main_config" "$main_config_saved"
		at_exit cp "$main_config_saved" "$main_config"
	}
	cat >"$main_config" <<-YAML
		log_level: info
		control_group: infervisor
		sample_interval: 1s
		# No second victim while the first is away (and its resume pages back in).
		host_settle: 10m
		resume_when: host.mem.available > ${1}M for 5s
		defaults:
		  user: infervisor-worker
		  memory: {swap_max: max}
		  restart: {policy: on-failure, backoff_initial: 1s}
		  rules: []
		host_rules:
		  - name: host-thrash
		    when: host.swap.in > 50 for 5s
		    action: $action
	YAML
	[[ $action != checkpoint ]] || echo "    then: park" >>"$main_config"
}

# served_now WORKER: K of its last STATUS=served K requests, as the daemon has
# it (the journal may still be catching up with its output lines).
# (status exits 3 for a worker that is not running, a suspended one too.)
served_now() {
	local json
	json=$(infervisorctl status --json "$1") || [[ $? == 3 ]]
	python3 -c 'import json, sys; print(json.load(sys.stdin)["workers"][0]["status_text"])' \
		<<<"$json" | sed -n 's/^served \([0-9]*\) requests$/\1/p'
}
all_lines_in() { (($(served_count "$1") >= $2)); }

mem_available_mib() { awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo; }

# served_numbers WORKER: the N of every "served request N" line, in order.
served_numbers() {
	journalctl -q --no-pager --cursor="$ivd_cursor" -t "infervisor-worker-$1" -o cat |
		sed -n 's/.*served request \([0-9]*\) .*/\1/p'
}

# start_low_and_high ACTION [with-reserve]: the guest under the preemption
# config with host rule ACTION (suspend, or checkpoint then park); low and
# high sized from the idle guest's MemAvailable (low with a memory.reserve of
# its size if asked), both ready and low at work. Sets low_mib, resume_mib,
# high_pid and low_pid for the checks.
start_low_and_high() {
	local action=$1 reserve=""
	install_infervisor
	if ! swapon --show=NAME --noheadings | grep -q .; then
		zram_swap_on 1G
		at_exit zram_swap_off
	fi
	at_exit systemctl stop infervisord
	at_exit dump_state
	use_preempt_config 100000 "$action" # measure the idle host first
	echo "workers: []" | use_workers preempt.yaml
	fresh_daemon
	local avail high_mib burst_mib
	avail=$(mem_available_mib)
	low_mib=$((avail * 45 / 100))
	high_mib=$((avail * 30 / 100))
	burst_mib=$((avail * 45 / 100))
	resume_mib=$((low_mib + avail * 15 / 100))
	[[ ${2:-} != with-reserve ]] || reserve=", reserve: ${low_mib}M"
	log "MemAvailable idle: $avail MiB; low $low_mib, high $high_mib + $burst_mib MiB; resume above $resume_mib MiB"
	use_preempt_config "$resume_mib" "$action"
	use_workers preempt.yaml <<-YAML
		workers:
		  - name: low
		    command: [$ivd_example_worker, --model-mb, "$low_mib", --touch-model,
		              --serve-interval-ms, "250", --exit-after-requests, "$requests"]
		    notify: true
		    priority: 0
		    memory: {max: 2G, swap_max: 0${reserve}}
		    checkpoint: {timeout: 1m}
		  - name: high
		    command: [$ivd_example_worker, --model-mb, "$high_mib", --touch-model,
		              --burst-mb, "$burst_mib", --serve-interval-ms, "250"]
		    notify: true
		    priority: 10
		    memory: {max: 2G}
	YAML
	fresh_daemon
	wait_until 600 has_events low ready 1
	wait_until 600 has_events high ready 1
	wait_until 300 served_more_than low 10
	log "both ready, low has served 10; high bursts"
	high_pid=$(main_pid high)
	low_pid=$(main_pid low)
}

low_suspended_and_resumed() {
	start_low_and_high suspend

	# high grows: the host thrashes until the rule suspends low.
	kill -USR2 "$high_pid"
	wait_until 900 has_events low suspended 1
	log "suspend: $(ivd_journal INFERVISOR_WORKER=low INFERVISOR_EVENT=suspended -o cat)"
	assert_eq host-thrash "$(event_field low policy-action RULE | head -n1)" "rule"
	assert_eq suspend "$(event_field low policy-action ACTION | head -n1)" "action"
	assert_eq 0 "$(event_field low policy-action VICTIM_PRIORITY | head -n1)" "victim priority"
	assert_eq "rule 'host-thrash'" "$(event_field low suspended TRIGGER)" "suspended by"
	assert_cmd test "$(event_field low suspended BYTES_RECLAIMED)" -gt 0
	local served_at_suspend
	served_at_suspend=$(served_now low)
	assert_cmd test "$served_at_suspend" -lt "$requests"

	# high keeps serving, with low away and its memory in swap; no resume
	# while high is big, though resume_when's `for` (5s) passes many times.
	local high_served
	high_served=$(served_count high)
	wait_until 600 served_more_than high $((high_served + 20))
	log "high served 20 more with low suspended; high shrinks"
	assert_eq 0 "$(event_count low resumed)" "resumes while high is big"
	assert_eq "$served_at_suspend" "$(served_now low)" "low's requests while suspended"

	# high shrinks: now there is room, and low comes back and finishes.
	kill -HUP "$high_pid"
	wait_until 600 has_events low resumed 1
	log "resume: $(ivd_journal INFERVISOR_WORKER=low INFERVISOR_EVENT=policy-action INFERVISOR_RULE=resume_when -o cat)"
	# (No resume before the SIGHUP, checked above while high served 20
	# requests; the room it was resumed into:)
	assert_cmd test "$(event_field low policy-action HOST_MEM_AVAILABLE_BYTES INFERVISOR_RULE=resume_when)" \
		-gt $((resume_mib << 20))
	wait_until 900 has_events low exited 1

	# Nothing lost: one process served 1..300, each once, and exited 0.
	wait_until 120 all_lines_in low "$requests"
	assert_eq 0 "$(event_field low exited EXIT_CODE)" "low's exit code"
	assert_eq 1 "$(event_count low started)" "low's starts"
	assert_eq "$(seq 1 "$requests" | tr '\n' ' ')" "$(served_numbers low | tr '\n' ' ')" "low's requests"
	assert_eq "started ready policy-action:host-thrash suspended policy-action:resume_when resumed exited" \
		"$(event_sequence low)" "low's events"
	# high: never acted on, the same process, still serving.
	assert_eq 0 "$(event_count high policy-action)" "high's policy actions"
	assert_eq 0 "$(event_count high suspended)" "high's suspensions"
	assert_eq "$high_pid" "$(main_pid high)" "high's pid"
	assert_cmd kill -0 "$high_pid"
	assert_eq 0 "$(kernel_oom_kills)" "kernel OOM kills"
	log "low's pid $low_pid; high's memory stall (full avg10/avg60): $(sed -n 's/^full //p' "$(worker_cgroup high)/memory.pressure")"
}

run_scenario host-pressure-suspends-low-and-resume-when-brings-it-back low_suspended_and_resumed

# The same overcommit, with a checkpoint instead of a suspend: low is
# stopped after writing its count, parked, and started again from the
# checkpoint when its reserve fits.
low_checkpointed_and_restarted() {
	rm -rf /var/lib/infervisor/checkpoints/low
	start_low_and_high checkpoint with-reserve

	kill -USR2 "$high_pid"
	wait_until 900 has_events low parked 1
	assert_eq checkpoint "$(event_field low policy-action ACTION | head -n1)" "action"
	assert_eq "rule 'host-thrash'" "$(event_field low checkpoint-written TRIGGER | head -n1)" "checkpointed by"
	local checkpoint at_checkpoint
	checkpoint=$(event_field low checkpoint-written CHECKPOINT | head -n1)
	at_checkpoint=$(sed -n 's/^served=//p' "$checkpoint/checkpoint")
	log "checkpoint $checkpoint at request $at_checkpoint: $(ivd_journal INFERVISOR_WORKER=low INFERVISOR_EVENT=checkpoint-written -o cat)"
	assert_cmd test "$at_checkpoint" -gt 0
	assert_cmd test "$at_checkpoint" -lt "$requests"
	# Shown as checkpointed, with the rule and the checkpoint (exit 3: not running).
	local status json rc=0
	status=$(infervisorctl status low) || rc=$?
	assert_eq 3 "$rc" "status exit code of a checkpointed worker"
	assert_contains "$status" "checkpointed (rule 'host-thrash'; checkpoint of "
	json=$(infervisorctl status --json low) || [[ $? == 3 ]]
	assert_eq "checkpointed $checkpoint" "$(python3 -c 'import json, sys
w = json.load(sys.stdin)["workers"][0]
print(w["state"], w["checkpoint"]["path"])' <<<"$json")" "state and checkpoint in status --json"

	# Parked while high is big: not started again.
	local high_served
	high_served=$(served_count high)
	wait_until 600 served_more_than high $((high_served + 20))
	assert_eq 1 "$(event_count low started)" "low's starts while high is big"

	kill -HUP "$high_pid"
	wait_until 600 has_events low started 2
	assert_eq "$checkpoint" "$(event_field low checkpoint-restoring CHECKPOINT | head -n1)" "restored from"
	wait_until 900 has_events low exited 2
	wait_until 120 all_lines_in low "$requests"
	assert_eq 0 "$(event_field low exited EXIT_CODE | tail -n1)" "low's exit code at the end"

	# Every request served; the second run went on from the checkpoint.
	local numbers lines first_run_last second_run_first
	numbers=$(served_numbers low)
	assert_eq "$(seq 1 "$requests" | tr '\n' ' ')" "$(sort -n -u <<<"$numbers" | tr '\n' ' ')" "low's requests, none missing"
	lines=$(journalctl -q --no-pager --cursor="$ivd_cursor" -t infervisor-worker-low -o cat)
	assert_contains "$lines" "resumed from $checkpoint (served $at_checkpoint requests before)" "the restart's resume"
	first_run_last=$(sed -n '/: resumed from /q; s/.*served request \([0-9]*\) .*/\1/p' <<<"$lines" | tail -n1)
	second_run_first=$(sed -n '/: resumed from /,$ s/.*served request \([0-9]*\) .*/\1/p' <<<"$lines" | head -n1)
	assert_eq $((at_checkpoint + 1)) "$second_run_first" "the second run's first request"
	log "work redone after the checkpoint: $((first_run_last - at_checkpoint)) requests"
	assert_eq 0 "$(event_count high policy-action)" "high's policy actions"
	assert_eq "$high_pid" "$(main_pid high)" "high's pid"
	assert_eq 0 "$(kernel_oom_kills)" "kernel OOM kills"
}

run_scenario host-pressure-checkpoints-low-and-resume-when-restarts-it low_checkpointed_and_restarted
