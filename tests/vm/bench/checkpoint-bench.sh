#!/bin/bash
# Checkpoint benchmark (not a test; asserts nothing): cooperative vs criu
# checkpoint and restore of the example worker holding 64, 256 and 512 MiB of
# touched memory, through the installed daemon. Run it in a guest with room
# for a dump of 512 MiB in its tmpfs overlay:
#
#   tests/vm/run-vm --build-dir BUILD --results BUILD/vm-results/ckpt-bench \
#       --mem 3072 -- tests/vm/bench/checkpoint-bench.sh [SIZES_MIB...]
#
# For each size and method: `infervisorctl checkpoint` (the worker keeps
# running), then `infervisorctl restart` (stop, then a start that restores).
# Reported, from the daemon's journal fields: the checkpoint's seconds
# (CHECKPOINT_SECONDS: request to CHECKPOINT=1, or the criu dump) and bytes
# (CHECKPOINT_BYTES); the restore's seconds (RESTORE_SECONDS: start to READY=1
# for cooperative, the criu restore for criu); and the first response: from
# the checkpoint-restoring event to the worker's first "served request" line
# after it (journal timestamps). The cooperative example worker saves only
# its counter and reloads its "model" (allocates and touches it again), which
# is what a cooperative server does; criu saves and restores all memory.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
sizes=("$@")
((${#sizes[@]})) || sizes=(64 256 512)
out=$VMTEST_RESULTS/checkpoint-bench.tsv
store=/var/lib/infervisor/checkpoints

# first_response_seconds WORKER: journal time from the last
# checkpoint-restoring event to the first "served request" line after it.
first_response_seconds() {
	journalctl -q --no-pager --cursor="$ivd_cursor" -o json \
		SYSLOG_IDENTIFIER="infervisor-worker-$1" + INFERVISOR_WORKER="$1" INFERVISOR_EVENT=checkpoint-restoring |
		python3 -c '
import json, sys
start = None; first = None
for line in sys.stdin:
    e = json.loads(line)
    t = int(e["__REALTIME_TIMESTAMP"]) / 1e6
    msg = e.get("MESSAGE", "")
    if not isinstance(msg, str): continue
    if e.get("INFERVISOR_EVENT") == "checkpoint-restoring": start = t; first = None
    elif start is not None and first is None and "served request" in msg: first = t
print("%.3f" % (first - start) if start is not None and first is not None else "-")'
}

install_infervisor
# criu needs the unit's seccomp filters cleared (etc/examples/criu.conf).
install -D -m 644 "$VMTEST_SRC_DIR/etc/examples/criu.conf" /etc/systemd/system/infervisord.service.d/criu.conf
systemctl daemon-reload
printf 'method\tsize_mib\tckpt_seconds\tckpt_bytes\trestore_seconds\tfirst_response_seconds\n' >"$out"
for size in "${sizes[@]}"; do
	for method in cooperative criu; do
		name=b$method$size
		rm -rf "${store:?}/$name"
		use_workers bench.yaml <<-YAML
			workers:
			  - name: $name
			    command: [$ivd_example_worker, --model-mb, "$size", --serve-interval-ms, "200"]
			    notify: true
			    start_timeout: 10m
			    memory: {max: $((size + 256))M}
			    checkpoint: {method: $method, timeout: 10m, keep: 1}
			    rules:
			      - {name: runaway-growth, enabled: false}
			      - {name: memory-pressure, enabled: false}
		YAML
		fresh_daemon
		wait_until 900 has_events "$name" ready 1
		infervisorctl checkpoint "$name" >/dev/null
		wait_until 900 has_events "$name" checkpoint-written 1
		infervisorctl restart "$name" >/dev/null
		wait_until 900 has_events "$name" ready 2
		if [[ $method == cooperative ]]; then
			wait_until 900 has_events "$name" checkpoint-restored 1
		fi
		wait_until 300 served_more_than "$name" 1
		sleep 2 # a served line after the restore
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$method" "$size" \
			"$(event_field "$name" checkpoint-written CHECKPOINT_SECONDS | head -n1)" \
			"$(event_field "$name" checkpoint-written CHECKPOINT_BYTES | head -n1)" \
			"$(event_field "$name" checkpoint-restored RESTORE_SECONDS | head -n1)" \
			"$(first_response_seconds "$name")" | tee -a "$out"
		ivd_journal INFERVISOR_WORKER="$name" INFERVISOR_EVENT=checkpoint-failed -o cat || true
		systemctl stop infervisord
		rm -rf "${store:?}/$name"
	done
done
column -t "$out"
