#!/bin/bash
# Slot benchmark (not a test; asserts nothing): what `checkpoint: {method:
# llama-server}` saves a restart, against recomputing the context. The
# example torch worker runs as llama-server (etc/examples/torch-worker.py:
# a real transformer on Debian's python3-torch, dim 256, 4 layers, one slot
# of 4096 tokens), through the installed daemon. For each size N (tokens,
# default 256 and 1024):
#   recompute  a completion of an N-token prompt into an empty slot, 1 token
#              predicted: the server's own prompt_ms (timings), which is
#              what a restart without a checkpoint costs the next request
#              of that conversation;
#   save       `infervisorctl checkpoint`: the daemon's CHECKPOINT_SECONDS
#              (request to publication: /props, /slots, the slot's save into
#              the staging dir, the record, the seal) and CHECKPOINT_BYTES;
#   restore    `infervisorctl restart`: once /health is 200 the daemon
#              restores the slot, SLOTS_RESTORE_SECONDS (first restore
#              request to last answer);
#   next       the same prompt plus one character after the restore: its
#              prompt_ms and cache_n (tokens taken from the restored cache).
# Run it in a guest (python3-torch on the host, which ./run-tests installs):
#
#   tests/vm/run-vm --build-dir BUILD --results BUILD/vm-results/slot-bench \
#       --mem 2048 -- tests/vm/bench/slot-bench.sh [TOKENS...]
#
# Timings under emulation are slower than on hardware, for the recompute
# (matrix products) more than for the save and restore (file copies).
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
sizes=("$@")
((${#sizes[@]})) || sizes=(256 1024)
out=$VMTEST_RESULTS/slot-bench.tsv
store=/var/lib/infervisor/checkpoints
torch_worker=/usr/libexec/infervisor/infervisor-torch-worker
port=18160
name=slots

# completion PROMPT: llama-server's answer (JSON) for slot 0.
completion() {
	curl -sS --max-time 3600 "http://127.0.0.1:$port/completion" \
		-d "$(jq -nc --arg p "$1" '{prompt: $p, id_slot: 0, n_predict: 1, cache_prompt: true}')"
}

require_torch
install_infervisor
# The checkpoint's record names the model file (path, size, mtime): a
# llama-server without -m has none, and its slots are not checkpointed.
model=/var/lib/vmtest-slot-bench/model.gguf
mkdir -p "${model%/*}"
chmod 0755 "${model%/*}"
printf 'the bench model: its bytes seed the weights\n' >"$model"
chmod 0644 "$model"
printf 'tokens\trecompute_s\tsave_s\tckpt_bytes\trestore_s\tnext_prompt_s\tnext_cache_n\n' >"$out"
for n in "${sizes[@]}"; do
	rm -rf "${store:?}/$name"
	use_workers bench.yaml <<-YAML
		workers:
		  - name: $name
		    command: [/usr/bin/python3, $torch_worker, --port, "$port", --dim, "256", --layers, "4",
		              --vocab, "4096", --serve-interval-ms, "0", "-c", "4096", "-m", $model,
		              --slot-save-path, $store/$name/staging]
		    memory: {max: 1536M}
		    start_timeout: 10m
		    engine: {kind: llama-server, port: $port, timeout: 60s}
		    checkpoint: {method: llama-server, timeout: 30m, keep: 2}
		    probes:
		      startup: {kind: http, port: $port, path: /health, interval: 2s, timeout: 1s}
		    rules:
		      - {name: runaway-growth, enabled: false}
		      - {name: memory-pressure, enabled: false}
	YAML
	fresh_daemon
	wait_until 900 has_events "$name" ready 1
	# BOS and N-1 bytes: N tokens in the slot, then the predicted one.
	prompt=$(head -c $((n - 1)) /dev/zero | tr '\0' 'a')
	recompute_ms=$(completion "$prompt" | jq -r .timings.prompt_ms)
	infervisorctl checkpoint "$name" >/dev/null
	wait_until 1800 has_events "$name" checkpoint-written 1
	infervisorctl restart "$name" >/dev/null
	wait_until 1800 has_events "$name" checkpoint-restored 1
	next=$(completion "${prompt}b")
	printf '%s\t%.3f\t%s\t%s\t%s\t%.3f\t%s\n' "$n" "$(jq -n "$recompute_ms / 1000")" \
		"$(event_field "$name" checkpoint-written CHECKPOINT_SECONDS | head -n1)" \
		"$(event_field "$name" checkpoint-written CHECKPOINT_BYTES | head -n1)" \
		"$(event_field "$name" checkpoint-restored SLOTS_RESTORE_SECONDS | tail -n1)" \
		"$(jq -r '.timings.prompt_ms / 1000' <<<"$next")" \
		"$(jq -r .timings.cache_n <<<"$next")" | tee -a "$out"
	ivd_journal INFERVISOR_WORKER="$name" INFERVISOR_EVENT=checkpoint-failed -o cat || true
	systemctl stop infervisord
	rm -rf "${store:?}/$name"
done
column -t "$out"
