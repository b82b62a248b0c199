#!/bin/bash
# Issue 3, scenario 1: two workers from the example config start, each in its
# own cgroup with the configured memory.max, memory.high, memory.swap.max and
# pids.max; `systemctl status infervisord` shows them in the tree.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

workers_in_their_cgroups() {
	install_infervisor
	use_workers demo.yaml <"/usr/share/doc/infervisor/examples/demo.yaml"
	# Only the steady worker's limits matter here; keep the leaky one leaking slowly.
	fresh_daemon
	wait_until 300 has_events chat ready 1
	local cg
	cg=$(worker_cgroup chat)
	assert_eq $((256 << 20)) "$(cat "$cg/memory.max")" "chat memory.max"
	assert_eq $((224 << 20)) "$(cat "$cg/memory.high")" "chat memory.high"
	assert_eq 0 "$(cat "$cg/memory.swap.max")" "chat memory.swap.max"
	assert_eq 64 "$(cat "$cg/pids.max")" "chat pids.max"
	assert_eq 1 "$(cat "$cg/memory.oom.group")" "chat memory.oom.group"
	# The workers live in the cgroup of their own unit, which systemd 252
	# marks as delegated (Delegate=yes), so the daemon has nothing to warn about.
	assert_contains "$(cat "/proc/$(main_pid chat)/cgroup")" "/system.slice/$ivd_workers_unit/workers/chat" "chat's cgroup"
	assert_eq 1 "$(python3 -c 'import os, sys; print(os.getxattr(sys.argv[1], "trusted.delegate").decode())' "$ivd_workers_cgroup")" "trusted.delegate of $ivd_workers_cgroup"
	local delegation_warnings
	# (journalctl -g exits 1 when nothing matches, like grep)
	delegation_warnings=$({ ivd_journal -g 'not marked as delegated' || true; } | wc -l)
	assert_eq 0 "$delegation_warnings" "delegation warnings in the daemon's journal"
	# The daemon itself stays in its unit's cgroup, which it leaves as
	# systemd made it (so systemd can always start a new daemon there); the
	# workers' unit's own process sits in the anchor leaf.
	assert_eq "$(systemctl show -P MainPID infervisord)" "$(cat "$ivd_service_cgroup/cgroup.procs")" "the daemon in its unit's cgroup"
	assert_eq "" "$(cat "$ivd_service_cgroup/cgroup.subtree_control")" "controllers the daemon enabled in its own cgroup"
	assert_eq "$(systemctl show -P MainPID "$ivd_workers_unit")" "$(cat "$ivd_workers_cgroup/anchor/cgroup.procs")" "the anchor leaf"
	# Both units as systemd reads them: no warning, no error.
	local verify
	verify=$(systemd-analyze verify infervisord.service "$ivd_workers_unit" 2>&1)
	assert_eq "" "$verify" "systemd-analyze verify"
	local status
	status=$(systemctl status "$ivd_workers_unit" --no-pager -l)
	assert_contains "$status" "─workers" "systemctl status tree"
	assert_contains "$status" "─chat" "systemctl status tree"
	assert_contains "$status" "infervisor-example-worker" "systemctl status tree"
	# Each worker's main process is in its own cgroup.
	assert_contains "$(cat "/proc/$(main_pid chat)/cgroup")" "/workers/chat" "chat's /proc/PID/cgroup"
	assert_eq "1" "$(ivd_journal INFERVISOR_WORKER=chat INFERVISOR_EVENT=started -o export | sed -n 's/^INFERVISOR_BORN_IN_CGROUP=//p' | tail -n1)" "born in its cgroup (clone3 CLONE_INTO_CGROUP)"
}
run_scenario workers-in-their-own-cgroups workers_in_their_cgroups
