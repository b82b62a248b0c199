#!/bin/bash
# Issue 11, scenario 4: the temp-file trap closed by default. With the SHIPPED
# main configuration (private_tmp: true) and only a cap in the worker file, a
# worker that keeps its model under the hard-coded path /tmp/model.bin writes
# it into its own work dir's tmp (its private /tmp), and the model survives
# systemd-tmpfiles-clean with an aging rule that matches its path, /tmp.
# (An aging rule aimed at a work dir's tmp itself would still clean it: only
# the work dir is locked and excluded.) A worker with private_tmp: false,
# next to it, keeps the
# same file in the host's /tmp and loses it (exit 66): the trap is real here.
# Guest time ~40 s.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

aging_rule=/etc/tmpfiles.d/tmp.conf # masks /usr/lib/tmpfiles.d/tmp.conf
workdirs=/var/lib/infervisor/workers

age_everything_at_once() {
	cat >"$aging_rule" <<-EOF
		d /tmp 1777 root root 0
		x /tmp/vmtest-state.*
	EOF
	at_exit rm -f "$aging_rule"
}

model_under_tmp_survives() {
	install_infervisor
	systemctl stop infervisord
	rm -f /tmp/model.bin /tmp/shared-model.bin
	use_workers tmp.yaml <<-YAML
		workers:
		  - name: cache
		    command: [$ivd_example_worker, --tmp-file, /tmp/model.bin, --serve-interval-ms, "500"]
		    memory: {max: 64M}
		  - name: shared
		    command: [$ivd_example_worker, --tmp-file, /tmp/shared-model.bin, --serve-interval-ms, "500"]
		    memory: {max: 64M}
		    private_tmp: false
		    restart: {policy: never}
	YAML
	fresh_daemon
	wait_until 300 has_events cache ready 1
	wait_until 300 has_events shared ready 1
	wait_until 300 test -s "$workdirs/cache/tmp/model.bin"
	assert_fails test -e /tmp/model.bin
	assert_cmd test -s /tmp/shared-model.bin
	local cache_pid
	cache_pid=$(main_pid cache)

	age_everything_at_once
	systemctl start systemd-tmpfiles-clean.service || true
	log "systemd-tmpfiles-clean: $(systemctl show -P Result systemd-tmpfiles-clean.service)"
	assert_cmd test -s "$workdirs/cache/tmp/model.bin"
	assert_fails test -e /tmp/shared-model.bin

	# It re-reads the file on every request: five more after the clean-up,
	# and the same run; the sharing worker lost its model.
	local served
	served=$(served_count cache)
	wait_until 300 served_more_than cache $((served + 5))
	assert_eq 0 "$(event_count cache exited)" "cache's exits"
	assert_eq "$cache_pid" "$(main_pid cache)" "cache's pid"
	wait_until 300 has_events shared exited 1
	assert_eq 66 "$(event_field shared exited EXIT_CODE)" "shared's exit code (model vanished)"
}
run_scenario a-model-under-a-hard-coded-tmp-path-survives-tmpfiles-clean model_under_tmp_survives
