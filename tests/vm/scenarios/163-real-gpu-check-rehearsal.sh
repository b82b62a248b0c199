#!/bin/bash
# Issue 30: the real-GPU check (tests/gpu/real-gpu-check, the script a
# session runs on a lent NVIDIA machine), rehearsed on a real kernel with the
# tests' stand-in NVML and libcuda (tests/gpu/pack-kit --stand-ins): the kit
# packs, the daemon runs from it on a cgroup2 root of its own with nothing
# but the kit's libraries, and every check of the script passes with the
# driver's part played by the stand-ins (the VRAM figure, a gpu.memory rule
# that kills and parks, a suspension whose GPU release is done, the worker's
# memory intact after the resume). What only a GPU shows is not shown here.
# Checked by outcome, never by time. Guest time: about 30-60 s.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"

rehearse_the_real_gpu_check() {
	local tmp out rc=0
	tmp=$(mktemp -d)
	at_exit rm -rf "$tmp"
	"$VMTEST_SRC_DIR/tests/gpu/pack-kit" --stand-ins "$VMTEST_BUILD_DIR" "$tmp/kit"
	out=$("$tmp/kit/real-gpu-check" --rehearse 2>&1) || rc=$?
	echo "$out"
	assert_eq 0 "$rc" "real-gpu-check --rehearse's exit status"
	assert_contains "$out" "PASS the daemon's VRAM figure matches nvidia-smi"
	assert_contains "$out" "PASS a gpu.memory rule kills the worker over its gpu.memory_max and parks it"
	assert_contains "$out" "PASS a suspension gives the VRAM back to the device"
	assert_contains "$out" "PASS after resume the worker runs on with its tensor intact"
	assert_contains "$out" "0 failed"
}

run_scenario real-gpu-check-rehearsal rehearse_the_real_gpu_check
