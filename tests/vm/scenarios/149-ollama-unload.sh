#!/bin/bash
# Issue 29: the preempt ladder's first step for an Ollama server, end to end
# against the example torch worker run as Ollama
# (etc/examples/torch-worker.py --api ollama, installed as
# infervisor-torch-worker; Debian's python3-torch, which ./run-tests
# installs), which answers Ollama's GET /api/ps and POST /api/generate as
# ollama/ollama's routes.go does and, unloaded, drops its weights (~64 MiB)
# and gives the memory back.
#  1. The worker serves with its model loaded (a client's load request,
#     /api/ps lists it). A host rule with `action: preempt` is added by a
#     reload; it holds at once (host.mem.available < 99%: this scenario
#     tests the ladder, not the thresholds, which the shipped rules' own
#     scenarios do) and its only victim is the Ollama worker: the daemon
#     asks the server to unload (policy-action ACTION=unload), the server
#     unloads and keeps running, models-unloaded says UNLOAD=done with the
#     model's name, and the worker's memory.current fell by most of the
#     weights; /api/ps lists nothing and a completion loads it again.
#  2. The rule's cooldown makes it act again while the host stays "short":
#     the same worker, picked again within 30 minutes of its unload, is not
#     unloaded again: the ladder goes past (suspend or kill, whichever this
#     guest's swap allows) and PREEMPT_STEP says why.
# Guest time: about 2-3 min under emulation (import torch is the most).
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

torch_worker=/usr/libexec/infervisor/infervisor-torch-worker
port=18150
model=torch-worker:latest
main_config=$ivd_conf/infervisor.yaml
main_config_saved=/run/vmtest-149-main.yaml

# use_main_config [HOST_RULES]: the daemon's own settings, and host rules
# when given (YAML lines of the list).
use_main_config() {
	[[ -e $main_config_saved ]] || {
		cp "$main_config" "$main_config_saved"
		at_exit cp "$main_config_saved" "$main_config"
	}
	cat >"$main_config" <<-YAML
		log_level: info
		control_group: infervisor
		sample_interval: 1s
		host_settle: 5s
		defaults:
		  user: infervisor-worker
		  rules: []
	YAML
	if [[ -n ${1:-} ]]; then
		echo "host_rules:" >>"$main_config"
		echo "$1" >>"$main_config"
	fi
}

ollama_worker() {
	cat <<-YAML
		workers:
		  - name: ollama
		    command: [/usr/bin/python3, $torch_worker, --api, ollama, --port, "$port",
		              --dim, "512", --layers, "4", --vocab, "4096", --serve-interval-ms, "0", "-c", "1024"]
		    memory: {max: 1G}
		    start_timeout: 10m
		    engine: {kind: ollama, port: $port, timeout: 60s}
		    probes:
		      startup: {kind: http, port: $port, path: /api/version, interval: 2s, timeout: 1s}
	YAML
}

worker_said() { journalctl -q --no-pager --cursor="$ivd_cursor" -t infervisor-worker-ollama -o cat | grep -qE "$1"; }
loaded_models() { curl -sS --max-time 60 "http://127.0.0.1:$port/api/ps" | jq -r '.models[].name'; }
generate() { # BODY-JSON
	curl -sS --max-time 600 "http://127.0.0.1:$port/api/generate" -H 'Content-Type: application/json' -d "$1"
}
policy_actions() { event_field ollama policy-action ACTION; }
acted_twice() { (($(policy_actions | wc -l) >= 2)); }

# The server's memory and the host's MemAvailable hold still over 2 s (a
# change under 2 MiB each). A server still touching its weights, or anything
# else eating the host's memory, makes the daemon's one-sample forecast say
# the host runs out within the unload's bound, and the ladder rightly skips
# the unload: a slow CI host saw that (growing 12.9 MiB/s when the rule came).
memory_holds_still() {
	local cg before_cg before_avail
	cg=$(worker_cgroup ollama)/memory.current
	before_cg=$(cat "$cg") before_avail=$(mem_kib MemAvailable)
	sleep 2
	(($(cat "$cg") - before_cg < 2 << 20 && before_cg - $(cat "$cg") < 2 << 20)) &&
		((before_avail - $(mem_kib MemAvailable) < 2048))
}

unloaded_first_then_past() {
	require_torch
	install_infervisor
	assert_cmd test -x "$torch_worker"
	use_main_config
	ollama_worker | use_workers ollama.yaml
	fresh_daemon
	wait_until 900 has_events ollama ready 1
	assert_eq "" "$(loaded_models)" "nothing loaded at the start, as Ollama"
	assert_eq load "$(generate "{\"model\": \"$model\"}" | jq -r .done_reason)" "a client's load request"
	assert_eq "$model" "$(loaded_models)" "/api/ps lists the loaded model"
	wait_until 300 memory_holds_still

	use_main_config "  - {name: host-short, when: 'host.mem.available < 99%', action: preempt, cooldown: 20s}"
	systemctl reload infervisord
	wait_until 120 has_events ollama models-unloaded 1
	log "unload: $(ivd_journal INFERVISOR_WORKER=ollama INFERVISOR_EVENT=models-unloaded -o cat)"
	assert_eq unload "$(policy_actions | head -n1)" "the ladder's first step"
	assert_contains "$(event_field ollama policy-action PREEMPT_STEP | head -n1)" "unload: its server unloads its models"
	assert_eq done "$(event_field ollama models-unloaded UNLOAD)" "the model left /api/ps"
	assert_eq "$model" "$(event_field ollama models-unloaded MODELS_UNLOADED)" "the model named"
	assert_eq "rule 'host-short'" "$(event_field ollama models-unloaded TRIGGER)" "who asked"
	assert_cmd worker_said '^model unloaded$'
	local before after
	before=$(event_field ollama models-unloaded MEMORY_BEFORE_UNLOAD)
	after=$(event_field ollama models-unloaded MEMORY_AFTER_UNLOAD)
	log "memory.current: $before before the unload, $after after it"
	assert_cmd test "$after" -lt $((before - (40 << 20)))
	assert_eq "" "$(loaded_models)" "/api/ps lists nothing"
	assert_eq 0 "$(event_count ollama exited)" "the server kept running"

	# Picked again within 30 minutes of its unload: the ladder goes past it.
	wait_until 180 acted_twice
	local second step
	second=$(policy_actions | sed -n 2p)
	step=$(event_field ollama policy-action PREEMPT_STEP | sed -n 2p)
	log "second step: $second ($step)"
	assert_word "suspend kill checkpoint" "$second" "the step after the unload"
	assert_contains "$step" "its models were unloaded"
	assert_contains "$step" "unloading did not help"
	assert_eq 1 "$(event_count ollama models-unloaded)" "not unloaded again"
}
run_scenario ollama-unload-first-then-past-it unloaded_first_then_past
