#!/bin/bash
# Issue 29: `checkpoint: {method: llama-server}` and the engine metrics in
# rules, end to end against the example torch worker run as llama-server
# (etc/examples/torch-worker.py, installed as infervisor-torch-worker: a real
# transformer on Debian's python3-torch that answers llama-server's slot
# API, /health, /props and llamacpp:* metrics as tools/server/server.cpp
# does, for its own KV cache; ./run-tests installs python3-torch).
#  1. Two conversations, one per slot; a rule on the engine's metrics
#     (`action: checkpoint, then: restart`) saves both slots straight into
#     the staging dir (--slot-save-path), the checkpoint is published (slot
#     files root's), the restart restores both slots once /health is 200,
#     and the next completion of each conversation takes every restored
#     token from the cache (timings.cache_n) and evaluates only the new ones
#     (timings.prompt_n); the restore links are gone from staging.
#  2. The model file changes (size, mtime) and a reload changes the worker:
#     the daemon's save before the stop is refused (the server's file is not
#     the one its run loaded), the restart refuses the checkpoint
#     (checkpoint-failed REASON=engine-mismatch) and the worker serves clean
#     (nothing from the cache).
#  3. A stuck server (/health 200, tokens flat, a request in flight and more
#     waiting) is killed by `engine.rate(llamacpp:tokens_predicted_total) == 0
#     and engine.llamacpp:requests_processing > 0 for 15s`, and parked.
# In the default run (./run-tests installs python3-torch); parts 1 and 2 are
# one scenario (part 2 needs part 1's daemon and checkpoint).
# Journal names assumed (the daemon's existing ones, and issue 29's design):
# policy-action (RULE, ACTION), checkpoint-written (CHECKPOINT, SLOTS_SAVED,
# TOKENS_SAVED), checkpoint-restoring (CHECKPOINT), checkpoint-restored
# (SLOTS_RESTORED, TOKENS_RESTORED), checkpoint-failed (REASON=engine-mismatch),
# exited (EXIT_SIGNAL), parked (RULE); slot files named slot-ID.bin in the
# checkpoint.
# Guest time: about 5-8 min under emulation (four starts of the worker;
# import torch is the most of each).
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

torch_worker=/usr/libexec/infervisor/infervisor-torch-worker
store=/var/lib/infervisor/checkpoints
main_config=$ivd_conf/infervisor.yaml
main_config_saved=/run/vmtest-147-llama-main.yaml
model_dir=/var/lib/vmtest-147
model=$model_dir/tiny.gguf
port=18147
stuck_port=18148

# Samples every second, so that the rules act within seconds.
use_fast_sampling() {
	if [[ ! -e $main_config_saved ]]; then
		cp "$main_config" "$main_config_saved"
		at_exit cp "$main_config_saved" "$main_config"
	fi
	{
		grep -Ev '^(sample_interval):' "$main_config_saved"
		echo "sample_interval: 1s"
	} >"$main_config"
}

# The worker as llama-server: tiny model, two slots of 256 tokens, slot
# files into its checkpoint staging dir, metrics.
llama_command() {
	echo "[/usr/bin/python3, $torch_worker, --port, \"$1\", --dim, \"16\", --layers, \"2\"," \
		"--vocab, \"256\", --serve-interval-ms, \"0\", \"-m\", $model, --parallel, \"2\"," \
		"\"-c\", \"512\", --metrics$2]"
}

no_default_rules() {
	cat <<-YAML
		    rules:
		      - {name: runaway-growth, enabled: false}
		      - {name: memory-pressure, enabled: false}
	YAML
}

# completion PORT SLOT PROMPT N_PREDICT: llama-server's answer (JSON).
completion() {
	curl -sS --max-time 600 "http://127.0.0.1:$1/completion" \
		-d "$(jq -nc --arg p "$3" --argjson s "$2" --argjson n "$4" \
			'{prompt: $p, id_slot: $s, n_predict: $n, cache_prompt: true}')"
}

# metric PORT NAME: the value of a llamacpp:* series.
metric() { curl -sS --max-time 60 "http://127.0.0.1:$1/metrics" | sed -n "s/^llamacpp:$2 //p"; }
metric_is() { [[ $(metric "$1" "$2") == "$3" ]]; }

# Conversations of part 1, for part 2.
conversation_file=/run/vmtest-147-conversation

slots_saved_and_restored_context_continues() {
	require_torch
	install_infervisor
	assert_cmd test -x "$torch_worker"
	use_fast_sampling
	rm -rf "${store:?}/llama" "$model_dir"
	mkdir -p "$model_dir"
	printf 'a tiny model: its bytes seed the weights\n' >"$model"
	chmod 0755 "$model_dir"
	chmod 0644 "$model"
	{
		cat <<-YAML
			workers:
			  - name: llama
			    command: $(llama_command $port ", --slot-save-path, $store/llama/staging")
			    memory: {max: 1G}
			    restart: {policy: on-failure, backoff_initial: 1s}
			    start_timeout: 10m
			    engine: {kind: llama-server, port: $port, metrics: /metrics}
			    checkpoint: {method: llama-server, timeout: 5m, keep: 2}
			    probes:
			      startup: {kind: http, port: $port, path: /health, interval: 2s, timeout: 1s}
		YAML
		no_default_rules
		# 16 + 16 tokens predicted: both conversations are in their slots.
		cat <<-YAML
			      - {name: save-and-restart, when: "engine.llamacpp:tokens_predicted_total >= 32", action: checkpoint, then: restart}
		YAML
	} | use_workers llama.yaml
	fresh_daemon
	wait_until 900 has_events llama ready 1

	local a b first0 first1
	a="You supervise inference servers. First turn:"
	b="Another conversation, in the second slot:"
	first0=$(completion $port 0 "$a" 16)
	first1=$(completion $port 1 "$b" 16)
	log "slot 0: $(jq -c '{content, tokens_cached, timings: {cache_n: .timings.cache_n, prompt_n: .timings.prompt_n}}' <<<"$first0")"
	log "slot 1: $(jq -c '{content, tokens_cached}' <<<"$first1")"
	assert_eq 0 "$(jq .id_slot <<<"$first0")" "slot of the first conversation"
	assert_eq 1 "$(jq .id_slot <<<"$first1")" "slot of the second conversation"
	local cached0 cached1 next0 next1
	cached0=$(jq .tokens_cached <<<"$first0")
	cached1=$(jq .tokens_cached <<<"$first1")
	next0="$a$(jq -r .content <<<"$first0") Second turn."
	next1="$b$(jq -r .content <<<"$first1") And on."
	printf '%s\n' "$next0" >"$conversation_file"

	# The rule saves both slots and restarts the worker, which restores them.
	wait_until 600 has_events llama checkpoint-written 1
	wait_until 900 has_events llama checkpoint-restored 1
	local checkpoint
	checkpoint=$(event_field llama checkpoint-written CHECKPOINT | head -n1)
	log "checkpoint: $(ivd_journal INFERVISOR_WORKER=llama INFERVISOR_EVENT=checkpoint-written -o cat | head -n1)"
	log "restored: $(ivd_journal INFERVISOR_WORKER=llama INFERVISOR_EVENT=checkpoint-restored -o cat | head -n1)"
	assert_eq save-and-restart "$(event_field llama policy-action RULE | head -n1)" "rule"
	assert_eq checkpoint "$(event_field llama policy-action ACTION | head -n1)" "action"
	assert_eq "$checkpoint" "$(event_field llama checkpoint-restoring CHECKPOINT | head -n1)" "restored from"
	assert_eq 2 "$(event_field llama checkpoint-written SLOTS_SAVED | head -n1)" "slots saved"
	assert_eq $((cached0 + cached1)) "$(event_field llama checkpoint-written TOKENS_SAVED | head -n1)" "tokens saved"
	assert_eq 2 "$(event_field llama checkpoint-restored SLOTS_RESTORED | head -n1)" "slots restored"
	assert_eq $((cached0 + cached1)) "$(event_field llama checkpoint-restored TOKENS_RESTORED | head -n1)" \
		"tokens restored"
	local slot
	for slot in 0 1; do
		assert_cmd test -s "$checkpoint/slot-$slot.bin"
		assert_eq 0:0 "$(stat -c %u:%g "$checkpoint/slot-$slot.bin")" "owner of slot $slot's file"
	done
	assert_eq "" "$(find "$store/llama/staging" -name 'slot-*.bin')" "no restore link left in staging"

	# Each conversation goes on: what was restored is taken from the cache.
	local again0 again1
	again0=$(completion $port 0 "$next0" 4)
	again1=$(completion $port 1 "$next1" 4)
	log "slot 0 after the restart: $(jq -c '{content, tokens_cached, timings: {cache_n: .timings.cache_n, prompt_n: .timings.prompt_n}}' <<<"$again0")"
	assert_eq "$cached0" "$(jq .timings.cache_n <<<"$again0")" "slot 0: tokens from the restored cache"
	assert_eq $((${#next0} + 1 - cached0)) "$(jq .timings.prompt_n <<<"$again0")" "slot 0: tokens evaluated"
	assert_eq "$cached1" "$(jq .timings.cache_n <<<"$again1")" "slot 1: tokens from the restored cache"
	assert_eq $((${#next1} + 1 - cached1)) "$(jq .timings.prompt_n <<<"$again1")" "slot 1: tokens evaluated"
	assert_eq 1 "$(event_count llama policy-action)" "the rule acted once"
	# The same daemon and checkpoint: another model at the model's path.
	another_model_is_refused
}

another_model_is_refused() {
	require_torch
	[[ -s $conversation_file ]] || { fail "needs the checkpoint of the scenario before"; return 1; }
	local next0 restored_before failed_before
	next0=$(cat "$conversation_file")
	restored_before=$(event_count llama checkpoint-restored)
	failed_before=$(event_count llama checkpoint-failed)
	# Another model at the same path (another size and mtime), then a
	# reload that changes the worker: the daemon saves the slots before it
	# stops the worker for the change, but the save is refused, since the
	# server's model file is no longer the one this run loaded; the restart
	# refuses the earlier checkpoint, which was of the old file.
	printf 'another model, other weights: the checkpoint does not fit it\n' >"$model"
	sed -i 's/memory: {max: 1G}/memory: {max: 1100M}/' "$ivd_conf/workers.d/llama.yaml"
	systemctl reload infervisord
	wait_until 900 has_events llama checkpoint-failed $((failed_before + 2))
	local save_refused
	save_refused=$(ivd_journal INFERVISOR_WORKER=llama INFERVISOR_EVENT=checkpoint-failed -o cat | tail -n2 | head -n1)
	log "save refused: $save_refused"
	log "refused: $(ivd_journal INFERVISOR_WORKER=llama INFERVISOR_EVENT=checkpoint-failed -o cat | tail -n1)"
	assert_eq "a reload that changes it" "$(event_field llama checkpoint-failed TRIGGER | tail -n1)" \
		"the reload's save"
	assert_contains "$save_refused" "not the one this run started with"
	assert_eq engine-mismatch "$(event_field llama checkpoint-failed REASON | tail -n1)" "reason"
	wait_until 900 has_events llama ready 3
	# Clean: nothing of the old conversation is in the cache.
	local answer
	answer=$(completion $port 0 "$next0" 2)
	log "after the refusal: $(jq -c '{tokens_cached, timings: {cache_n: .timings.cache_n, prompt_n: .timings.prompt_n}}' <<<"$answer")"
	assert_eq 0 "$(jq .timings.cache_n <<<"$answer")" "tokens from the cache"
	assert_eq $((${#next0} + 1)) "$(jq .timings.prompt_n <<<"$answer")" "tokens evaluated"
	assert_eq "$restored_before" "$(event_count llama checkpoint-restored)" "no restore"
	assert_cmd worker_running llama
}
run_scenario llama-slots-saved-and-restored-then-another-model-refused slots_saved_and_restored_context_continues

stuck_server_is_killed_by_the_metrics_rule() {
	require_torch
	install_infervisor
	assert_cmd test -x "$torch_worker"
	use_fast_sampling
	{
		cat <<-YAML
			workers:
			  - name: stuck-llama
			    command: $(llama_command $stuck_port ", --stuck-after, \"1\"")
			    memory: {max: 1G}
			    restart: {policy: on-failure, backoff_initial: 1s}
			    start_timeout: 10m
			    engine: {kind: llama-server, port: $stuck_port, metrics: /metrics}
			    probes:
			      startup: {kind: http, port: $stuck_port, path: /health, interval: 2s, timeout: 1s}
		YAML
		no_default_rules
		cat <<-YAML
			      - name: llama-stuck
			        when: "engine.rate(llamacpp:tokens_predicted_total) == 0 and engine.llamacpp:requests_processing > 0 for 15s"
			        action: kill
			        then: park
		YAML
	} | use_workers llama.yaml
	fresh_daemon
	wait_until 900 has_events stuck-llama ready 1

	# One request is served; after it the server is stuck: the next one
	# takes a slot and never gets a token, the ones after it wait.
	assert_eq 4 "$(completion $stuck_port 0 "served before it got stuck" 4 | jq .tokens_predicted)" "served"
	(completion $stuck_port -1 "never answered" 4 >/dev/null 2>&1 || true) &
	wait_until 120 metric_is $stuck_port requests_processing 1
	(completion $stuck_port -1 "waiting" 4 >/dev/null 2>&1 || true) &
	wait_until 120 metric_is $stuck_port requests_deferred 1
	assert_eq '{"status":"ok"}' "$(curl -sS --max-time 60 "http://127.0.0.1:$stuck_port/health")" "health while stuck"
	assert_eq 4 "$(metric $stuck_port tokens_predicted_total)" "tokens since"

	wait_until 300 has_events stuck-llama parked 1
	log "rule: $(ivd_journal INFERVISOR_WORKER=stuck-llama INFERVISOR_EVENT=policy-action -o cat | head -n1)"
	assert_eq llama-stuck "$(event_field stuck-llama policy-action RULE | head -n1)" "rule"
	assert_eq kill "$(event_field stuck-llama policy-action ACTION | head -n1)" "action"
	assert_eq SIGKILL "$(event_field stuck-llama exited EXIT_SIGNAL | head -n1)" "exit signal"
	assert_eq llama-stuck "$(event_field stuck-llama parked RULE)" "parked by"
	assert_eq 1 "$(event_count stuck-llama policy-action)" "the rule acted once"
}
run_scenario llama-stuck-server-killed-by-its-metrics stuck_server_is_killed_by_the_metrics_rule
