#!/bin/bash
# Issue 13, scenario 3: `infervisorctl suspend` and `resume` by hand, with
# zram swap. A worker holding a 96 MiB model (resident, touched on every
# request) is suspended: its cgroup is frozen, its memory is pushed out to
# swap (memory.reclaim; its swap_max of 0 is lifted meanwhile), status says
# `suspended (infervisorctl)` and it serves nothing. Resumed, the same process
# counts on from where it stopped, with its swap cap back. An unprivileged
# caller may do neither. Suspended again, it stays so across an in-place
# re-execution of the daemon (SIGUSR2) until resumed by hand. A stop of a
# suspended worker is a clean stop.
# Checked by order and outcome, never by time. Guest time: about 60-100 s.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"

frozen() { [[ $(sed -n 's/^frozen //p' "$(worker_cgroup "$1")/cgroup.events") == 1 ]]; }
# status_field WORKER KEY: a key of the worker in `infervisorctl status --json`.
# (Exit status 3: the worker is not running, e.g. suspended; see infervisorctl(1).)
status_field() {
	local json
	json=$(infervisorctl status --json "$1") || [[ $? == 3 ]]
	python3 -c 'import json, sys; print(json.load(sys.stdin)["workers"][0][sys.argv[1]])' "$2" <<<"$json"
}
state_of() { status_field "$1" state; }
# served_now WORKER: K of its last STATUS=served K requests, as the daemon has it.
served_now() { status_field "$1" status_text | sed -n 's/^served \([0-9]*\) requests$/\1/p'; }
served_now_more_than() { (($(served_now "$1") > $2)); }
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
# reexecuted N: the daemon said N times that it re-executed in place.
reexecuted() {
	local n
	n=$(ivd_journal SYSLOG_IDENTIFIER=infervisord -o cat | grep -c "re-executed in place" || true)
	((n >= $1))
}

suspend_and_resume_by_hand() {
	install_infervisor
	if ! swapon --show=NAME --noheadings | grep -q .; then
		zram_swap_on
		at_exit zram_swap_off
	fi
	at_exit systemctl stop infervisord
	at_exit dump_state
	use_workers suspend.yaml <<-YAML
		workers:
		  - name: batch
		    command: [$ivd_example_worker, --model-mb, "96", --touch-model, --serve-interval-ms, "200"]
		    notify: true
		    watchdog: 20s
		    memory: {max: 256M}
		    rules:   # only what is done by hand acts on it
		      - {name: runaway-growth, enabled: false}
		      - {name: memory-pressure, enabled: false}
	YAML
	fresh_daemon
	wait_until 300 has_events batch ready 1
	wait_until 120 served_more_than batch 3
	local cg pid
	cg=$(worker_cgroup batch)
	pid=$(main_pid batch)
	assert_eq 0 "$(cat "$cg/memory.swap.max")" "memory.swap.max before"

	local rc=0
	nobody infervisorctl suspend batch >/dev/null 2>&1 || rc=$?
	assert_eq 5 "$rc" "exit code of an unprivileged suspend"

	assert_cmd infervisorctl suspend batch
	# It answers once the memory is out, frozen.
	assert_cmd frozen batch
	assert_eq suspended "$(state_of batch)" "state"
	local status rc=0
	status=$(infervisorctl status batch) || rc=$?
	assert_eq 3 "$rc" "status exit code of a suspended worker (not running)"
	assert_contains "$status" "suspended (infervisorctl)"
	assert_eq max "$(cat "$cg/memory.swap.max")" "memory.swap.max while suspended"
	wait_until 60 has_events batch suspended 1
	assert_eq memory.reclaim "$(event_field batch suspended RECLAIM_METHOD)" "reclaim method"
	assert_eq 1 "$(event_field batch suspended FROZEN)" "frozen before the reclaim"
	local reclaimed swapped
	reclaimed=$(event_field batch suspended BYTES_RECLAIMED)
	swapped=$(event_field batch suspended SWAP_CURRENT)
	log "suspend: $(ivd_journal INFERVISOR_WORKER=batch INFERVISOR_EVENT=suspended -o cat)"
	# Most of its 96 MiB model went out, into swap.
	assert_cmd test "$reclaimed" -gt $((64 << 20))
	assert_cmd test "$swapped" -gt $((64 << 20))

	# Frozen, it serves nothing; its watchdog does not end it meanwhile.
	local before
	before=$(served_now batch)
	sleep 5
	assert_eq "$before" "$(served_now batch)" "requests served while suspended"
	assert_eq 0 "$(event_count batch exited)" "exits while suspended"

	rc=0
	nobody infervisorctl resume batch >/dev/null 2>&1 || rc=$?
	assert_eq 5 "$rc" "exit code of an unprivileged resume"
	assert_cmd infervisorctl resume batch
	assert_fails frozen batch
	assert_eq 0 "$(cat "$cg/memory.swap.max")" "memory.swap.max after the resume"
	assert_ne suspended "$(state_of batch)" "state after the resume"
	wait_until 60 has_events batch resumed 1
	assert_eq infervisorctl "$(event_field batch resumed SUSPENDED_BY)" "suspended by"
	log "resume: $(ivd_journal INFERVISOR_WORKER=batch INFERVISOR_EVENT=resumed -o cat)"
	# The same process counts on: the next request is the one after the last.
	wait_until 120 served_now_more_than batch $((before + 3))
	assert_eq "$pid" "$(main_pid batch)" "main pid"
	assert_eq "started ready suspended resumed" "$(event_sequence batch)" "batch's events"

	# A suspension outlives an in-place re-execution (an upgrade): the new
	# image adopts the worker still frozen and suspended by hand, its swap
	# cap still lifted, until it is resumed by hand.
	assert_cmd infervisorctl suspend batch
	wait_until 60 has_events batch suspended 2
	local daemon
	daemon=$(systemctl show -P MainPID infervisord)
	systemctl kill --kill-whom=main --signal=SIGUSR2 infervisord
	wait_until 300 reexecuted 1
	wait_until 120 has_events batch adopted 1
	assert_eq "$daemon" "$(systemctl show -P MainPID infervisord)" "the daemon's pid (re-executed in place)"
	assert_eq suspended "$(event_field batch adopted STATE)" "state adopted in"
	assert_cmd frozen batch
	assert_eq suspended "$(state_of batch)" "state after the re-execution"
	rc=0
	status=$(infervisorctl status batch) || rc=$?
	assert_eq 3 "$rc" "status exit code after the re-execution"
	assert_contains "$status" "suspended (infervisorctl)"
	assert_eq max "$(cat "$cg/memory.swap.max")" "memory.swap.max while suspended across the re-execution"
	before=$(served_now batch)
	sleep 5
	assert_eq "$before" "$(served_now batch)" "requests served while suspended after the re-execution"
	assert_eq 1 "$(event_count batch resumed)" "resumes until resumed by hand"
	assert_cmd infervisorctl resume batch
	assert_fails frozen batch
	assert_eq 0 "$(cat "$cg/memory.swap.max")" "memory.swap.max (configured) after the resume"
	wait_until 60 has_events batch resumed 2
	wait_until 120 served_now_more_than batch $((before + 3))
	assert_eq "$pid" "$(main_pid batch)" "main pid after the re-execution"
	assert_eq "started ready suspended resumed suspended adopted resumed" "$(event_sequence batch)" \
		"batch's events across the re-execution"

	# A stop of a suspended worker thaws it: it exits on its SIGTERM.
	assert_cmd infervisorctl suspend batch
	assert_cmd infervisorctl stop batch
	wait_until 60 has_events batch exited 1
	assert_eq 0 "$(event_field batch exited EXIT_CODE)" "exit code after a stop while suspended"
	assert_eq 0 "$(event_count batch stop-escalated)" "stop escalations"
}

run_scenario suspend-and-resume-by-hand suspend_and_resume_by_hand
