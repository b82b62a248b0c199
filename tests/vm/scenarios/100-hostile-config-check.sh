#!/bin/bash
# Issue 10, defect 1: any local user may ask the daemon to check a
# configuration (`infervisorctl config check`, Validate). A text built to hit
# the slow paths of parsing and validation (thousands of shared dirs, unknown
# groups, workers, errors) is checked off the event loop within the limits of
# infervisor.yaml(5): the caller gets an answer or an error, the workers
# (one with a heartbeat watchdog) are not restarted, the daemon is not killed
# by systemd's watchdog, and other clients are answered throughout. Latencies
# are logged as figures, not asserted (the guest is emulated).
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

hostile=/var/tmp/hostile.yaml
figures=/var/tmp/hostile-figures

# write_hostile_config: ~380 KB. 1000 workers share one work dir (one error
# per pair before the fix) and name 10 unknown groups each (10,000 NSS
# lookups); one worker names one extra dir 4,000 times; one names 5,000
# unknown supplementary groups.
write_hostile_config() {
	{
		echo "workers:"
		local i
		for ((i = 0; i < 1000; i++)); do
			echo "  - {name: w$i, command: [/bin/true], memory: {max: 1G}, workdir: /srv/shared, supplementary_groups: [n${i}a, n${i}b, n${i}c, n${i}d, n${i}e, n${i}f, n${i}g, n${i}h, n${i}i, n${i}j]}"
		done
		echo "  - name: dirs"
		echo "    command: [/bin/true]"
		echo "    memory: {max: 1G}"
		echo "    extra_dirs:"
		for ((i = 0; i < 4000; i++)); do echo "      - path: /srv/x"; done
		echo "  - name: groups"
		echo "    command: [/bin/true]"
		echo "    memory: {max: 1G}"
		echo "    supplementary_groups:"
		for ((i = 0; i < 5000; i++)); do echo "      - nosuchgroup$i"; done
	} >"$hostile"
	chmod 0644 "$hostile"
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# poll_status: `infervisorctl status` as another user, over and over, until
# $figures/stop exists; one line per call: "rc milliseconds".
poll_status() {
	local start rc
	while [[ ! -e $figures/stop ]]; do
		start=$(now_ms)
		rc=0
		setpriv --reuid=65533 --regid=65533 --clear-groups infervisorctl status >/dev/null 2>&1 || rc=$?
		echo "$rc $(($(now_ms) - start))" >>"$figures/status"
	done
}

# check_as_nobody N: one hostile check as uid 65534; "rc milliseconds" into
# $figures/check-N, its output into $figures/check-N.out.
check_as_nobody() {
	local start rc=0
	start=$(now_ms)
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		infervisorctl config check "$hostile" >"$figures/check-$1.out" 2>&1 || rc=$?
	echo "$rc $(($(now_ms) - start))" >"$figures/check-$1"
}

summary() { # FILE: "n=N max=MS mean=MS" of the second column
	awk '{ n++; s += $2; if ($2 > m) m = $2 } END { printf "n=%d max=%dms mean=%dms", n, m, n ? s / n : 0 }' "$1"
}

hostile_check_spares_the_workers() {
	install_infervisor
	start_two_idle_workers hostile.yaml 10s
	local daemon_pid one_pid two_pid
	daemon_pid=$(systemctl show -P MainPID infervisord)
	one_pid=$(main_pid one)
	two_pid=$(main_pid two)
	write_hostile_config
	log "hostile config: $(wc -c <"$hostile") bytes"
	rm -rf "$figures"
	mkdir -p "$figures"

	poll_status &
	local poller=$!
	# Three at once: two are checked, the third is refused at once; then two
	# more one after the other (refused while abandoned checks still run).
	local i pids=()
	for i in 1 2 3; do
		check_as_nobody "$i" &
		pids+=($!)
	done
	wait "${pids[@]}"
	check_as_nobody 4
	check_as_nobody 5
	sleep 12 # the heartbeat watchdog (10s) would have fired by now
	touch "$figures/stop"
	wait "$poller"

	for i in 1 2 3 4 5; do
		log "check $i: rc ms = $(cat "$figures/check-$i"); $(head -c 300 "$figures/check-$i.out" | tr '\n' '|')"
		# Exit status 1 with errors or with "could not check": never a
		# connection reset, never a hang.
		assert_eq 1 "$(cut -d' ' -f1 "$figures/check-$i")" "exit status of check $i"
		assert_file_matches "$figures/check-$i.out" 'more error\(s\) not shown|could not check the configuration|has [0-9]+ items; at most' "check $i said why"
	done
	log "status calls during the checks: $(summary "$figures/status")"
	assert_eq 0 "$(awk '$1 != 0' "$figures/status" | wc -l)" "failed status calls"
	assert_ne 0 "$(wc -l <"$figures/status")" "status calls made"

	# Nothing restarted, nothing blocked.
	assert_eq "$daemon_pid" "$(systemctl show -P MainPID infervisord)" "the same daemon"
	assert_eq 0 "$(systemctl show -P NRestarts infervisord)" "daemon restarts"
	assert_eq "$one_pid" "$(main_pid one)" "one's pid"
	assert_eq "$two_pid" "$(main_pid two)" "two's pid"
	assert_eq 1 "$(event_count one started)" "one's starts"
	assert_eq 1 "$(event_count two started)" "two's starts"
	assert_eq 0 "$(event_count one policy-action)" "one's policy actions"
	assert_cmd kill -0 "$one_pid"
	assert_eq 0 "$(ivd_journal SYSLOG_IDENTIFIER=infervisord -o cat | grep -c 'event loop was blocked' || true)" "event loop blocked warnings"
	log "daemon VmHWM after the checks: $(grep VmHWM "/proc/$daemon_pid/status" | tr -s ' ')"
}
run_scenario hostile-config-check-by-nobody-spares-workers-and-clients hostile_check_spares_the_workers
