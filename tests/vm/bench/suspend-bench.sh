#!/bin/bash
# Suspend/resume benchmark, run in the VM guest. Reports figures; asserts
# nothing (issue 13). Boot it with run-vm, e.g.
#
#   tests/vm/run-vm --build-dir /work/me-build \
#       --results /work/me-build/vm-results/suspend-bench -- tests/vm/bench/suspend-bench.sh
#
# For a worker holding a 256 and a 512 MiB model (the example worker,
# --touch-model: every request reads the whole model), with 1G zram swap:
#   suspend   `infervisorctl suspend` until it returns (frozen + memory.reclaim
#             done), and the daemon's own figures from the `suspended` entry:
#             freeze seconds, reclaim seconds, bytes reclaimed
#   resume    `infervisorctl resume` until it returns, and until the first
#             request served after it (the whole model paged back in)
#   restart   the alternative for a worker that cannot stay in swap: a
#             checkpoint (the example worker's state is only its counter, so
#             this is the protocol's cost, not a model's), then a stop and a
#             start from the checkpoint until its first request (the model
#             loaded anew)
# Times are wall-clock in the guest (CLOCK_MONOTONIC through date +%s%N);
# under TCG emulation expect 10-50x what real hardware does.
set -uo pipefail
here=${BASH_SOURCE[0]%/*}
# shellcheck source=../lib.sh
VMTEST_LIB_FUNCTIONS_ONLY=1 source "$here/../lib.sh"
# shellcheck source=../infervisor.sh
source "$here/../infervisor.sh"

out=${VMTEST_RESULTS:-/tmp}
table=$out/suspend-bench.txt

now_ns() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }
served_now() {
	infervisorctl status --json w |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["workers"][0]["status_text"])' |
		sed -n 's/^served \([0-9]*\) requests$/\1/p'
}
# until_served_more_than N: polls every 20 ms.
until_served_more_than() {
	local n
	while :; do
		n=$(served_now)
		[[ -n $n ]] && ((n > $1)) && return 0
		sleep 0.02
	done
}

bench_one() { # MODEL_MIB
	local size=$1
	use_workers bench.yaml <<-YAML
		workers:
		  - name: w
		    command: [$ivd_example_worker, --model-mb, "$size", --touch-model, --serve-interval-ms, "200"]
		    notify: true
		    memory: {max: $((size + 256))M}
		    checkpoint: {timeout: 60s}
		    rules: [{name: runaway-growth, enabled: false}, {name: memory-pressure, enabled: false}]
	YAML
	rm -rf /var/lib/infervisor/checkpoints/w
	fresh_daemon
	wait_until 600 has_events w ready 1
	until_served_more_than 3

	local t0 t1 t2 n suspend_s
	t0=$(now_ns)
	infervisorctl suspend w
	t1=$(now_ns)
	suspend_s=$(secs "$t0" "$t1")
	local fs rs bytes before
	fs=$(event_field w suspended FREEZE_SECONDS)
	rs=$(event_field w suspended RECLAIM_SECONDS)
	bytes=$(event_field w suspended BYTES_RECLAIMED)
	before=$(event_field w suspended MEMORY_BEFORE)
	sleep 2
	n=$(served_now)
	t0=$(now_ns)
	infervisorctl resume w
	t1=$(now_ns)
	until_served_more_than "$n"
	t2=$(now_ns)
	echo "$size $suspend_s $fs $rs $bytes $before $(secs "$t0" "$t1") $(secs "$t0" "$t2")" >>"$out/suspend-bench.tsv"

	# The alternative: checkpoint, stop, start from it, first request.
	n=$(served_now)
	t0=$(now_ns)
	infervisorctl checkpoint w
	t1=$(now_ns)
	infervisorctl stop w
	infervisorctl start w
	until_served_more_than 0
	t2=$(now_ns)
	echo "$size checkpoint $(secs "$t0" "$t1") restart-to-first-request $(secs "$t1" "$t2")" >>"$out/suspend-bench.tsv"
	infervisorctl stop w
}

install_infervisor >/dev/null
zram_swap_on 1G || echo "suspend-bench: no zram swap" >&2
: >"$out/suspend-bench.tsv"
for size in 256 512; do
	bench_one "$size"
done
systemctl stop infervisord
{
	echo "suspend/resume vs checkpoint/restart, example worker reading its whole model per request, zram swap"
	awk '$2 != "checkpoint" {
		printf "%s MiB: suspend call %ss (freeze %ss, reclaim %ss, %.0f of %.0f MiB out), resume call %ss, first request after resume %ss\n",
			$1, $2, $3, $4, $5 / 1048576, $6 / 1048576, $7, $8 }
	     $2 == "checkpoint" {
		printf "%s MiB: checkpoint %ss, stop + start from it to first request %ss\n", $1, $3, $5 }' \
		"$out/suspend-bench.tsv"
} | tee "$table"
