#!/bin/bash
# Issue 18, scenario 1: a worker with an HTTP startup probe is `starting`
# (loading) for as long as its health endpoint answers 503, and `running`
# from the probe's first 200 on; the ready event says what passed.
# Guest time: ~40-60 s (a 15 s load, probed every second).
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit dump_state

# http_status PORT PATH: the status code of GET PATH on 127.0.0.1:PORT.
http_status() {
	timeout 10 bash -c 'exec 3<>/dev/tcp/127.0.0.1/$0 &&
		printf "GET $1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" >&3 &&
		head -n1 <&3' "$1" "$2" | awk '{print $2}'
}

worker_state() { # WORKER
	infervisorctl status --json | python3 -c 'import json, sys
for w in json.load(sys.stdin)["workers"]:
    if w["name"] == sys.argv[1]: print(w["state"])' "$1"
}

probe_gates_loading() {
	install_infervisor
	use_workers probe-loading.yaml <<-YAML
		workers:
		  - name: loader
		    command: [$ivd_example_worker, --http-port, "18120", --load-ms, "15000", --model-mb, "32"]
		    memory: {max: 128M}
		    probes:
		      startup: {kind: http, port: 18120, path: /health, interval: 1s, timeout: 500ms}
	YAML
	fresh_daemon
	wait_until 300 has_events loader started 1
	wait_until 120 eval '[[ $(http_status 18120 /health) == 503 ]]'
	# The endpoint says "loading": the worker is starting, its probe waiting.
	assert_eq starting "$(worker_state loader)" "state while /health is 503"
	assert_eq 0 "$(ready_count loader)" "no ready event while loading"
	assert_contains "$(infervisorctl status)" "startup waiting" "status shows the waiting probe"
	wait_until 300 has_events loader ready 1
	assert_eq 200 "$(http_status 18120 /health)" "/health once ready"
	assert_eq running "$(worker_state loader)" "state once the probe passed"
	assert_contains "$(ivd_journal INFERVISOR_WORKER=loader INFERVISOR_EVENT=ready -o cat)" \
		"startup probe passed: HTTP 200" "the ready event says what passed"
	assert_eq "started probe-changed ready" "$(event_sequence loader)" "events in order"
	assert_eq 200 "$(event_field loader probe-changed PROBE_HTTP_STATUS)" "journal has the status"
	assert_eq passing "$(event_field loader probe-changed PROBE_VERDICT)" "journal has the verdict"
	# The startup probe stops once passed: show says so.
	assert_contains "$(infervisorctl show loader)" "startup GET http://127.0.0.1:18120/health: passing (not probing)" "show"
}
run_scenario probe-gates-loading probe_gates_loading
