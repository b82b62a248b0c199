#!/bin/bash
# Issue 29: `suspend: {method: vllm-sleep}` end to end against the example
# torch worker run as vLLM (etc/examples/torch-worker.py --api vllm,
# installed as infervisor-torch-worker; Debian's python3-torch, which
# ./run-tests installs), which answers vLLM's /health, /v1/completions and,
# with VLLM_SERVER_DEV_MODE=1 and --enable-sleep-mode, its dev endpoints
# /sleep?level=N, /wake_up and /is_sleeping as vLLM's api_router does.
#  1. `infervisorctl suspend`: the daemon puts the server to sleep (level 2:
#     its weights, ~70 MiB, and KV cache dropped; the worker says so), the
#     `suspended` entry says ENGINE_SLEEP=ok (GET /is_sleeping answered true
#     before the freeze: frozen, the server cannot be asked), and the
#     worker's memory.current fell by the weights before the reclaim began
#     (MEMORY_BEFORE_SLEEP, read before the sleep, against MEMORY_BEFORE,
#     read after it when the reclaim began). `infervisorctl resume`: thawed, woken (ENGINE_WAKE=ok,
#     the worker rebuilt its weights), /is_sleeping false, and a completion
#     answers the same text as before the sleep (the same weights).
#  2. The same server without VLLM_SERVER_DEV_MODE: /sleep answers 404, the
#     suspension goes on as a plain freeze (ENGINE_SLEEP=failed, the reason
#     naming VLLM_SERVER_DEV_MODE=1), and the resume asks for no wake.
# In the default run (./run-tests installs python3-torch).
# Guest time: about 3-5 min under emulation (two starts of the worker;
# import torch is the most of each).
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

torch_worker=/usr/libexec/infervisor/infervisor-torch-worker
port=18149

# vllm_worker DEV_MODE: the worker as vLLM, weights of ~70 MiB (dim 512,
# 4 layers, vocabulary 4096), no chat of its own.
vllm_worker() {
	cat <<-YAML
		workers:
		  - name: vllm
		    command: [/usr/bin/python3, $torch_worker, --api, vllm, --enable-sleep-mode,
		              --port, "$port", --dim, "512", --layers, "4", --vocab, "4096",
		              --serve-interval-ms, "0", "-c", "1024"]
		    environment: {VLLM_SERVER_DEV_MODE: "$1"}
		    memory: {max: 1G}
		    start_timeout: 10m
		    engine: {kind: vllm, port: $port, timeout: 60s}
		    suspend: {method: vllm-sleep, level: 2}
		    probes:
		      startup: {kind: http, port: $port, path: /health, interval: 2s, timeout: 1s}
		    rules:
		      - {name: runaway-growth, enabled: false}
		      - {name: memory-pressure, enabled: false}
	YAML
}

worker_lines() { journalctl -q --no-pager --cursor="$ivd_cursor" -t infervisor-worker-vllm -o cat; }
worker_said() { worker_lines | grep -qE "$1"; }
# completion PROMPT MAX_TOKENS: the text vLLM's /v1/completions answers.
completion() {
	curl -sS --max-time 600 "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
		-d "$(jq -nc --arg p "$1" --argjson n "$2" '{model: "m", prompt: $p, max_tokens: $n}')" |
		jq -r '.choices[0].text'
}
is_sleeping() { curl -sS --max-time 60 "http://127.0.0.1:$port/is_sleeping" | jq -r .is_sleeping; }
frozen() { grep -qx 'frozen 1' "$(worker_cgroup "$1")/cgroup.events"; }

suspended_asleep_and_woken() {
	require_torch
	install_infervisor
	assert_cmd test -x "$torch_worker"
	vllm_worker 1 | use_workers vllm.yaml
	fresh_daemon
	wait_until 900 has_events vllm ready 1

	local prompt="A supervisor puts this server to sleep:" before
	before=$(completion "$prompt" 12)
	log "before the sleep: '$before'"
	assert_eq false "$(is_sleeping)" "/is_sleeping before"
	assert_cmd infervisorctl suspend vllm
	wait_until 120 has_events vllm suspended 1
	assert_cmd frozen vllm
	log "suspend: $(ivd_journal INFERVISOR_WORKER=vllm INFERVISOR_EVENT=suspended -o cat)"
	assert_eq vllm-sleep "$(event_field vllm suspended SUSPEND_METHOD)" "suspend method"
	assert_eq ok "$(event_field vllm suspended ENGINE_SLEEP)" "the engine slept (/is_sleeping said true)"
	assert_eq 1 "$(event_field vllm suspended FROZEN)" "frozen after the sleep"
	assert_cmd worker_said '^sleeping \(level 2\): KV cache of [0-9]+ KiB dropped, weights of [0-9]+ KiB dropped$'
	# The sleep itself gave most of the weights back, before any reclaim.
	local before_sleep after_sleep
	before_sleep=$(event_field vllm suspended MEMORY_BEFORE_SLEEP)
	after_sleep=$(event_field vllm suspended MEMORY_BEFORE)
	log "memory.current: $before_sleep before the sleep, $after_sleep after it," \
		"$(event_field vllm suspended MEMORY_AFTER) after the reclaim"
	assert_cmd test "$after_sleep" -lt $((before_sleep - (48 << 20)))

	assert_cmd infervisorctl resume vllm
	wait_until 120 has_events vllm resumed 1
	assert_fails frozen vllm
	log "resume: $(ivd_journal INFERVISOR_WORKER=vllm INFERVISOR_EVENT=resumed -o cat)"
	assert_eq ok "$(event_field vllm resumed ENGINE_WAKE)" "the engine woke (/is_sleeping said false)"
	assert_cmd worker_said '^woken up \(from level 2\)$'
	assert_eq false "$(is_sleeping)" "/is_sleeping after the resume"
	assert_eq "$before" "$(completion "$prompt" 12)" "the same answer after the wake (the same weights)"
}
run_scenario vllm-sleep-suspended-asleep-and-woken suspended_asleep_and_woken

without_dev_mode_a_plain_freeze() {
	require_torch
	install_infervisor
	vllm_worker 0 | use_workers vllm.yaml
	fresh_daemon
	wait_until 900 has_events vllm ready 1
	assert_cmd infervisorctl suspend vllm
	wait_until 120 has_events vllm suspended 1
	assert_cmd frozen vllm
	log "suspend: $(ivd_journal INFERVISOR_WORKER=vllm INFERVISOR_EVENT=suspended -o cat)"
	assert_eq failed "$(event_field vllm suspended ENGINE_SLEEP)" "the sleep failed"
	assert_contains "$(event_field vllm suspended ENGINE_SLEEP_ERROR)" "HTTP 404"
	assert_contains "$(event_field vllm suspended ENGINE_SLEEP_ERROR)" "VLLM_SERVER_DEV_MODE=1"
	assert_cmd infervisorctl resume vllm
	wait_until 120 has_events vllm resumed 1
	assert_fails frozen vllm
	assert_eq "" "$(event_field vllm resumed ENGINE_WAKE)" "no wake asked for"
	assert_cmd test -n "$(completion "still serving" 4)"
}
run_scenario vllm-sleep-without-dev-mode-a-plain-freeze without_dev_mode_a_plain_freeze
