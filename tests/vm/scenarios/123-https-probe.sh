#!/bin/bash
# Issue 18, HTTPS: a real TLS server (openssl s_server -www, with a
# self-signed certificate made here) is loading until its `scheme: https`
# startup probe passes, and then `running`; an https liveness probe against a
# plain-HTTP port fails in the TLS handshake, kills that worker, and the
# journal says so. Guest time: ~30-60 s.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit dump_state

tls_dir=/etc/ivd-test-tls

make_certificate() {
	mkdir -p "$tls_dir"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
		-subj /CN=127.0.0.1 -keyout "$tls_dir/key.pem" -out "$tls_dir/cert.pem" 2>/dev/null
	chmod 0755 "$tls_dir"
	chmod 0644 "$tls_dir"/*.pem # the worker's user reads them; a test key
}

https_probe() {
	install_infervisor
	make_certificate
	use_workers https-probe.yaml <<-YAML
		workers:
		  - name: tls-server
		    command: [/usr/bin/openssl, s_server, -www, -accept, "18123",
		              -cert, $tls_dir/cert.pem, -key, $tls_dir/key.pem]
		    memory: {max: 64M}
		    probes:
		      startup: {kind: http, scheme: https, port: 18123, path: /health, interval: 1s,
		                timeout: 900ms}
		  - name: plain-server
		    command: [$ivd_example_worker, --http-port, "18124"]
		    memory: {max: 64M}
		    restart: {policy: never}
		    probes:
		      startup: {kind: tcp, port: 18124, interval: 1s, timeout: 500ms}
		      liveness: {kind: http, scheme: https, port: 18124, path: /health, interval: 2s,
		                 timeout: 1s, failure_threshold: 2}
	YAML
	fresh_daemon
	wait_until 300 has_events tls-server ready 1
	assert_contains "$(ivd_journal INFERVISOR_WORKER=tls-server INFERVISOR_EVENT=ready -o cat)" \
		"startup probe passed: HTTP 200" "the https startup probe passed"
	assert_contains "$(infervisorctl show tls-server)" \
		"startup GET https://127.0.0.1:18123/health: passing" "show names the https probe"
	assert_eq 200 "$(event_field tls-server probe-changed PROBE_HTTP_STATUS | head -n1)" \
		"the journal has the status read over TLS"

	wait_until 300 has_events plain-server probe-failed 1
	assert_eq liveness "$(event_field plain-server probe-failed PROBE | head -n1)" "liveness acted"
	assert_contains "$(event_field plain-server probe-failed PROBE_DETAIL | head -n1)" \
		"TLS handshake:" "it says the TLS handshake failed"
	wait_until 120 has_events plain-server exited 1
	assert_contains "$(event_field plain-server exited EXIT_REASON | head -n1)" \
		"killed: liveness probe failed 2 times in a row" "the exit reason names the probe"
	assert_eq 1 "$(ready_count tls-server)" "the TLS server kept running"
}
run_scenario https-probe https_probe
