#!/bin/bash
# Issue 32: `infervisorctl -H` over a real SSH server. Two SSH servers
# (dropbear, from dropbear-bin, which ./run-tests installs) on 127.0.0.2:2222
# and 127.0.0.3:2222 stand for two hosts; both lead to this guest's daemon.
# Checked: one host (status, and a change by root: drain and undrain); the
# ssh user's authorization (an unprivileged user reads but may not stop);
# several hosts, one of them down (nothing listens on 127.0.0.4), in one
# table with a HOST column and a row that says why, exit 4; the same as
# JSON; a host frozen mid-command (its sshd stopped after it accepted) and
# a host whose daemon hangs (the real bridge on a socket that never
# answers): each a row "no answer within 5s" once its time is up, nothing
# of them left running, and one -H alone on the frozen host ends with
# ssh's own timeout; a change on several hosts refused (exit 2) with
# nothing done; no bridge on the other end (exit 4, said). ssh runs with this scenario's key
# and known-hosts file through INFERVISOR_SSH, as an operator's wrapper
# would. Guest time: about 50-80 s.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"

dir=/run/vmtest-180
user=vmtest180

ctl() { INFERVISOR_SSH=$dir/ssh infervisorctl "$@"; }
state_of_steady() { ctl -H "root@127.0.0.2:2222" status --json steady | jq -r '.workers[0].state'; }
ssh_answers() { ctl -H "root@$1:2222" status >/dev/null 2>&1; }

start_sshd() { # ADDRESS [ENVIRONMENT...]: dropbear, passing these to the sessions (-e)
	local address=$1
	shift
	env "$@" dropbear -F -E -e -s -r "$dir/host_key" -p "$address:2222" -P "$dir/dropbear-$address.pid" 2>>"$VMTEST_RESULTS/180-dropbear.log" &
	at_exit kill -CONT $!
	at_exit kill $!
}
no_ssh_left_to() { ! pgrep -f "ssh .*@$1" >/dev/null; }
listens() { timeout 2 bash -c "</dev/tcp/$1/2222" 2>/dev/null; }

ssh_hosts() {
	if ! command -v dropbear >/dev/null || ! command -v ssh >/dev/null; then
		fail "dropbear or ssh is not installed on the host (./run-tests installs dropbear-bin and openssh-client)"
		return 1
	fi
	install_infervisor
	at_exit systemctl stop infervisord
	at_exit dump_state
	use_workers ssh.yaml <<-YAML
		workers:
		  - name: steady
		    command: [$ivd_example_worker, --serve-interval-ms, "500"]
		    memory: {max: 64M}
	YAML
	fresh_daemon
	wait_until 120 has_events steady ready 1

	mkdir -p "$dir" /root/.ssh
	chmod 700 /root/.ssh
	dropbearkey -t ed25519 -f "$dir/host_key" >/dev/null
	ssh-keygen -q -t ed25519 -N '' -f "$dir/id" >/dev/null
	cat "$dir/id.pub" >>/root/.ssh/authorized_keys
	chmod 600 /root/.ssh/authorized_keys
	useradd -m "$user"
	at_exit userdel -r "$user"
	install -d -m 700 -o "$user" "/home/$user/.ssh"
	install -m 600 -o "$user" "$dir/id.pub" "/home/$user/.ssh/authorized_keys"
	# The operator's wrapper: this key, this known-hosts file.
	cat >"$dir/ssh" <<-SH
		#!/bin/sh
		exec ssh -i $dir/id -o UserKnownHostsFile=$dir/known_hosts -o StrictHostKeyChecking=accept-new "\$@"
	SH
	chmod 755 "$dir/ssh"
	start_sshd 127.0.0.2
	start_sshd 127.0.0.3
	wait_until 60 ssh_answers 127.0.0.2
	wait_until 60 ssh_answers 127.0.0.3

	# One host.
	local out rc
	out=$(ctl -H root@127.0.0.2:2222 status)
	log "one host: $out"
	assert_contains "$out" "steady"
	assert_eq running "$(state_of_steady)" "state through ssh"
	out=$(ctl -H root@127.0.0.2:2222 drain)
	assert_contains "$out" "steady: stopped"
	assert_eq true "$(ctl -H root@127.0.0.3:2222 status --json | jq -r .drained)" "drained, seen through the other"
	out=$(ctl -H root@127.0.0.2:2222 undrain)
	assert_contains "$out" "starting steady"
	wait_until 120 has_events steady ready 2

	# The ssh user's rights: read, not change.
	out=$(ctl -H "$user@127.0.0.2:2222" status)
	assert_contains "$out" "steady"
	rc=0
	out=$(ctl -H "$user@127.0.0.2:2222" stop steady 2>&1) || rc=$?
	assert_eq 5 "$rc" "an unprivileged ssh user may not stop"
	assert_contains "$out" "permission denied"
	assert_eq running "$(state_of_steady)" "still running"

	# Several hosts, one down: one table, a row for the one that is down.
	rc=0
	out=$(ctl -H root@127.0.0.2:2222 -H root@127.0.0.4:2222 -H root@127.0.0.3:2222 status) || rc=$?
	log "three hosts: $out"
	assert_eq 4 "$rc" "exit status when a host did not answer"
	assert_contains "$out" "HOST"
	assert_contains "$out" "root@127.0.0.2:2222  steady"
	assert_contains "$out" "root@127.0.0.3:2222  steady"
	assert_contains "$out" "root@127.0.0.4:2222  (no answer: ssh: connect to host 127.0.0.4 port 2222: Connection refused)"
	out=$(ctl --json -H root@127.0.0.2:2222 -H root@127.0.0.4:2222 status) || true
	assert_eq steady "$(jq -r '.hosts[0].workers[0].name' <<<"$out")" "JSON: the first host's worker"
	assert_eq 4 "$(jq -r '.hosts[1].exit_code' <<<"$out")" "JSON: the host that is down"

	# A host frozen mid-command: its sshd accepted the connection and then
	# stopped (SIGSTOP), so ssh waits for a banner that never comes. A host
	# whose daemon hangs: ssh and the real bridge work, and the socket the
	# bridge reaches (INFERVISOR_SOCKET, passed by dropbear -e) accepts and
	# never answers.
	python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8)
held = []
while True: held.append(s.accept())' "$dir/hung.sock" &
	at_exit kill $!
	start_sshd 127.0.0.5
	start_sshd 127.0.0.6 INFERVISOR_SOCKET="$dir/hung.sock"
	wait_until 60 ssh_answers 127.0.0.5
	wait_until 60 listens 127.0.0.6
	wait_until 60 test -S "$dir/hung.sock"
	kill -STOP "$(cat "$dir/dropbear-127.0.0.5.pid")"
	rc=0
	out=$(ctl -H root@127.0.0.2:2222 -H root@127.0.0.5:2222 -H root@127.0.0.6:2222 status --timeout 5s) || rc=$?
	log "a frozen host and a hung daemon: $out"
	assert_eq 4 "$rc" "exit status when hosts did not answer in time"
	assert_contains "$out" "root@127.0.0.2:2222  steady"
	assert_contains "$out" "root@127.0.0.5:2222  (no answer within 5s)"
	assert_contains "$out" "root@127.0.0.6:2222  (no answer within 5s)"
	wait_until 30 no_ssh_left_to 127.0.0.5
	wait_until 30 no_ssh_left_to 127.0.0.6
	pass "nothing of the hosts that did not answer is left running"
	rc=0
	out=$(ctl -H root@127.0.0.6:2222 status --timeout 5s 2>&1) || rc=$?
	assert_eq 4 "$rc" "one host whose daemon hangs"
	assert_contains "$out" "root@127.0.0.6:2222: no answer within 5s"
	# No --timeout: ssh's own ConnectTimeout (10 s) ends the frozen host's.
	rc=0
	out=$(ctl -H root@127.0.0.5:2222 status 2>&1) || rc=$?
	log "one frozen host, no --timeout: $out"
	assert_eq 4 "$rc" "one frozen host"
	assert_contains "$out" "timed out"
	kill -CONT "$(cat "$dir/dropbear-127.0.0.5.pid")"

	# A change on several hosts is refused, and nothing is done.
	rc=0
	out=$(ctl -H root@127.0.0.2:2222 -H root@127.0.0.3:2222 stop steady 2>&1) || rc=$?
	assert_eq 2 "$rc" "stop on two hosts"
	assert_contains "$out" "several -H"
	assert_eq running "$(state_of_steady)" "nothing stopped"
}
run_scenario ssh-hosts-status-change-and-a-host-down ssh_hosts
