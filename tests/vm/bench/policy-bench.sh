#!/bin/bash
# Policy benchmark, run in the VM guest (tests/vm/run-bench boots it). Reports
# figures; asserts nothing.
#
#   policy-bench.sh [--runs N] [--counts "1 10 20 50"] [--seconds S]
#
# (a) Reaction: from the moment a worker crosses a rule's threshold to its
#     death by the rule's kill, measured in the guest on one clock
#     (CLOCK_MONOTONIC). The example worker sits below the threshold; the
#     probe (tests/bench/policy-reaction-probe, outside the worker's cgroup)
#     opens a pidfd on it, sends SIGUSR2, and polls the pidfd until it dies.
#     On SIGUSR2 the worker writes `start NS`, allocates and touches a burst
#     that crosses the threshold, and writes `end NS` (--burst-stamp, in its
#     work dir). The crossing lies between the two, so death - end is a lower
#     bound of the reaction time and death - start an upper bound. To keep
#     them close the worker's model is sized (by a first calibration start)
#     so that it sits 1-2 MiB below the 48M threshold, and the burst is 8 MiB.
#     Over memory.high the kernel throttles the burst, so there the worker
#     rarely lives to write `end`. Two rules, one worker each, N runs each
#     (`then: restart` brings the worker back for the next run):
#       sampled  memory.current > 48M: read at every sample_interval (1s
#                here), so the reaction is up to one interval
#       events   memory.events.high > 0 with memory.high 48M: the kernel
#                notifies memory.events at once; a daemon that watches it
#                (POLLPRI) reacts at once, one that samples it is bounded by
#                sample_interval like the first (or caught earlier when the
#                throttled burst stalls the host enough to fire the daemon's
#                host memory PSI trigger, which also evaluates every rule).
#                The table says which this daemon does: whether it holds the
#                worker's memory.events open.
# (b) Idle cost: the daemon's CPU time (utime+stime of /proc/PID/stat) and
#     memory (VmRSS at the window's start and end, VmHWM of
#     /proc/PID/status, the Rss of its locked mappings) while it supervises 1, 10, 20, 50 idle workers for S
#     seconds each (default 60), with the packaged main configuration (its
#     sample_interval and default rules), beside earlyoom's CPU time over the
#     same window in the same boot (issue 28's comparison; --seconds 3600
#     shows whether the RSS stays flat over an hour).
#
# Writes the table to $VMTEST_RESULTS/policy-bench.txt (and stdout), the raw
# figures to $VMTEST_RESULTS/policy-bench-*.tsv.
set -uo pipefail
here=${BASH_SOURCE[0]%/*}
# shellcheck source=../lib.sh
VMTEST_LIB_FUNCTIONS_ONLY=1 source "$here/../lib.sh"
# shellcheck source=../infervisor.sh
source "$here/../infervisor.sh"

runs=10 counts="1 10 20 50" seconds=60
while (($#)); do
	case $1 in
	--runs) runs=${2:?}; shift ;;
	--counts) counts=${2:?}; shift ;;
	--seconds) seconds=${2:?}; shift ;;
	*) echo "policy-bench: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done

out=${VMTEST_RESULTS:-/tmp}
probe=$VMTEST_BUILD_DIR/tests/bench/policy-reaction-probe
earlyoom=$VMTEST_BUILD_DIR/vm-reference/usr/bin/earlyoom # run-bench unpacks it
main_config=$ivd_conf/infervisor.yaml
main_config_saved=/run/policy-bench-main.yaml
workdirs=/var/lib/infervisor/workers

# lib.sh's assertions (wait_until's hang guard) note failures in a state dir,
# which functions-only mode does not make; this script owns the EXIT trap.
_vmtest_state=$(mktemp -d)
cleanup() {
	systemctl stop infervisord 2>/dev/null
	[[ -e $main_config_saved ]] && cp "$main_config_saved" "$main_config"
	rm -f "$ivd_conf"/workers.d/*.yaml
	rm -rf "$_vmtest_state"
}
trap cleanup EXIT

note() { echo "# $*" >&2; }

# ---- (a) reaction ------------------------------------------------------------

reaction_config() {
	cat <<-YAML
		log_level: info
		control_group: infervisor
		dry_run: false
		sample_interval: 1s
		defaults:
		  user: infervisor-worker
		  rules: []
		  restart: {policy: always, backoff_initial: 1s, backoff_max: 1s,
		            start_limit_burst: 1000, start_limit_interval: 1m}
	YAML
}

threshold_mib=48
burst_mib=8

# burster NAME MODEL_MIB MEMORY_YAML RULE_WHEN: a worker with its burst.
burster() {
	cat <<-YAML
		  - name: $1
		    command: [$ivd_example_worker, --model-mb, "$2", --burst-mb, "$burst_mib",
		              --burst-stamp, burst.stamp, --serve-interval-ms, "10000"]
		    notify: true
		    memory: $3
		    rules:
		      - {name: $1-rule, when: "$4", action: kill, then: restart}
	YAML
}

# holds_open PID FILE: the process has FILE open.
holds_open() {
	local fd
	for fd in /proc/"$1"/fd/*; do
		[[ $(readlink "$fd" 2>/dev/null) == "$2" ]] && return 0
	done
	return 1
}

ns_to_ms() { awk -v ns="$1" 'BEGIN { printf "%.1f", ns / 1e6 }'; }

# measure_once WORKER RUN: one burst; appends "WORKER RUN start_ms end_ms
# below_mib" to the tsv (ms from the burst's start and end to death, end_ms
# "-" when the worker died before its burst ended; how far below the
# threshold memory.current was just before the burst).
measure_once() {
	local worker=$1 run=$2 pid stamp=$workdirs/$1/burst.stamp probe_out start end died actions
	local current
	wait_until 600 has_events "$worker" ready "$run" || return 1
	pid=$(main_pid "$worker")
	rm -f "$stamp"
	actions=$(event_count "$worker" policy-action)
	# Two sample intervals: the engine has this run's baseline (memory.events
	# count from the first sample after a start).
	sleep 2.5
	current=$(cat "$(worker_cgroup "$worker")/memory.current")
	probe_out=$("$probe" --timeout-s 600 "$pid") || {
		note "$worker run $run: probe failed: $probe_out"
		return 1
	}
	died=$(sed -n 's/^died //p' <<<"$probe_out")
	start=$(sed -n 's/^start //p' "$stamp" 2>/dev/null)
	end=$(sed -n 's/^end //p' "$stamp" 2>/dev/null)
	wait_until 300 has_events "$worker" policy-action $((actions + 1)) || return 1
	if [[ -z $start ]]; then
		note "$worker run $run: no burst stamp"
		return 1
	fi
	printf '%s\t%s\t%s\t%s\t%s\n' "$worker" "$run" "$(ns_to_ms $((died - start)))" \
		"$([[ -n $end ]] && ns_to_ms $((died - end)) || echo -)" \
		"$(awk -v c="$current" -v t="$threshold_mib" 'BEGIN { printf "%.1f", t - c / 1048576 }')" \
		>>"$out/policy-bench-reaction.tsv"
}

# stats COLUMN WORKER [DECIMALS]: "min median max n" of the tsv's COLUMN for
# WORKER (rounded to DECIMALS, default 0).
stats() {
	awk -F '\t' -v c="$1" -v w="$2" '$1 == w && $c != "-" { print $c }' "$out/policy-bench-reaction.tsv" |
		sort -g | awk -v d="${3:-0}" '{ v[NR] = $1 } END {
			if (NR == 0) { print "- - - 0"; exit }
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			f = "%." d "f"
			printf f " " f " " f " %d\n", v[1], m, v[NR], NR }'
}

# use_bursters MODEL_MIB: the two workers of the reaction benchmark.
use_bursters() {
	{
		echo "workers:"
		burster sampled "$1" "{max: 256M, swap_max: 0}" "memory.current > ${threshold_mib}M"
		burster events "$1" "{max: 256M, high: ${threshold_mib}M, swap_max: 0}" "memory.events.high > 0"
	} | use_workers bench.yaml
}

# calibrated_model_mib: the model size that leaves memory.current 1-2 MiB
# below the threshold (what a worker costs beyond its model, measured once).
calibrated_model_mib() {
	local probe_model=24 current
	use_bursters $probe_model
	fresh_daemon || return 1
	wait_until 600 has_events sampled ready 1 || return 1
	sleep 3
	current=$(cat "$(worker_cgroup sampled)/memory.current")
	note "calibration: memory.current $current with a ${probe_model} MiB model"
	awk -v c="$current" -v m=$probe_model -v t="$threshold_mib" \
		'BEGIN { printf "%d\n", t - (c / 1048576 - m) - 1.5 }'
}

bench_reaction() {
	local model
	reaction_config >"$main_config"
	model=$(calibrated_model_mib) || return 1
	note "reaction: model $model MiB, threshold $threshold_mib MiB, burst $burst_mib MiB"
	use_bursters "$model"
	: >"$out/policy-bench-reaction.tsv"
	fresh_daemon || return 1
	local daemon run w
	daemon=$(systemctl show -P MainPID infervisord)
	wait_until 600 has_events events ready 1 || return 1
	sleep 3
	if holds_open "$daemon" "$(worker_cgroup events)/memory.events"; then
		events_kind="event-driven (daemon holds memory.events open)"
	else
		events_kind="not watched: next sample or host-PSI wake-up"
	fi
	for ((run = 1; run <= runs; run++)); do
		for w in sampled events; do
			measure_once "$w" "$run" || note "$w run $run: no figure"
		done
	done
	systemctl stop infervisord
}

# ---- (b) idle cost -------------------------------------------------------------

# proc_cpu_ticks PID: utime + stime (fields 14 and 15 of /proc/PID/stat; the
# command name in field 2 may hold spaces, so count from its closing paren).
proc_cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
status_kib() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
# pinned_kib PID: the Rss of PID's locked mappings (VmLck counts the whole
# size of a locked-on-fault mapping, touched or not).
pinned_kib() {
	awk '/^Rss:/ { rss = $2 } /^VmFlags:/ && / lo( |$)/ { total += rss } END { print total + 0 }' "/proc/$1/smaps"
}
uptime_s() { cut -d' ' -f1 /proc/uptime; }

running_count() { ivd_journal INFERVISOR_EVENT=ready -o cat | grep -c . || true; }
all_ready() { (($(running_count) >= $1)); }

# cpu_percent TICKS T0 T1: TICKS of CPU time as a percentage of one core over
# the uptime interval T0..T1.
cpu_percent() {
	awk -v c="$1" -v hz="$(getconf CLK_TCK)" -v t0="$2" -v t1="$3" 'BEGIN { printf "%.2f", 100 * c / hz / (t1 - t0) }'
}
mib_of_kib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

bench_idle() { # COUNT
	local n=$1 daemon reference t0 t1 c0 c1 r0 r1 rss0 rss1
	cp "$main_config_saved" "$main_config"
	idle_workers_yaml "$n" | use_workers bench.yaml
	fresh_daemon || return 1
	wait_until 1200 all_ready "$n" || return 1
	sleep 5 # start-up done
	daemon=$(systemctl show -P MainPID infervisord)
	# earlyoom beside it over the same window, as Debian's package runs it
	# (/etc/default/earlyoom: -r 3600, its memory report hourly; its poll
	# interval is its own default, adaptive up to 1s).
	"$earlyoom" -r 3600 >/dev/null 2>&1 &
	reference=$!
	sleep 2
	t0=$(uptime_s) c0=$(proc_cpu_ticks "$daemon") r0=$(proc_cpu_ticks "$reference")
	rss0=$(status_kib "$daemon" VmRSS)
	sleep "$seconds"
	t1=$(uptime_s) c1=$(proc_cpu_ticks "$daemon") r1=$(proc_cpu_ticks "$reference")
	rss1=$(status_kib "$daemon" VmRSS)
	kill "$reference"
	wait "$reference" 2>/dev/null || true
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" \
		"$(cpu_percent $((c1 - c0)) "$t0" "$t1")" "$(cpu_percent $((r1 - r0)) "$t0" "$t1")" \
		"$(mib_of_kib "$rss0")" "$(mib_of_kib "$rss1")" \
		"$(mib_of_kib "$(status_kib "$daemon" VmHWM)")" \
		"$(awk -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.0f", t1 - t0 }')" \
		"$(mib_of_kib "$(pinned_kib "$daemon")")" >>"$out/policy-bench-idle.tsv"
	systemctl stop infervisord
}

# ---- report --------------------------------------------------------------------

report() {
	local interval
	interval=$(sed -n 's/^sample_interval: *//p' "$main_config_saved")
	echo "infervisord policy benchmark: $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo) MiB"
	echo
	echo "(a) reaction, threshold crossed -> worker dead (ms; $runs runs each; sample_interval 1s;"
	echo "    the worker sat $(stats 5 sampled 1 | cut -d' ' -f2) MiB (median) below the threshold, then allocated $burst_mib MiB)"
	printf '%-26s %-48s %17s %17s\n' rule "how the daemon sees it" "from burst start" "from burst end"
	printf '%-26s %-48s %17s %17s\n' "" "" "min/median/max" "min/median/max"
	local w rule kind s e s1 s2 s3 sn e1 e2 e3 en
	for w in sampled events; do
		if [[ $w == sampled ]]; then
			rule="memory.current > 48M" kind="sampled (every sample_interval)"
		else
			rule="memory.events.high > 0" kind=$events_kind
		fi
		read -r s1 s2 s3 sn < <(stats 3 "$w")
		read -r e1 e2 e3 en < <(stats 4 "$w")
		s="$s1/$s2/$s3 n=$sn" e="$e1/$e2/$e3 n=$en"
		printf '%-26s %-48s %17s %17s\n' "$rule" "$kind" "$s" "$e"
	done
	echo
	echo "(b) idle daemon: ${seconds}s per row; packaged config (sample_interval ${interval:-?}, default rules);"
	echo "    earlyoom 1.7 (Debian's, -r 3600 as its package runs it) beside it over the same window;"
	echo "    the daemon's VmRSS at the window's start and end (flat: no growth with time)"
	printf '%8s %14s %14s %9s %12s %10s %10s %10s\n' workers "daemon CPU %" "earlyoom CPU %" ratio \
		"VmRSS start" "VmRSS end" "VmHWM" "pinned"
	awk -F '\t' '{ printf "%8s %14s %14s %9s %12s %10s %10s %10s\n", $1, $2, $3,
		($3 > 0 ? sprintf("%.1fx", $2 / $3) : "-"), $4 " MiB", $5 " MiB", $6 " MiB", $8 " MiB" }' "$out/policy-bench-idle.tsv"
}

install_infervisor
[[ -x $earlyoom ]] || { echo "policy-bench: no reference earlyoom at $earlyoom (run-bench unpacks it)" >&2; exit 1; }
[[ -x $probe ]] || { echo "policy-bench: $probe missing: build it (ninja -C BUILD_DIR tests/bench/policy-reaction-probe)" >&2; exit 1; }
cp "$main_config" "$main_config_saved"
events_kind=unknown
note "reaction: $runs runs per rule"
bench_reaction || note "reaction benchmark incomplete"
: >"$out/policy-bench-idle.tsv"
for n in $counts; do
	note "idle: $n workers for ${seconds}s"
	bench_idle "$n" || note "idle benchmark with $n workers incomplete"
done
report | tee "$out/policy-bench.txt"
