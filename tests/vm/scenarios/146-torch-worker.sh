#!/bin/bash
# Issue 12: a worker on a real framework. The example torch worker
# (etc/examples/torch-worker.py, installed as infervisor-torch-worker; Debian's
# python3-torch) runs a small transformer whose KV cache grows per request.
# It is loading until its HTTP startup probe passes; `infervisorctl
# checkpoint` has it save its weights, KV cache and counters; a `kill -9`
# later, the restart loads that checkpoint and the conversation goes on from
# its count and context, with the checkpoint's numbers in the journal.
#
# In the default run since issue 29: ./run-tests installs python3-torch on the
# host (the guest shares its root), as it does every package the VM scenarios
# run; the torch worker is the llama-server stand-in of VM 147 too.
# Guest time: about 2-4 min under emulation (import torch is the most of it).
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit dump_state

torch_worker=/usr/libexec/infervisor/infervisor-torch-worker

worker_lines() { journalctl -q --no-pager --cursor="$ivd_cursor" -t infervisor-worker-torch-chat -o cat; }
# served_at_checkpoint: N of the worker's "checkpoint written: served N".
served_at_checkpoint() { worker_lines | sed -n 's/^checkpoint written: served \([0-9]*\),.*/\1/p' | tail -n1; }
served_so_far() { worker_lines | sed -n 's/^served request \([0-9]*\) .*/\1/p' | tail -n1; }
served_at_least() {
	local n
	n=$(served_so_far)
	((${n:-0} >= $1))
}
resumed_line() { worker_lines | grep -F "resumed from $1 (served " | head -n1; }
has_resumed() { [[ -n $(resumed_line "$1") ]]; }
# first_served_after_resume: N of the first "served request N" after the resume.
first_served_after_resume() {
	worker_lines | awk '/^resumed from / { r = 1; next }
		r && /^served request / { print $3; exit }'
}
served_after_resume() { [[ -n $(first_served_after_resume) ]]; }

torch_checkpoint_and_resume() {
	require_torch
	install_infervisor
	assert_cmd test -x "$torch_worker"
	rm -rf /var/lib/infervisor/checkpoints/torch-chat
	use_workers torch.yaml <<-YAML
		workers:
		  - name: torch-chat
		    command: [/usr/bin/python3, $torch_worker, --port, "18146", --dim, "128",
		              --layers, "2", --tokens-per-request, "16", --serve-interval-ms, "500"]
		    memory: {max: 1G}
		    restart: {policy: on-failure, backoff_initial: 1s}
		    start_timeout: 10m
		    checkpoint: {timeout: 5m, keep: 2}
		    probes:
		      startup: {kind: http, port: 18146, path: /health, interval: 2s, timeout: 1s}
	YAML
	fresh_daemon
	wait_until 900 has_events torch-chat ready 1
	assert_contains "$(ivd_journal INFERVISOR_WORKER=torch-chat INFERVISOR_EVENT=ready -o cat)" \
		"startup probe passed: HTTP 200" "loading ended by the HTTP probe"
	wait_until 600 served_at_least 3

	assert_cmd infervisorctl checkpoint torch-chat
	wait_until 600 has_events torch-chat checkpoint-written 1
	local checkpoint bytes served
	checkpoint=$(event_field torch-chat checkpoint-written CHECKPOINT | head -n1)
	bytes=$(event_field torch-chat checkpoint-written CHECKPOINT_BYTES | head -n1)
	served=$(served_at_checkpoint)
	log "checkpoint $checkpoint: $bytes bytes, served $served, $(event_field torch-chat checkpoint-written CHECKPOINT_SECONDS | head -n1) s"
	assert_cmd test "$bytes" -gt 1000000 # the weights and the KV cache, not an empty file
	assert_cmd test "$served" -ge 3
	assert_cmd test -s "$checkpoint/state.pt"
	wait_until 600 served_at_least $((served + 1)) # it kept serving after the checkpoint

	kill -9 "$(main_pid torch-chat)"
	wait_until 300 has_events torch-chat checkpoint-restoring 1
	assert_eq "$checkpoint" "$(event_field torch-chat checkpoint-restoring CHECKPOINT | head -n1)" \
		"the restart was offered that checkpoint"
	wait_until 900 has_resumed "$checkpoint"
	log "$(resumed_line "$checkpoint")"
	assert_contains "$(resumed_line "$checkpoint")" "(served $served requests" "resumed from its count"
	wait_until 900 has_events torch-chat ready 2
	wait_until 600 served_after_resume
	assert_eq $((served + 1)) "$(first_served_after_resume)" "the conversation goes on from the checkpoint"
	wait_until 120 has_events torch-chat checkpoint-restored 1
	log "restored: $(ivd_journal INFERVISOR_WORKER=torch-chat INFERVISOR_EVENT=checkpoint-restored -o cat)"
}
run_scenario torch-worker-checkpoint-and-resume torch_checkpoint_and_resume
