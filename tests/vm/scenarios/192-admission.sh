#!/bin/bash
# Issue 13, scenario 2: admission. Sizes are fractions of MemAvailable (A)
# measured on the idle guest.
#   first   memory.reserve 50% of A, holds a model of 30% of A
#   second  memory.reserve 60% of A: while first runs, the host can give
#           about A - 30% (used by first) - 20% (reserved by first, unused)
#           = 50% of A: it waits in state `waiting`, journaled with the
#           numbers; when first stops it is admitted and starts.
#   bold    then, with second running: memory.reserve larger than the
#           guest, admission: overcommit: it starts at once, journaled as
#           an overcommitted admission.
# Checked by order and outcome, never by time. Guest time: about 30-60 s.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"

mem_available_mib() { awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo; }
# status_field WORKER FIELD (status exits 3 for a worker that is not
# running, a waiting one too).
status_field() {
	local json
	json=$(infervisorctl status --json "$1") || [[ $? == 3 ]]
	python3 -c 'import json, sys; print(json.load(sys.stdin)["workers"][0][sys.argv[1]])' "$2" <<<"$json"
}
monotonic_of() { # WORKER EVENT: the journal's monotonic time of its first such event
	ivd_journal INFERVISOR_WORKER="$1" INFERVISOR_EVENT="$2" -o export |
		sed -n 's/^__MONOTONIC_TIMESTAMP=//p' | head -n1
}

a_worker_that_does_not_fit_waits() {
	install_infervisor
	at_exit systemctl stop infervisord
	at_exit dump_state
	echo "workers: []" | use_workers admission.yaml
	fresh_daemon
	local avail
	avail=$(mem_available_mib)
	log "MemAvailable idle: $avail MiB"
	use_workers admission.yaml <<-YAML
		workers:
		  - name: first
		    command: [$ivd_example_worker, --model-mb, "$((avail * 30 / 100))", --serve-interval-ms, "500"]
		    notify: true
		    memory: {max: 2G, reserve: $((avail * 50 / 100))M}
	YAML
	fresh_daemon
	wait_until 300 has_events first ready 1
	cat >>"$ivd_conf/workers.d/admission.yaml" <<-YAML
		  - name: second
		    command: [$ivd_example_worker, --serve-interval-ms, "500"]
		    notify: true
		    memory: {max: 2G, reserve: $((avail * 60 / 100))M}
	YAML
	assert_cmd infervisord --check-config
	systemctl reload infervisord
	wait_until 120 has_events second waiting 1
	assert_eq waiting "$(status_field second state)" "second's state"
	assert_contains "$(status_field second state_reason)" "needs " "second's reason"
	local text
	text=$(infervisorctl status second) || assert_eq 3 "$?" "status exit code of a waiting worker"
	assert_contains "$text" "waiting (needs "
	log "waiting: $(ivd_journal INFERVISOR_WORKER=second INFERVISOR_EVENT=waiting -o cat)"
	assert_eq "$((avail * 60 / 100 << 20))" "$(event_field second waiting NEEDS_BYTES)" "needs"
	assert_cmd test "$(event_field second waiting CAN_GIVE_BYTES)" -lt "$((avail * 60 / 100 << 20))"
	assert_cmd test "$(event_field second waiting RESERVED_UNUSED_BYTES)" -gt 0
	assert_eq 0 "$(event_count second started)" "second's starts while first runs"

	# Still waiting a while later (the recheck finds no more room), until
	# first stops.
	sleep 5
	assert_eq waiting "$(status_field second state)" "second's state before first stops"
	assert_cmd infervisorctl stop first
	wait_until 120 has_events second ready 1
	assert_eq "waiting admitted started ready" "$(event_sequence second)" "second's events"
	assert_cmd test "$(monotonic_of first stopped)" -lt "$(monotonic_of second admitted)"
	log "admitted: $(ivd_journal INFERVISOR_WORKER=second INFERVISOR_EVENT=admitted -o cat)"
	assert_cmd test "$(event_field second admitted WAITED_MS)" -gt 0

	# bold does not wait: it was told to overcommit.
	cat >>"$ivd_conf/workers.d/admission.yaml" <<-YAML
		  - name: bold
		    command: [$ivd_example_worker, --serve-interval-ms, "500"]
		    notify: true
		    admission: overcommit
		    memory: {max: 4G, reserve: 4G}
	YAML
	systemctl reload infervisord
	wait_until 120 has_events bold ready 1
	assert_eq 1 "$(event_field bold admitted OVERCOMMIT)" "bold overcommitted"
	assert_eq 0 "$(event_count bold waiting)" "bold's waits"
	log "overcommit: $(ivd_journal INFERVISOR_WORKER=bold INFERVISOR_EVENT=admitted -o cat)"

	# Issue 27, point 7: a reserve that can never fit is warned about at
	# check time and by reload; its wait reads in human sizes, in one short
	# line; a start of it says it waits.
	cat >>"$ivd_conf/workers.d/admission.yaml" <<-YAML
		  - name: huge
		    command: [$ivd_example_worker]
		    memory: {max: 1T, reserve: 1T}
	YAML
	local out err=/run/ctl-reload.err rc=0
	out=$(infervisord --check-config)
	log "check: $out"
	assert_contains "$out" "warning: worker 'huge': memory.reserve 1T can never fit on this host (RAM "
	assert_cmd infervisorctl reload 2>"$err"
	assert_file_contains "$err" "warning: worker 'huge': memory.reserve 1T can never fit"
	wait_until 120 has_events huge waiting 1
	local reason
	reason=$(status_field huge state_reason)
	log "huge waits: $reason"
	assert_contains "$reason" "needs 1T; the host can give "
	assert_fails grep -q '[0-9]K' <<<"$reason"
	assert_cmd test "${#reason}" -lt 100
	infervisorctl start huge 2>"$err" || rc=$?
	assert_eq 1 "$rc" "exit code of start huge"
	assert_file_contains "$err" "infervisorctl: huge: not started: waiting"
	assert_file_contains "$err" "needs 1T; the host can give"
}

run_scenario a-worker-that-does-not-fit-waits-then-starts-when-another-stops a_worker_that_does_not_fit_waits
