#!/bin/bash
# Transparent checkpoints with criu (`checkpoint: {method: criu}`) on Debian's
# 6.1 kernel and criu 3.17:
#  0. with the packaged unit, whose seccomp filters keep criu from dumping
#     anything, the preflight refuses before criu runs, the journal says how
#     to fix it (the drop-in etc/examples/criu.conf), and the worker is killed;
#  then with that drop-in installed:
#  1. the example worker, which writes no checkpoint of its own, is dumped
#     by a rule with `action: checkpoint, then: park`, and restored when a
#     reload without that rule starts it again: its in-memory served count
#     goes on from where the dump froze it (not from a file: it is never given INFERVISOR_RESTORE_FROM), as a
#     child of the daemon, in its own fresh cgroup with its limits;
#  1b. an image dumped under another identity than the worker's now (a
#     supplementary group added after the dump) is not restored: the run
#     starts fresh, and checkpoint-failed says why;
#  1c. the attack of issue 26 (defect 1): a worker holds $WORKDIR/f, is
#     dumped with --leave-running, renames a symlink to a root-only file of
#     the same size over f and exits; the restart's criu restore reopens "f"
#     as root, but the daemon finds the restored process holding a file the
#     worker never held, kills it before it runs, deletes the image, says so
#     in the journal, and the worker starts fresh;
#  2. a worker with an established TCP connection is refused by the preflight
#     (criu would need --tcp-established): the journal says why, and the
#     fallback is the kill a late cooperative worker gets.
# Guest time: about 90 s for the three (86 s measured, TCG, load ~10).
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

store=/var/lib/infervisor/checkpoints
dropin=/etc/systemd/system/infervisord.service.d/criu.conf

use_criu_dropin() {
	install -D -m 644 "$VMTEST_SRC_DIR/etc/examples/criu.conf" "$dropin"
	at_exit systemctl daemon-reload
	at_exit rm -f "$dropin"
	systemctl daemon-reload
}

no_default_rules() {
	cat <<-YAML
		    rules:
		      - {name: runaway-growth, enabled: false}
		      - {name: memory-pressure, enabled: false}
	YAML
}

# served_around_restore WORKER: "K N", K the last count the worker printed
# before its first criu restore began, N the first it printed after it.
# (The daemon's and the worker's journal lines, in the order journald got
# them; the dump stops the worker, so nothing it prints comes after.)
served_around_restore() {
	journalctl -q --no-pager --cursor="$ivd_cursor" -o cat \
		SYSLOG_IDENTIFIER="infervisor-worker-$1" + INFERVISOR_WORKER="$1" INFERVISOR_EVENT=checkpoint-restoring |
		awk '
			/restoring checkpoint .* with criu/ { restoring = 1; next }
			match($0, /served request [0-9]+/) {
				n = substr($0, RSTART + 15, RLENGTH - 15)
				if (!restoring) last = n
				else { print last, n; exit }
			}'
}
served_after_restore() { [[ $(served_around_restore "$1" | wc -w) == 2 ]]; }

# worker_said WORKER TEXT: the worker printed TEXT since the daemon started.
worker_said() {
	journalctl -q --no-pager --cursor="$ivd_cursor" -t "infervisor-worker-$1" -o cat | grep -qF "$2"
}

the_packaged_units_seccomp_is_refused_with_the_remedy() {
	install_infervisor
	rm -rf "${store:?}/sandboxed"
	{
		cat <<-YAML
			workers:
			  - name: sandboxed
			    command: [$ivd_example_worker, --serve-interval-ms, "200"]
			    notify: true
			    memory: {max: 96M}
			    checkpoint: {method: criu, timeout: 60s}
		YAML
		no_default_rules
		cat <<-YAML
			      - {name: late, when: "runtime > 3s", action: checkpoint, then: park}
		YAML
	} | use_workers criu.yaml
	fresh_daemon
	wait_until 300 has_events sandboxed parked 1
	local message
	message=$(ivd_journal INFERVISOR_WORKER=sandboxed INFERVISOR_EVENT=checkpoint-failed -o cat | tail -n1)
	log "journal: $message"
	assert_eq criu-refused "$(event_field sandboxed checkpoint-failed REASON | tail -n1)" "reason"
	assert_contains "$message" "is under a seccomp filter and so is infervisord"
	assert_contains "$message" "examples/criu.conf"
	assert_contains "$message" "killing the worker"
	assert_eq SIGKILL "$(event_field sandboxed exited EXIT_SIGNAL | tail -n1)" "exit signal"
}
run_scenario the-packaged-units-seccomp-is-refused-with-the-remedy the_packaged_units_seccomp_is_refused_with_the_remedy

# frozen_worker [RULE_LINE]: the criu worker's config, with its rule.
frozen_worker() {
	cat <<-YAML
		workers:
		  - name: frozen
		    command: [$ivd_example_worker, --serve-interval-ms, "200", --model-mb, "16"]
		    notify: true
		    memory: {max: 96M}
		    pids_max: 32
		    checkpoint: {method: criu, timeout: 120s}
	YAML
	no_default_rules
	[[ -z ${1:-} ]] || echo "$1"
}

a_rule_dumps_the_worker_and_the_restart_restores_it() {
	install_infervisor
	use_criu_dropin
	assert_cmd test -x /usr/sbin/criu
	rm -rf "${store:?}/frozen"
	frozen_worker '      - {name: dump-it, when: "runtime > 4s", action: checkpoint, then: park}' |
		use_workers criu.yaml
	fresh_daemon
	wait_until 300 has_events frozen parked 1
	# The same worker without the rule: the reload starts it, from the dump.
	frozen_worker | use_workers criu.yaml
	systemctl reload infervisord
	wait_until 300 has_events frozen checkpoint-restored 1

	assert_eq "started ready policy-action:dump-it checkpoint-written exited parked:dump-it" \
		"$(event_sequence frozen | cut -d' ' -f1-6)" "frozen's events up to the dump"
	assert_contains "$(event_sequence frozen)" "parked:dump-it checkpoint-restoring started ready checkpoint-restored"
	local checkpoint
	checkpoint=$(event_field frozen checkpoint-written CHECKPOINT | head -n1)
	assert_eq "$store/frozen/0000000001" "$checkpoint" "published checkpoint"
	assert_eq criu "$(event_field frozen checkpoint-written METHOD | head -n1)" "method"
	assert_cmd test "$(event_field frozen checkpoint-written CHECKPOINT_BYTES | head -n1)" -gt $((16 << 20))
	log "dump: $(ivd_journal INFERVISOR_WORKER=frozen INFERVISOR_EVENT=checkpoint-written -o cat | head -n1)"
	log "restore: $(ivd_journal INFERVISOR_WORKER=frozen INFERVISOR_EVENT=checkpoint-restored -o cat | head -n1)"
	# An image criu wrote, root's, and not the worker's own checkpoint file.
	assert_cmd test -s "$checkpoint/inventory.img"
	assert_cmd test -s "$checkpoint/infervisor-criu"
	assert_cmd test ! -e "$checkpoint/checkpoint"
	assert_eq root "$(stat -c %U "$checkpoint")" "owner of the image"
	assert_eq SIGKILL "$(event_field frozen exited EXIT_SIGNAL | head -n1)" "the dumped run was killed"
	assert_eq "$checkpoint" "$(event_field frozen checkpoint-restoring CHECKPOINT | head -n1)" "restored from"

	# The count goes on from where the dump froze it.
	wait_until 120 served_after_restore frozen
	local around
	around=$(served_around_restore frozen)
	log "served before the dump and after the restore: $around"
	set -- $around
	assert_cmd test "$1" -gt 0
	assert_eq $(($1 + 1)) "$2" "first request after the restore"
	if journalctl -q --no-pager --cursor="$ivd_cursor" -t infervisor-worker-frozen -o cat | grep -q "resumed from"; then
		fail "the worker was given INFERVISOR_RESTORE_FROM"
	fi

	# The restored process: the daemon's child, in the worker's fresh
	# cgroup, under its limits, still serving.
	local pid cgroup
	pid=$(main_pid frozen)
	cgroup=$(worker_cgroup frozen)
	assert_eq "0::${cgroup#/sys/fs/cgroup}" "$(cat "/proc/$pid/cgroup")" "cgroup of the restored pid"
	assert_eq "$(systemctl show -P MainPID infervisord)" "$(awk '/^PPid:/ {print $2}' "/proc/$pid/status")" "parent"
	assert_eq $((96 << 20)) "$(cat "$cgroup/memory.max")" "memory.max"
	assert_eq 32 "$(cat "$cgroup/pids.max")" "pids.max"
	assert_word "$(cat "$cgroup/cgroup.procs")" "$pid" "the restored pid in the cgroup"
	local served
	served=$(served_count frozen)
	wait_until 120 served_more_than frozen $((served + 2))
	# criu restores the worker's own credentials: not root, and without the
	# CAP_SYS_ADMIN (21) and CAP_SYS_PTRACE (19) the daemon keeps for criu.
	local capbnd
	capbnd=$(awk '/^CapBnd:/ {print $2}' "/proc/$pid/status")
	assert_eq 0 $(((0x$capbnd >> 21) & 1)) "CAP_SYS_ADMIN in the restored bounding set"
	assert_eq 0 $(((0x$capbnd >> 19) & 1)) "CAP_SYS_PTRACE in the restored bounding set"
	assert_ne 0 "$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")" "uid of the restored pid"
	log "restored pid $pid: $(grep -E '^(Uid|CapBnd):' "/proc/$pid/status" | tr '\n\t' '  ')"
}
run_scenario a-rule-dumps-the-worker-with-criu-and-the-restart-restores-it a_rule_dumps_the_worker_and_the_restart_restores_it

# Issue 26, defect 2: criu restores the identity in its image. After a dump,
# the worker's configuration gives it another identity (here one more
# supplementary group): its image is not restored (checkpoint-failed says
# as whom it was dumped and as whom the worker runs now), and the run starts
# fresh, with the new identity.
an_image_of_another_identity_is_not_restored() {
	install_infervisor
	use_criu_dropin
	rm -rf "${store:?}/frozen"
	frozen_worker '      - {name: dump-it, when: "runtime > 4s", action: checkpoint, then: park}' |
		use_workers criu.yaml
	fresh_daemon
	wait_until 300 has_events frozen parked 1
	frozen_worker | sed 's/^    memory: {max: 96M}$/    memory: {max: 96M}\n    supplementary_groups: [video]/' |
		use_workers criu.yaml
	systemctl reload infervisord
	wait_until 300 has_events frozen started 2
	wait_until 120 has_events frozen ready 2
	assert_contains "$(event_sequence frozen)" "parked:dump-it checkpoint-failed started ready" "frozen's events"
	assert_eq 0 "$(event_count frozen checkpoint-restoring)" "restores begun"
	local refused
	refused=$(ivd_journal INFERVISOR_WORKER=frozen INFERVISOR_EVENT=checkpoint-failed -o cat | tail -n1)
	log "refused: $refused"
	assert_contains "$refused" "not restored: it was dumped as uid"
	assert_contains "$refused" "groups none, the worker now runs as uid"
	assert_contains "$refused" "starting fresh"
	local pid
	pid=$(main_pid frozen)
	assert_word "$(awk '/^Groups:/ { $1 = ""; print }' "/proc/$pid/status")" 44 "the new run's groups"
}
run_scenario an-image-of-another-identity-is-not-restored an_image_of_another_identity_is_not_restored

# Issue 26, defect 1: criu restore reopens the image's paths as root,
# following symlinks. The daemon checks every file the restored (still
# stopped) tree holds against the inodes the worker held at the dump.
a_restore_through_a_swapped_path_is_refused() {
	install_infervisor
	use_criu_dropin
	rm -rf "${store:?}/attacker" /var/lib/infervisor/workers/attacker
	# A root-only file the worker cannot even stat; criu checks only its size
	# and mode, which the worker gives its own f.
	head -c 4096 /dev/urandom >/root/victim-secret
	chmod 600 /root/victim-secret
	at_exit rm -f /root/victim-secret
	{
		cat <<-YAML
			workers:
			  - name: attacker
			    command: [/usr/bin/python3, -c, "import os, sys, time\nw = os.environ['INFERVISOR_WORKDIR']\nf = os.path.join(w, 'f')\nif os.path.exists(os.path.join(w, 'swapped')):\n    print('fresh start after the swap', flush=True)\n    time.sleep(3600)\nwith open(f, 'wb') as out:\n    out.write(b'x' * 4096)\nos.chmod(f, 0o600)\nheld = open(f, 'rb')\nprint('holding', f, flush=True)\nwhile not os.path.exists(os.path.join(w, 'go')):\n    time.sleep(0.2)\nos.symlink('/root/victim-secret', os.path.join(w, 'link'))\nos.rename(os.path.join(w, 'link'), f)\nopen(os.path.join(w, 'swapped'), 'w').close()\nprint('swapped', flush=True)\nsys.exit(3)\n"]
			    memory: {max: 96M}
			    restart: {policy: always}
			    checkpoint: {method: criu, timeout: 120s}
		YAML
		no_default_rules
	} | use_workers criu.yaml
	fresh_daemon
	local workdir=/var/lib/infervisor/workers/attacker
	wait_until 120 worker_said attacker "holding"
	assert_cmd infervisorctl checkpoint attacker
	local image
	image=$(event_field attacker checkpoint-written CHECKPOINT | head -n1)
	assert_cmd grep -q '^held-files=' "$image/infervisor-criu"
	touch "$workdir/go"
	wait_until 300 worker_said attacker "fresh start after the swap"
	assert_eq 0 "$(event_count attacker checkpoint-restored)" "restores done"
	assert_eq criu-restore-refused "$(event_field attacker checkpoint-failed REASON | tail -n1)" "reason"
	local refused
	refused=$(ivd_journal INFERVISOR_WORKER=attacker INFERVISOR_EVENT=checkpoint-failed -o cat | tail -n1)
	log "refused: $refused"
	assert_contains "$refused" "/root/victim-secret"
	assert_contains "$refused" "which the worker did not hold at the checkpoint"
	assert_contains "$refused" "the image is deleted"
	assert_cmd test ! -e "$image"
	assert_contains "$(event_sequence attacker)" "checkpoint-restoring checkpoint-failed started"
	# The fresh run holds no descriptor of the victim.
	local pid
	for pid in $(worker_pids attacker); do
		if ls -l "/proc/$pid/fd" 2>/dev/null | grep -q victim-secret; then
			fail "pid $pid holds /root/victim-secret"
		fi
	done
}
run_scenario a-restore-through-a-swapped-path-is-refused a_restore_through_a_swapped_path_is_refused

an_established_tcp_connection_is_refused_and_the_worker_killed() {
	install_infervisor
	use_criu_dropin
	rm -rf "${store:?}/talker"
	# The rule fires on memory the worker takes only once it is connected:
	# a rule on runtime raced python's start in a loaded guest (the preflight
	# ran before the connect, and criu itself then found the connection).
	{
		cat <<-YAML
			workers:
			  - name: talker
			    command: [/usr/bin/python3, -c, "import socket, time\nl = socket.socket()\nl.bind(('127.0.0.1', 0))\nl.listen()\nc = socket.create_connection(l.getsockname())\na, _ = l.accept()\nprint('connected', flush=True)\nheld = b'x' * (48 << 20)\ntime.sleep(3600)\n"]
			    memory: {max: 96M}
			    restart: {policy: always}
			    checkpoint: {method: criu, timeout: 60s}
		YAML
		no_default_rules
		cat <<-YAML
			      - {name: late, when: "memory.current > 40M", action: checkpoint, then: park}
		YAML
	} | use_workers criu.yaml
	fresh_daemon
	wait_until 300 has_events talker parked 1
	assert_eq criu-refused "$(event_field talker checkpoint-failed REASON | tail -n1)" "reason"
	assert_eq criu "$(event_field talker checkpoint-failed METHOD | tail -n1)" "method"
	local message
	message=$(ivd_journal INFERVISOR_WORKER=talker INFERVISOR_EVENT=checkpoint-failed -o cat | tail -n1)
	log "journal: $message"
	assert_contains "$message" "established TCP connection"
	assert_contains "$message" "killing the worker"
	assert_contains "$message" "last good checkpoint: none"
	assert_eq SIGKILL "$(event_field talker exited EXIT_SIGNAL | tail -n1)" "exit signal"
	assert_eq late "$(event_field talker parked RULE)" "parked by"
	assert_eq 0 "$(event_count talker checkpoint-written)" "checkpoints written"
	# Nothing half-dumped is left to be offered.
	assert_eq "" "$(find "$store/talker" -mindepth 1 -maxdepth 1 -name '[0-9]*')" "complete checkpoints"
}
run_scenario an-established-tcp-connection-is-refused-and-the-worker-killed an_established_tcp_connection_is_refused_and_the_worker_killed
