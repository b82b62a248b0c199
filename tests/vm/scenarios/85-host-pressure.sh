#!/bin/bash
# Issue 5, scenario 3: with zram swap and three workers whose models together
# do not fit in the guest, a host rule on swap-in picks the low-priority
# worker, kills it, and the host recovers.
#
# The workers read their whole model on every request (--touch-model), as an
# inference pass reads all its weights, so once the models overcommit memory
# every pass swaps pages back in: the host thrashes. Their sizes are fractions
# of MemAvailable measured just before they start, so the overcommit is the
# same whatever the guest's own footprint:
#   guard  15%  protected, and the lowest priority (-10): chosen if protection
#               were ignored
#   high   60%  priority 10, the largest: chosen if priority were ignored
#   low    45%  priority 0: the victim; without it the others fit (75%)
# The outcome is checked by order, never by time: the rule's action hits low
# and only low; afterwards swap-in stops (high and guard each read their whole
# model several times over without the host swapping anything back in) and
# the host's memory pressure falls. While high and guard page back in, the
# rule must not take them for the next victims: host_settle covers that.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"

main_config=$ivd_conf/infervisor.yaml
main_config_saved=/run/vmtest-85-host-pressure-main.yaml

# A main config with one host rule and no worker rules, so that nothing but
# the host rule can act. Workers may swap (the packaged default is swap_max: 0).
use_host_rule_config() {
	cp "$main_config" "$main_config_saved"
	at_exit cp "$main_config_saved" "$main_config"
	cat >"$main_config" <<-YAML
		log_level: info
		control_group: infervisor
		dry_run: false
		sample_interval: 1s
		# Long enough for high and guard to page back in after low's kill,
		# even under emulation on a busy host: no second victim then.
		host_settle: 10m
		defaults:
		  user: infervisor-worker
		  memory: {swap_max: max}
		  restart: {policy: always, backoff_initial: 1s}
		  rules: []
		host_rules:
		  - name: host-thrash
		    when: host.swap.in > 50 for 5s
		    action: kill
		    then: park
	YAML
}

# thrasher NAME MODEL_MIB PRIORITY [MORE YAML LINES]: a worker entry.
thrasher() {
	cat <<-YAML
		  - name: $1
		    command: [$ivd_example_worker, --model-mb, "$2", --touch-model, --serve-interval-ms, "500"]
		    notify: true
		    priority: $3
		    memory: {max: 2G, swap_max: 2G}
	YAML
	if (($# > 3)); then printf '    %s\n' "${@:4}"; fi
}

mem_available_mib() { awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo; }
host_pswpin() { awk '$1 == "pswpin" { print $2 }' /proc/vmstat; }
host_memory_some_avg10() { sed -n 's/^some avg10=\([0-9.]*\) .*/\1/p' /proc/pressure/memory; }

# swap_in_during_passes N: how many pages the host swapped in while high and
# guard each served N more requests (each one a pass over its whole model);
# fails if they have not after 10 minutes (a hang guard).
swap_in_during_passes() {
	local before high guard deadline=$((SECONDS + 600))
	before=$(host_pswpin)
	high=$(served_count high)
	guard=$(served_count guard)
	until (($(served_count high) >= high + $1 && $(served_count guard) >= guard + $1)); do
		((SECONDS < deadline)) || return 1
		sleep 1
	done
	echo $(($(host_pswpin) - before))
}

# The host is quiet when a whole round of passes swapped (almost) nothing in:
# a few stray pages of other processes coming back are allowed.
swap_in_quiet() {
	local pages
	pages=$(swap_in_during_passes 3) || return 1
	log "pages swapped in while high and guard each served 3 requests: $pages"
	((pages <= 256))
}

# daemon_major_faults PID: majflt, field 12 of /proc/PID/stat (counted after
# the ")" that ends the command name, which may hold spaces).
daemon_major_faults() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $10 }'; }

pressure_below() { # PERCENT
	awk -v now="$(host_memory_some_avg10)" -v limit="$1" 'BEGIN { exit !(now < limit) }'
}

host_pressure_picks_the_low_priority_worker() {
	install_infervisor
	if ! swapon --show=NAME --noheadings | grep -q .; then
		zram_swap_on 1G
		at_exit zram_swap_off
	fi
	# Clean-up runs last-registered first: the state is recorded, then the
	# workers stop, and only then does their swap go.
	at_exit systemctl stop infervisord
	at_exit dump_state
	use_host_rule_config
	echo "workers: []" | use_workers host-pressure.yaml # none yet: measure the idle host
	fresh_daemon
	local avail
	avail=$(mem_available_mib)
	log "MemAvailable with the daemon idle: $avail MiB; swap: $(swapon --show=NAME,SIZE --noheadings)"
	{
		echo "workers:"
		thrasher guard $((avail * 15 / 100)) -10 "protected: true"
		thrasher high $((avail * 60 / 100)) 10
		thrasher low $((avail * 45 / 100)) 0
	} | use_workers host-pressure.yaml
	cat "$ivd_conf/workers.d/host-pressure.yaml"
	fresh_daemon
	# The daemon acts in the thrash only if its own pages are not part of it.
	local daemon_pid
	daemon_pid=$(systemctl show -P MainPID infervisord)
	assert_file_matches "/proc/$daemon_pid/status" '^VmLck:[[:space:]]*[1-9]'
	wait_until 600 has_events guard ready 1
	wait_until 600 has_events high ready 1
	local -A pids
	pids[guard]=$(main_pid guard)
	pids[high]=$(main_pid high)
	# What the lock is for (issue 28): the daemon's pages are not part of
	# the thrash. It has started its workers (code it had never run, read in
	# now) and still has to act and handle low's exit: that must not make
	# it wait for a page read from disk or swap.
	local faults_before
	faults_before=$(daemon_major_faults "$daemon_pid")
	wait_until 1200 has_events low exited 1
	# One daemon throughout: a restart (a watchdog kill in the thrash, say)
	# would start every worker anew and forget that low was parked.
	assert_eq "$daemon_pid" "$(systemctl show -P MainPID infervisord)" "daemon pid"
	assert_eq 0 "$(systemctl show -P NRestarts infervisord)" "daemon restarts"

	# The rule acted once, on low, and killed it for good.
	log "rule fired: $(ivd_journal INFERVISOR_EVENT=policy-action -o cat)"
	assert_eq 1 "$(ivd_journal INFERVISOR_EVENT=policy-action -o cat | grep -c .)" "policy actions"
	assert_eq host-thrash "$(event_field low policy-action RULE)" "rule"
	assert_eq kill "$(event_field low policy-action ACTION)" "action"
	assert_eq park "$(event_field low policy-action THEN)" "then"
	assert_eq "done" "$(event_field low policy-action RESULT)" "result"
	assert_eq 0 "$(event_field low policy-action VICTIM_PRIORITY)" "victim priority"
	assert_eq 600000 "$(event_field low policy-action HOST_SETTLE_MS)" "host rules settle for"
	assert_eq SIGKILL "$(event_field low exited EXIT_SIGNAL)" "low's exit signal"
	local swap_in_at_action pressure_at_action
	swap_in_at_action=$(event_field low policy-action HOST_SWAP_IN_PAGES_PER_SEC)
	pressure_at_action=$(event_field low policy-action HOST_MEMORY_PRESSURE_SOME_AVG10_PCT)
	log "at the action: swap-in $swap_in_at_action pages/s, memory some avg10 $pressure_at_action%"
	assert_cmd awk -v v="$swap_in_at_action" 'BEGIN { exit !(v > 50) }'
	wait_until 300 cgroup_gone low
	log "the daemon's major page faults: $faults_before before the thrash, $(daemon_major_faults "$daemon_pid") after the action"
	assert_eq "$faults_before" "$(daemon_major_faults "$daemon_pid")" "the daemon's major page faults in the thrash"
	assert_contains "$(event_sequence low)" "policy-action:host-thrash exited" "low's events"
	assert_eq 1 "$(event_count low started)" "low's starts (parked, not restarted)"

	# The host recovers: high and guard read their whole models again and
	# again without swapping in, and memory pressure falls.
	wait_until 900 swap_in_quiet
	log "memory some avg10 after recovery: $(host_memory_some_avg10)%"
	if awk -v v="$pressure_at_action" 'BEGIN { exit !(v >= 2) }'; then
		wait_until 600 pressure_below "$(awk -v v="$pressure_at_action" 'BEGIN { print v / 2 }')"
	fi

	# The protected and the high-priority workers: never acted on, same runs,
	# still serving.
	local w
	for w in guard high; do
		assert_eq 0 "$(event_count "$w" policy-action)" "$w's policy actions"
		assert_eq 1 "$(event_count "$w" started)" "$w's starts"
		assert_eq "${pids[$w]}" "$(main_pid "$w")" "$w's pid"
		assert_cmd kill -0 "${pids[$w]}"
	done
	assert_eq 0 "$(kernel_oom_kills)" "kernel OOM kills"
	assert_eq active "$(systemctl is-active infervisord)" "service state"
}
run_scenario host-pressure-kills-the-low-priority-worker-and-the-host-recovers host_pressure_picks_the_low_priority_worker
