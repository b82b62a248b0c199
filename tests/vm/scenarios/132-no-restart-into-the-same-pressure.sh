#!/bin/bash
# Issue 11, scenario 3: a tiny host where two workers do not fit. With the
# SHIPPED main configuration and only caps (and the batch worker's lower
# priority) in the worker file, the low-priority batch worker, filling an
# 800 MB model next to a steady 300 MB one on the 1 GiB guest, is stopped by
# the host rule before the kernel's OOM killer acts, and its restart waits
# (restart-waiting-for-memory) while the host has no room for it: it is not
# restarted into the same pressure. It was still loading when it was killed,
# so its peak is only how far the load got: it waits for room for its cap
# (1G, so 80% of RAM, the most it is ever made to wait for) plus the 10%
# reserve, which this host has only with nothing else running, if then.
# Without a readiness signal the daemon takes a load for done once memory
# holds still for 20 s, and a CI guest stalled that long in the kernel
# mid-load (a 44 s soft lockup clearing the job's huge pages under
# emulation): then the job is serving when killed (the kill's PHASE says
# so) and waits for room for its peak, as a serving run does, and that too
# this host does not have while the steady worker runs. (A loader that
# declares its readiness, notify, is never misjudged so; the example worker
# here does not, and a notify batch job would be killed again loading its
# 800 MB alone on this host, since `start` waits for READY.)
# Once the steady worker is stopped, `infervisorctl start` starts it at once
# (if the room had not already). Checked by order, never by time. Guest
# time ~60 s.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

state_of() { infervisorctl status | awk -v w="$1" '$1 == w { print $2 }'; }

low_priority_worker_waits_for_room() {
	install_infervisor
	use_workers tiny.yaml <<-YAML
		workers:
		  - name: steady
		    command: [$ivd_example_worker, --model-mb, "300", --serve-interval-ms, "500"]
		    memory: {max: 400M}
		  - name: batch
		    command: [$ivd_example_worker, --model-mb, "800", --serve-interval-ms, "500"]
		    memory: {max: 1G}
		    priority: -1
	YAML
	local warning
	warning=$(infervisord --check-config 2>&1 || true)
	log "check-config: $warning"
	assert_contains "$warning" "more than this host's RAM + swap" "overcommit warning"
	fresh_daemon
	wait_until 300 has_events steady ready 1
	wait_until 600 has_events batch restart-waiting-for-memory 1

	# A host rule that judges the host out of room (host-memory-low) or
	# running out (host-memory-running-out), whichever the load's pace meets
	# first.
	local rule
	rule=$(event_field batch policy-action RULE | head -n1)
	assert_word "host-memory-low host-memory-running-out" "$rule" "the rule"
	assert_eq 0 "$(event_count steady policy-action)" "steady's policy actions"
	assert_eq 0 "$(kernel_oom_kills)" "kernel OOM kills"
	assert_eq 1 "$(event_count batch started)" "batch's starts while the host has no room"
	assert_eq backoff "$(state_of batch)" "batch's state"
	local total_bytes most phase peak
	total_bytes=$(($(mem_kib MemTotal) * 1024))
	most=$((total_bytes / 10 * 8))
	phase=$(event_field batch policy-action PHASE | head -n1)
	log "batch's phase at the kill: $phase ($(event_field batch policy-action SERVING_REASON | head -n1))"
	if [[ $phase == loading ]]; then
		assert_eq "$most" "$(event_field batch restart-waiting-for-memory NEEDED_BYTES | head -n1)" \
			"what the batch job waits for (its 1G cap, at most 80% of RAM)"
	else
		peak=$(event_field batch exited MEMORY_PEAK | head -n1)
		assert_eq "$((peak < most ? peak : most))" \
			"$(event_field batch restart-waiting-for-memory NEEDED_BYTES | head -n1)" \
			"what the batch job, judged serving, waits for (its peak, at most 80% of RAM)"
	fi
	log "waiting: $(ivd_journal INFERVISOR_WORKER=batch INFERVISOR_EVENT=restart-waiting-for-memory -o cat)"
	# Still no room a few requests of steady later: still waiting.
	local served
	served=$(served_count steady)
	wait_until 300 served_more_than steady $((served + 6))
	assert_eq 1 "$(event_count batch started)" "batch's starts while steady runs"

	# The steady worker goes; the operator starts the batch job (a no-op
	# if the room let it restart already).
	infervisorctl stop steady
	infervisorctl start batch
	wait_until 300 has_events batch started 2
	assert_eq "started ready policy-action:$rule exited restarting restart-waiting-for-memory started" \
		"$(event_sequence batch | cut -d' ' -f1-7)" "batch's events"
	systemctl stop infervisord
}
run_scenario a-low-priority-worker-is-not-restarted-until-there-is-room low_priority_worker_waits_for_room
