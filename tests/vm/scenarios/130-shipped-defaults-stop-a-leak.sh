#!/bin/bash
# Issue 11, scenario 1: with the SHIPPED main configuration and only caps in
# the worker file, a worker leaking 20 MiB/s next to a steady one on the
# 1 GiB guest with (zram) swap is ended by the daemon, not by the kernel: no
# OOM kill anywhere, and the steady worker is never touched.
#
# The leaker loads a small model, serves steadily for 40 s (so the policy
# counts it as serving: it has no notify, and its memory holds still for the
# settle span), then leaks. Its cap (600M) plus the steady worker's (400M)
# are more than the guest has, as in the field report.
#
# The same run again with the worker rules near-the-cap and runaway-growth
# disabled for the leaker shows what the host rules alone do. Figures (not
# asserted): time from the leak's start to the kill, the leaker's peak, pages
# swapped out, the steady worker's worst gap between requests (served every
# 200 ms) and its memory stall time (memory.pressure some total), and the
# time from the host crossing into danger (MemAvailable under 25% of
# MemTotal, polled every half second) to the action. Guest time ~2 x 80 s.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
zram_swap_on 1G
at_exit zram_swap_off # last: after the workers are gone
at_exit systemctl stop infervisord
at_exit dump_state

# workers [RULES]: steady (300 MB model) and leaker, caps only; RULES is
# appended to the leaker's entry.
workers() {
	use_workers leak.yaml <<-YAML
		workers:
		  - name: steady
		    command: [$ivd_example_worker, --model-mb, "300", --serve-interval-ms, "200"]
		    memory: {max: 400M}
		  - name: leaker
		    command: [$ivd_example_worker, --model-mb, "50", --leak-mb-per-s, "20", --leak-after-ms, "40000"]
		    memory: {max: 600M}
		${1:-}
	YAML
}

stall_us() { # WORKER: memory.pressure "some" total, microseconds
	sed -n 's/^some .*total=//p' "$(worker_cgroup "$1")/memory.pressure" 2>/dev/null || echo 0
}

pswpout() { sed -n 's/^pswpout //p' /proc/vmstat; }

# journal timestamps (microseconds) of WORKER's output lines matching RE
output_times() {
	journalctl -q --no-pager --cursor="$ivd_cursor" -t "infervisor-worker-$1" -o export |
		awk -v re="$2" '/^__REALTIME_TIMESTAMP=/ { t = substr($0, 22) } /^MESSAGE=/ && $0 ~ re { print t }'
}

# memwatch FILE: "REALTIME_US AVAILABLE_PCT" every half second, for figures.
# Run in the background and killed when done: no assertion of the
# scenario's may see its commands die.
memwatch() {
	trap - ERR
	set +e
	while :; do
		awk -v t="$(date +%s%6N)" '/^MemTotal:/ { m = $2 } /^MemAvailable:/ { a = $2 }
			END { printf "%s %.2f\n", t, 100 * a / m }' /proc/meminfo
		sleep 0.5
	done >"$1"
}

worst_gap_ms() { # WORKER: the longest time between two served requests
	output_times "$1" 'served request' | awk 'NR > 1 && $1 - p > g { g = $1 - p } { p = $1 } END { print int(g / 1000) }'
}

leak_is_ended_by_the_daemon() { # LABEL [RULES]
	local label=$1
	install_infervisor
	workers "${2:-}"
	local swapped_before stall_before steady_pid watch=/run/vmtest-130-memwatch watcher
	swapped_before=$(pswpout)
	memwatch "$watch" &
	watcher=$!
	at_exit kill "$watcher"
	fresh_daemon
	wait_until 300 has_events steady ready 1
	steady_pid=$(main_pid steady)
	stall_before=$(stall_us steady)
	wait_until 900 has_events leaker exited 1
	local stall_after swapped_after
	stall_after=$(stall_us steady)
	swapped_after=$(pswpout)
	kill "$watcher" 2>/dev/null || true

	# The daemon ended it, before any OOM kill, and never touched steady.
	assert_eq kill "$(event_field leaker policy-action ACTION | head -n1)" "leaker's first action"
	assert_eq 0 "$(event_count leaker oom-killed)" "leaker oom-killed events"
	assert_eq 0 "$(kernel_oom_kills)" "kernel OOM kills on the host"
	assert_eq 0 "$(event_count steady policy-action)" "steady's policy actions"
	assert_eq 0 "$(event_count steady exited)" "steady's exits"
	assert_eq "$steady_pid" "$(main_pid steady)" "steady's pid"
	# With its worker rules, one of them acts, on a serving run.
	[[ -n ${2:-} ]] ||
		assert_eq serving "$(event_field leaker policy-action PHASE | head -n1)" "leaker's phase"

	local rule leak_start action peak
	rule=$(event_field leaker policy-action RULE | head -n1)
	leak_start=$(output_times leaker 'leaked' | head -n1)
	action=$(ivd_journal INFERVISOR_WORKER=leaker INFERVISOR_EVENT=policy-action -o export |
		sed -n 's/^__REALTIME_TIMESTAMP=//p' | head -n1)
	peak=$(event_field leaker exited MEMORY_PEAK | head -n1) # of the run that was acted on
	local danger
	danger=$(awk -v s="$leak_start" -v k="$action" '$1 >= s - 1000000 && $1 <= k && $2 < 25 { print $1; exit }' "$watch")
	local from_danger="n/a (never under 25% before the action)"
	[[ -z $danger ]] || from_danger="$(((action - danger) / 1000)) ms"
	# The first "leaked" line comes 1 s after the leak began.
	log "FIGURES $label: rule $rule; time to action $(((action - leak_start) / 1000 + 1000)) ms" \
		"after the leak began;" \
		"MemAvailable < 25% -> action $from_danger;" \
		"leaker peak $((peak / 1048576)) MiB;" \
		"pages swapped out $((swapped_after - swapped_before));" \
		"steady: worst gap between requests $(worst_gap_ms steady) ms (every 200 ms)," \
		"memory stall $(((stall_after - stall_before) / 1000)) ms"
	log "decision: $(ivd_journal INFERVISOR_WORKER=leaker INFERVISOR_EVENT=policy-action -o cat | head -n1)"
	systemctl stop infervisord
}

run_scenario shipped-defaults-end-a-leak-before-the-kernel leak_is_ended_by_the_daemon shipped
run_scenario without-growth-rules-the-host-rules-end-it leak_is_ended_by_the_daemon "growth rules off" \
	"    rules: [{name: near-the-cap, enabled: false}, {name: runaway-growth, enabled: false}]"
