#!/bin/bash
# Issue 3, scenario 3: with swap on, a worker's memory.swap.current never
# passes its memory.swap.max.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

swap_stays_under_its_cap() {
	install_infervisor
	if ! swapon --show=NAME --noheadings | grep -q .; then
		zram_swap_on
		at_exit zram_swap_off
	fi
	use_workers swap.yaml <<-YAML
		workers:
		  - name: swapper
		    command: [$ivd_example_worker, --leak-mb-per-s, "8"]
		    memory: {max: 64M, swap_max: 16M}
		    restart: {policy: never}
	YAML
	fresh_daemon
	wait_until 300 worker_running swapper
	local cg max=$((16 << 20)) peak=0 cur samples=0
	cg=$(worker_cgroup swapper)
	assert_eq "$max" "$(cat "$cg/memory.swap.max")" "memory.swap.max"
	# Sample until the worker is gone (OOM-killed at 64M + 16M swap).
	while [[ -r $cg/memory.swap.current ]] && cur=$(cat "$cg/memory.swap.current" 2>/dev/null); do
		((cur > peak)) && peak=$cur
		samples=$((samples + 1))
		((samples < 20000)) || break
		sleep 0.05
	done
	log "swap samples=$samples peak=$peak max=$max"
	assert_cmd test "$peak" -le "$max"
	assert_cmd test "$peak" -gt 0 # it did swap: the cap was what held it
	wait_until 300 has_events swapper exited 1
}
run_scenario swap-stays-under-memory-swap-max swap_stays_under_its_cap
