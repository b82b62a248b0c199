#!/bin/bash
# Issue 16: a third-party Varlink implementation talks to the live daemon.
# The Go client built with Debian's varlink-go from our interface file
# (tests/varlink-go) parses the description the daemon serves and calls List,
# as root and as an unprivileged user. Guest time: ~20 s.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

client=$VMTEST_BUILD_DIR/tests/varlink-go/varlink-go-client

go_client_lists_workers() {
	if [[ ! -x $client ]]; then
		fail "$client was not built: install golang-go varlink-go golang-github-varlink-go-dev and rebuild"
		return 1
	fi
	install_infervisor
	use_workers go-client.yaml <<-YAML
		workers:
		  - name: served
		    command: [$ivd_example_worker, --serve-interval-ms, "1000"]
		    notify: true
		    memory: {max: 64M}
	YAML
	fresh_daemon
	wait_until 300 has_events served ready 1
	local out
	out=$("$client" /run/infervisor/io.infervisor)
	assert_contains "$out" "interface io.infervisor.supervisor" "the served description, parsed by varlink-go"
	assert_contains "$out" "served running" "List through varlink-go's bindings"
	out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$client" /run/infervisor/io.infervisor)
	assert_contains "$out" "served running" "List as nobody"
}
run_scenario varlink-go-client-lists-workers go_client_lists_workers
