#!/bin/bash
# Adoption benchmark (issue 14), a VM payload that reports figures and asserts
# nothing: for N idle example workers (notify, no model load), the time from
# the daemon's start (systemd's ExecMainStartTimestampMonotonic) to the last
# worker `ready` on a fresh start, and from the upgrade's re-execution
# (SIGUSR2; the daemon's "re-executing" line, just before execve) to the last
# worker `adopted`. A real model server's load time comes on top of the
# fresh start only.
#
#   tests/vm/run-vm --build-dir DIR --results DIR/vm-results/adoption-bench \
#       -- tests/vm/bench/adoption-bench.sh [N...]        (default: 1 20 100)
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord

counts=("$@")
((${#counts[@]})) || counts=(1 20 100)

started_usec() { systemctl show -P ExecMainStartTimestampMonotonic infervisord; }

# last_event_usec EVENT: monotonic time of the newest such event since the cursor.
last_event_usec() {
	ivd_journal INFERVISOR_EVENT="$1" -o export | sed -n 's/^__MONOTONIC_TIMESTAMP=//p' | tail -n1
}

events_at_least() { (($(ivd_journal INFERVISOR_EVENT="$1" -o cat | grep -c . || true) >= $2)); }


install_infervisor
printf '%-8s %-14s %-14s\n' workers fresh-start adoption | tee "$VMTEST_RESULTS/adoption-bench.txt"
for n in "${counts[@]}"; do
	{
		echo "workers:"
		for ((i = 0; i < n; i++)); do
			printf '  - name: w%d\n    command: [%s, --serve-interval-ms, "60000"]\n' "$i" "$ivd_example_worker"
			printf '    notify: true\n    memory: {max: 32M}\n'
		done
	} | use_workers bench.yaml
	fresh_daemon
	wait_until 1200 events_at_least ready "$n"
	fresh_ms=$((($(last_event_usec ready) - $(started_usec)) / 1000))
	ivd_cursor=$(journalctl -q -n 1 --show-cursor | sed -n 's/^-- cursor: //p')
	systemctl kill --kill-whom=main --signal=SIGUSR2 infervisord
	wait_until 1200 events_at_least adopted "$n"
	# -a: the export format carries binary fields; without it grep prints
	# "binary file matches" and the time would be 0.
	reexec_usec=$(ivd_journal SYSLOG_IDENTIFIER=infervisord -o export |
		grep -a -B40 '^MESSAGE=SIGUSR2: re-executing' | sed -n 's/^__MONOTONIC_TIMESTAMP=//p' | tail -n1)
	adopt_ms=$((($(last_event_usec adopted) - reexec_usec) / 1000))
	printf '%-8s %-14s %-14s\n' "$n" "${fresh_ms} ms" "${adopt_ms} ms" | tee -a "$VMTEST_RESULTS/adoption-bench.txt"
	systemctl stop infervisord
done
