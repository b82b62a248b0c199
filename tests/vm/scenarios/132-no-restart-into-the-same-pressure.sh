#!/bin/bash
# Issue 11, scenario 3: a tiny host where two workers do not fit. With the
# SHIPPED main configuration and only caps, the batch worker's lower priority
# and its readiness (notify) in the worker file, the low-priority batch
# worker, filling an 800 MB model next to a steady 300 MB one on the 1 GiB
# guest, is stopped by the host rule before the kernel's OOM killer acts, and
# its restart waits
# (restart-waiting-for-memory) while the host has no room for it: it is not
# restarted into the same pressure. It was still loading when it was killed,
# so its peak is only how far the load got: it waits for room for its cap
# (1G, so 80% of RAM, the most it is ever made to wait for) plus the 10%
# reserve, which this host has only with nothing else running, if then.
# The batch job says when its load is done (READY=1, `notify: true`): without
# it the daemon takes a load for done once memory holds still for 20 s, and a
# CI guest stalled that long in the kernel mid-load (a 44 s soft lockup
# clearing the job's huge pages under emulation), so the job was judged
# serving at 460M and waited for that much (the family of a load that pauses;
# a loader that signals readiness is never misjudged).
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
		    notify: true
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
	local total_bytes
	assert_eq loading "$(event_field batch policy-action PHASE | head -n1)" "batch's phase at the kill"
	total_bytes=$(($(mem_kib MemTotal) * 1024))
	assert_eq $((total_bytes / 10 * 8)) \
		"$(event_field batch restart-waiting-for-memory NEEDED_BYTES | head -n1)" \
		"what the batch job waits for (its 1G cap, at most 80% of RAM)"
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
	assert_eq "started policy-action:$rule exited restarting restart-waiting-for-memory started" \
		"$(event_sequence batch | cut -d' ' -f1-6)" "batch's events"
	systemctl stop infervisord
}
run_scenario a-low-priority-worker-is-not-restarted-until-there-is-room low_priority_worker_waits_for_room
