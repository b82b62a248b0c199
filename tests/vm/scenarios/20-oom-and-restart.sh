#!/bin/bash
# Issue 3, scenario 2: a worker that allocates past its memory.max is
# OOM-killed inside its own cgroup; its sibling and the daemon are untouched;
# the daemon records the OOM kill as the reason and restarts it by policy; the
# crash loop stops at the start limit with state `failed`.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

oom_kill_stays_in_its_cgroup() {
	install_infervisor
	use_workers demo.yaml <"/usr/share/doc/infervisor/examples/demo.yaml"
	fresh_daemon
	local daemon_pid chat_pid
	daemon_pid=$(systemctl show -P MainPID infervisord)
	wait_until 300 has_events chat ready 1
	chat_pid=$(main_pid chat)
	# leaky: 96M cap, leaks 16 MB/s; 3 starts allowed in 5 minutes.
	wait_until 900 has_events leaky failed 1
	assert_eq 3 "$(event_count leaky started)" "leaky starts"
	assert_eq 3 "$(event_count leaky oom-killed)" "leaky OOM kills recorded"
	assert_eq 2 "$(event_count leaky restarting)" "leaky restarts"
	local reasons
	reasons=$(ivd_journal INFERVISOR_WORKER=leaky INFERVISOR_EVENT=exited -o export | sed -n 's/^INFERVISOR_EXIT_REASON=//p' | sort -u)
	assert_eq "oom-killed (memory.max reached)" "$reasons" "exit reason"
	# The kernel chose its victim inside leaky's cgroup, every time.
	local kernel_kills
	kernel_kills=$(journalctl -k -q --no-pager --cursor="$ivd_cursor" | grep -c "oom-kill:.*oom_memcg=/system.slice/$ivd_workers_unit/workers/leaky" || true)
	assert_ne 0 "$kernel_kills" "kernel OOM kills in leaky's memcg"
	assert_eq 0 "$(journalctl -k -q --no-pager --cursor="$ivd_cursor" | grep 'oom-kill:' | grep -vc 'workers/leaky' || true)" "OOM kills elsewhere"
	# Sibling and daemon untouched.
	assert_eq "$chat_pid" "$(main_pid chat)" "chat's pid"
	assert_eq 1 "$(event_count chat started)" "chat starts"
	assert_cmd kill -0 "$chat_pid"
	assert_eq "$daemon_pid" "$(systemctl show -P MainPID infervisord)" "daemon pid"
	assert_eq 0 "$(systemctl show -P NRestarts infervisord)" "service restarts"
	# chat kept serving while leaky was being killed.
	assert_ne 0 "$(journalctl -q --no-pager --cursor="$ivd_cursor" -t infervisor-worker-chat | grep -c 'served request' || true)" "chat served"
	# No leftover cgroup for the failed worker.
	assert_fails test -d "$(worker_cgroup leaky)"
}
run_scenario oom-kill-stays-in-its-cgroup-and-start-limit-stops-the-loop oom_kill_stays_in_its_cgroup
