#!/bin/bash
# Issue 28: the daemon's own memory on a small host. It locks what it uses
# (app/memory_lock.h): its executable whole (but its unwind tables),
# everything else as touched, the NSS modules not at all.
#  - Idle with the packaged main configuration and one worker: the daemon's
#    RSS, what of it is pinned, its threads and where the pages are (per
#    mapping), beside earlyoom's in the same boot (tests/vm/footprint.sh).
#    Figures for the README, in $VMTEST_RESULTS/footprint.txt; asserted: no
#    idle thread but the loop's own, and the daemon's RSS within
#    footprint.sh's margin of earlyoom's, and none of the NSS modules'
#    pages pinned. 161 does the same for the daemon
#    as the Debian package ships it (optimised, stripped). The daemon holds
#    the worker's statistics files open (read with pread at each sample), so
#    it raised its descriptor limit, and the worker has the unit's.
#  - Requests give their memory back: with 20 workers and metrics on, three
#    rounds of a config check (as nobody), a status of every worker, a
#    metrics scrape and a worker's history (as nobody: the daemon sends its
#    whole recording) leave the daemon's RSS within 1 MiB of where it was
#    before any request, and within footprint.sh's busy margin of earlyoom's
#    (issue 28's 10 MiB).
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
source "${BASH_SOURCE[0]%/*}/../footprint.sh"
at_exit systemctl stop infervisord
at_exit dump_state

main_config=$ivd_conf/infervisor.yaml
main_config_saved=/run/vmtest-102-main.yaml
daemon_pid() { systemctl show -P MainPID infervisord; }
# pinned_nss_kib PID: the Rss of PID's locked mappings of libnss_* modules.
pinned_nss_kib() {
	awk '/^[0-9a-f]+-[0-9a-f]+ / { nss = ($6 ~ /\/libnss_/) } /^Rss:/ { rss = $2 }
	     /^VmFlags:/ && nss && / lo( |$)/ { total += rss } END { print total + 0 }' "/proc/$1/smaps"
}
soft_nofile() { awk '/^Max open files/ { print $4 }' "/proc/$1/limits"; } # PID
# holds_stat_files PID WORKER: PID holds the worker's memory.stat open.
holds_stat_files() {
	local cgroup
	cgroup=$(worker_cgroup "$2")
	find "/proc/$1/fd" -lname "$cgroup/memory.stat" 2>/dev/null | grep -q .
}

idle_footprint_with_the_shipped_config() {
	install_infervisor
	use_workers footprint.yaml <<-YAML
		workers:
		  - name: one
		    command: [$ivd_example_worker]
		    notify: true
		    memory: {max: 64M}
	YAML
	fresh_daemon
	wait_until 120 has_events one ready 1
	local pid
	pid=$(daemon_pid)
	settle_rss "$pid"
	footprint_report "$pid" "infervisord (this build), packaged main config, 1 worker, idle"
	# The loop thread alone: background threads exist only while they work.
	assert_eq 1 "$(status_kib "$pid" Threads)" "the idle daemon's threads"
	# The policy reads each worker's statistics through held descriptors
	# (cgroup/stat_file_set.h), so the daemon raises its soft descriptor
	# limit (process/fd_limit.h); the worker keeps the unit's (1024).
	assert_cmd test "$(soft_nofile "$pid")" -gt 1024
	assert_eq "$(systemctl show -P LimitNOFILESoft infervisord)" "$(soft_nofile "$(main_pid one)")" \
		"the worker's soft descriptor limit"
	assert_cmd holds_stat_files "$pid" one
	# The NSS modules that the worker's start used (its dynamic uid's check)
	# are not locked (app/memory_lock.h): none of their pages is pinned.
	assert_eq 0 "$(pinned_nss_kib "$pid")" "KiB of the NSS modules pinned"
	earlyoom_beside "$pid" "infervisord (this build)"
}

# A main config as shipped, with the metrics listener on.
use_metrics_config() {
	cp "$main_config" "$main_config_saved"
	at_exit cp "$main_config_saved" "$main_config"
	sed -i 's/^# metrics:$/metrics:/; s/^#   listen: 127.0.0.1:9816$/  listen: 127.0.0.1:9816/' "$main_config"
	assert_file_contains "$main_config" "  listen: 127.0.0.1:9816"
}

requests_give_their_memory_back() {
	install_infervisor
	use_metrics_config
	{
		echo "workers:"
		local i
		for i in $(seq 1 20); do
			printf '  - name: w%02d\n    command: [%s, --model-mb, "1"]\n    notify: true\n    memory: {max: 32M}\n' "$i" "$ivd_example_worker"
		done
	} | use_workers footprint.yaml
	fresh_daemon
	wait_until 300 eval '(( $(ivd_journal INFERVISOR_EVENT=ready -o cat | grep -c .) >= 20 ))'
	local pid
	pid=$(daemon_pid)
	settle_rss "$pid"
	local before after
	before=$(status_kib "$pid" VmRSS)
	one_round() {
		setpriv --reuid=65534 --regid=65534 --clear-groups infervisorctl config check "$main_config" >/dev/null
		infervisorctl --no-pager status --json >/dev/null
		curl -sf http://127.0.0.1:9816/metrics >/dev/null
		setpriv --reuid=65534 --regid=65534 --clear-groups infervisorctl history w01 --json >/dev/null
	}
	for _ in 1 2 3 4; do assert_cmd one_round; done
	settle_rss "$pid"
	after=$(status_kib "$pid" VmRSS)
	footprint_report "$pid" "infervisord (this build), 20 workers, metrics on, after 4 rounds of requests"
	log "VmRSS before 4 rounds of config check + status --json + metrics scrape + history: $before KiB, after: $after KiB"
	assert_cmd test "$after" -le $((before + 1024))
	earlyoom_beside "$pid" "infervisord (this build), 20 workers, metrics on, after the requests" \
		"$footprint_busy_margin_kib"
}

run_scenario idle-daemon-beside-earlyoom idle_footprint_with_the_shipped_config
run_scenario requests-give-the-daemons-memory-back requests_give_their_memory_back
