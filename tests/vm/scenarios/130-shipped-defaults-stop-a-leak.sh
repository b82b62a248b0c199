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
# disabled for the leaker shows what the host rules alone do, gentle first
# (issue 25): the shipped host rule's `preempt` suspends the leaker (it is
# preemptible by default and the swap holds it), the shipped resume_when
# brings it back a minute after the host has room, it leaks on, and the same
# rule then kills it: a worker that grows back after its resume is not
# suspended again. Still no OOM kill, and steady untouched.
#
# After each daemon run, what if (issue 31): `infervisorctl simulate` with
# the configuration the daemon ran (the shipped main file and these workers)
# replays its recording to the same decisions at the same evaluations (as
# nobody too, and through `reload --dry-run --simulate`); with near-the-cap's
# headroom widened from 30s to 60s the replay acts on the leaker earlier than
# the daemon did and says where it departs. The recordings are exported into the results (what_if_agrees:
# tests/unit/policy/recorded_traces/leak-* come from them).
#
# Last, the peer on the same leak in the same boot: earlyoom (Debian's, with
# its defaults) and no infervisord, the two programs started with the same
# memory caps as transient systemd units (no swap cap: earlyoom has none to
# give). Its figures are logged beside ours; asserted only that the leak
# ended and steady was not the one killed by earlyoom.
#
# Figures (not asserted): time from the leak's start to the action, the
# leaker's peak, pages swapped out, the steady worker's worst gap between
# requests (served every 200 ms) and its memory stall time (memory.pressure
# some total), and the time from the host crossing into danger
# (MemAvailable under 25% of MemTotal, polled every half second) to the
# action. Guest time ~80 s + ~170 s + ~120 s.
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

# With the worker rules off: the shipped host rule suspends the leaker, the
# shipped resume_when brings it back, and once it has grown again the rule
# kills it (not a second suspension), each step journaled with why.
host_rules_suspend_then_kill() {
	local actions steps
	actions=$(event_field leaker policy-action ACTION | grep -vx resume | paste -sd' ')
	steps=$(event_field leaker policy-action PREEMPT_STEP)
	log "leaker's actions: $actions; steps: $(paste -sd'|' <<<"$steps")"
	assert_eq "suspend kill" "$actions" "leaker's actions, in order"
	assert_contains "$(sed -n 1p <<<"$steps")" "suspend: preemptible" "the first step"
	assert_contains "$(sed -n 2p <<<"$steps")" "grew back within" "why the second is a kill"
	# Its actions and what they did, up to its first exit, in order.
	# (resume_when's resume is a policy action of its own, RULE=resume_when.)
	assert_eq "policy-action suspended resume_when resumed policy-action exited" \
		"$(event_sequence leaker | tr ' ' '\n' | sed 's/^policy-action:resume_when$/resume_when/; s/:.*//' |
			awk '/^(policy-action|resume_when|suspended|resumed|oom-killed|exited)$/ { print } /^exited$/ { exit }' |
			paste -sd' ')" "leaker's events up to its exit"
	assert_contains "$(ivd_journal INFERVISOR_WORKER=leaker INFERVISOR_EVENT=resumed -o cat | head -n1)" \
		"resume_when" "who resumed it"
	assert_eq SIGKILL "$(event_field leaker exited EXIT_SIGNAL | head -n1)" "leaker's exit signal"
	local resumed killed
	resumed=$(ivd_journal INFERVISOR_WORKER=leaker INFERVISOR_EVENT=resumed -o export |
		sed -n 's/^__REALTIME_TIMESTAMP=//p' | head -n1)
	killed=$(ivd_journal INFERVISOR_WORKER=leaker INFERVISOR_EVENT=policy-action INFERVISOR_ACTION=kill -o export |
		sed -n 's/^__REALTIME_TIMESTAMP=//p' | head -n1)
	log "FIGURES host rules: resumed -> killed after it grew again $(((killed - resumed) / 1000)) ms"
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
	if [[ -z ${2:-} ]]; then
		assert_eq kill "$(event_field leaker policy-action ACTION | head -n1)" "leaker's first action"
	else
		host_rules_suspend_then_kill
	fi
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
	what_if_replays_the_run "$label"
	systemctl stop infervisord
}

# what_if_replays_the_run LABEL: see the header.
what_if_replays_the_run() {
	local label=${1// /-} out
	what_if_agrees "leak-$label"
	# Every action the daemon's engine took on the leaker, the replay took
	# too (resume_when's resumes are the planner's, not the engine's).
	out=$(infervisorctl simulate --json --worker leaker)
	assert_eq "$(event_field leaker policy-action RULE | grep -cvx resume_when)" \
		"$(jq '[.items[] | select(.kind == "same")] | length' <<<"$out")" \
		"the leaker's journaled actions that the replay took too"
	[[ $label == shipped ]] || return 0
	assert_cmd runuser -u nobody -- infervisorctl simulate --worker steady
	# The same files through reload's preview: nothing changes, nothing departs.
	out=$(infervisorctl reload --dry-run --simulate --json)
	assert_eq "false null" "$(jq -r '"\(.applied) \(.simulation.diverged_at_usec)"' <<<"$out")" \
		"reload --dry-run --simulate: applied, departure"

	local wider=/run/vmtest-130-wider would real
	rm -rf "$wider" && mkdir -p "$wider" && cp -r "$ivd_conf/infervisor.yaml" "$ivd_conf/workers.d" "$wider/"
	sed -i 's/memory.headroom < 30s for 8s/memory.headroom < 60s for 8s/' "$wider/infervisor.yaml"
	assert_contains "$(cat "$wider/infervisor.yaml")" "memory.headroom < 60s for 8s" "the changed threshold"
	out=$(infervisorctl simulate --config "$wider" --json)
	log "simulate, near-the-cap at 60s: $(jq -c '{same, would, not_taken, diverged_at_usec}' <<<"$out")"
	infervisorctl simulate --config "$wider" | tail -n 5 | while read -r line; do log "  $line"; done
	# The replay acts on the leaker no later than the daemon did. Which rule
	# acted first is the leak's to decide: one this fast can cross 60s and 30s
	# of headroom within one sample (then the replay takes the daemon's own
	# near-the-cap kill), or the host can run short first (then the daemon's
	# host-memory-running-out kill is one the replay would not take, having
	# killed earlier). What was taken only really comes after the replay's own.
	local replay_first daemon_first
	replay_first=$(jq '[.items[] | select((.kind == "same" or .kind == "would") and .worker == "leaker") | .time_usec] | min' <<<"$out")
	daemon_first=$(jq '[.items[] | select((.kind == "same" or .kind == "not-taken") and .worker == "leaker") | .time_usec] | min' <<<"$out")
	log "the replay's first action on the leaker at $replay_first, the daemon's at $daemon_first"
	assert_cmd test "$replay_first" != null
	assert_cmd test "$replay_first" -le "$daemon_first"
	assert_eq 0 "$(jq --argjson t "$replay_first" '[.items[] | select(.kind == "not-taken" and .time_usec < $t)] | length' <<<"$out")" \
		"the daemon's decisions before the replay's first that the replay would not take"
	assert_cmd test "$(jq --argjson t "$daemon_first" '[.items[] | select((.kind == "would" or .kind == "same") and .worker == "leaker" and .rule == "near-the-cap" and .time_usec <= $t)] | length' <<<"$out")" -ge 1
}

# earlyoom_on_the_same_leak: infervisord stopped; the same two programs as
# transient units with the same memory caps (the worker's SyslogIdentifier,
# so the figures above read their lines), earlyoom with its defaults.
earlyoom_on_the_same_leak() {
	local earlyoom=$VMTEST_BUILD_DIR/vm-reference/usr/bin/earlyoom
	assert_cmd test -x "$earlyoom" # tests/vm/run-all unpacks Debian's
	systemctl stop infervisord
	ivd_cursor=$(journalctl -q -n 1 --show-cursor | sed -n 's/^-- cursor: //p')
	export ivd_cursor
	local swapped_before watch=/run/vmtest-130-memwatch-peer watcher
	swapped_before=$(pswpout)
	memwatch "$watch" &
	watcher=$!
	at_exit kill "$watcher"
	at_exit stop_peer_units
	systemd-run -q --unit=peer-earlyoom "$earlyoom" -r 0
	systemd-run -q --unit=peer-steady -p MemoryMax=400M -p SyslogIdentifier=infervisor-worker-peer-steady \
		"$ivd_example_worker" --model-mb 300 --serve-interval-ms 200
	# The leak begins once steady has loaded and serves (no phases to wait
	# for here: earlyoom has none), at the same rate.
	wait_until 300 has_output peer-steady 'served request'
	systemd-run -q --unit=peer-leaker -p MemoryMax=600M -p SyslogIdentifier=infervisor-worker-peer-leaker \
		"$ivd_example_worker" --model-mb 50 --leak-mb-per-s 20 --leak-after-ms 5000
	wait_until 300 has_output peer-leaker 'leaked'
	local leak_start
	leak_start=$(output_times peer-leaker 'leaked' | head -n1)
	# Bounded: whoever ends it (earlyoom, or the kernel).
	wait_until 600 unit_ended peer-leaker
	local ended swapped_after
	ended=$(date +%s%6N)
	swapped_after=$(pswpout)
	kill "$watcher" 2>/dev/null || true
	local killed_line kill_at
	# Its kill: "sending SIGTERM to process PID uid 0 "NAME": badness ...".
	killed_line=$(journalctl -q --no-pager --cursor="$ivd_cursor" -u peer-earlyoom -o cat |
		grep -m1 -E 'sending SIG[A-Z]+ to process' || true)
	kill_at=$(journalctl -q --no-pager --cursor="$ivd_cursor" -u peer-earlyoom -o export |
		awk '/^__REALTIME_TIMESTAMP=/ { t = substr($0, 22) } /^MESSAGE=sending SIG[A-Z]+ to process/ { print t; exit }')
	[[ -n $kill_at ]] || kill_at=$ended
	local danger from_danger="n/a (never under 25%)"
	danger=$(awk -v s="$leak_start" -v k="$kill_at" '$1 >= s - 1000000 && $1 <= k && $2 < 25 { print $1; exit }' "$watch")
	[[ -z $danger ]] || from_danger="$(((kill_at - danger) / 1000)) ms"
	log "FIGURES earlyoom 1.7 (defaults), same leak, same boot: time to action $(((kill_at - leak_start) / 1000 + 1000)) ms" \
		"after the leak began;" \
		"MemAvailable < 25% -> action $from_danger;" \
		"pages swapped out $((swapped_after - swapped_before));" \
		"kernel OOM kills $(kernel_oom_kills);" \
		"steady: worst gap between requests $(worst_gap_ms peer-steady) ms (every 200 ms)," \
		"still running: $(systemctl is-active peer-steady || true)"
	log "earlyoom: ${killed_line:-(no kill of its own: the OOM killer of the kernel or the cap ended it)}"
	stop_peer_units
}

stop_peer_units() { systemctl stop peer-earlyoom peer-steady peer-leaker 2>/dev/null || true; }

has_output() { [[ -n $(output_times "$1" "$2") ]]; }
unit_ended() { [[ $(systemctl is-active "$1" || true) != active ]]; }

run_scenario shipped-defaults-end-a-leak-before-the-kernel leak_is_ended_by_the_daemon shipped
run_scenario without-growth-rules-the-host-rules-end-it leak_is_ended_by_the_daemon "growth rules off" \
	"    rules: [{name: near-the-cap, enabled: false}, {name: runaway-growth, enabled: false}]"
run_scenario earlyoom-on-the-same-leak-for-comparison earlyoom_on_the_same_leak
