#!/bin/bash
# Issue 10, defects 2 and 3: two workers under the shipped default
# configuration, written as a new user writes them (a command, a memory cap,
# a credential each; no user). One of them, "mallory", attacks the other,
# "victim", with every tool its uid gives it: reading, listing and deleting
# victim's work dir and checkpoint dir, reading its /proc/PID/environ and
# /proc/PID/mem (ptrace access), strace -p where installed, kill -9.
# Each step fails, victim keeps running under the same pid, and each worker
# reads its own credential file and not the other's.
#
# The attacks run as mallory's uid and gid with no supplementary groups
# (setpriv), which is what a process of that worker is to the kernel.
# Guest time: ~40 s (boot not counted).
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state
at_exit rm -rf /etc/infervisor/credentials/vmtest-110

creds=/etc/infervisor/credentials/vmtest-110

start_victim_and_mallory() {
	mkdir -p "$creds"
	chmod 0700 "$creds"
	echo "victim-secret-110" >"$creds/victim-token"
	echo "mallory-secret-110" >"$creds/mallory-token"
	chmod 0600 "$creds"/*
	use_workers isolation.yaml <<-YAML
		workers:
		  - name: victim
		    command: [$ivd_example_worker, --serve-interval-ms, "1000"]
		    notify: true
		    memory: {max: 64M}
		    environment: {API_KEY: victim-env-secret-110}
		    credentials: {token: $creds/victim-token}
		  - name: mallory
		    command: [$ivd_example_worker]
		    notify: true
		    memory: {max: 64M}
		    credentials: {token: $creds/mallory-token}
	YAML
	fresh_daemon
	wait_until 300 has_events victim ready 1
	wait_until 300 has_events mallory ready 1
}

uid_of_pid() { awk '/^Uid:/ { print $2 }' "/proc/$1/status"; }

# as_mallory CMD...: CMD as mallory's uid and gid, no supplementary groups.
as_mallory() { setpriv --reuid="$muid" --regid="$muid" --clear-groups "$@"; }

attacks_fail() {
	install_infervisor
	assert_file_contains /etc/infervisor/infervisor.yaml "user: dynamic"
	start_victim_and_mallory
	local vpid mpid vdir vckpt
	vpid=$(main_pid victim)
	mpid=$(main_pid mallory)
	vuid=$(uid_of_pid "$vpid")
	muid=$(uid_of_pid "$mpid")
	log "victim pid $vpid uid $vuid; mallory pid $mpid uid $muid"
	assert_ne "$vuid" "$muid" "the two workers' uids"
	assert_ne 0 "$vuid" "victim's uid"
	((vuid >= 60578 && vuid <= 61183)) || fail "victim's uid $vuid is outside the dynamic range"
	vdir=/var/lib/infervisor/workers/victim
	# The checkpoint store: NAME is root's (only the daemon publishes), the
	# staging dir inside it ($INFERVISOR_CHECKPOINT_DIR) the worker's.
	vstore=/var/lib/infervisor/checkpoints/victim
	vckpt=$vstore/staging
	# Names resolve through nss-systemd from the daemon's userdb service.
	assert_eq "infervisor-w-victim:x:$vuid:$vuid" "$(getent passwd infervisor-w-victim | cut -d: -f1-4)" "getent passwd"
	assert_eq "infervisor-w-victim" "$(ps -o user:40= -p "$vpid" | tr -d ' ')" "ps shows victim's user"
	assert_eq "infervisor-w-victim" "$(stat -c %U "/var/lib/infervisor/workers/victim")" "ls shows the owner"
	assert_eq "$vuid 700" "$(stat -c '%u %a' "$vdir")" "victim's work dir owner and mode"
	assert_eq "0 711" "$(stat -c '%u %a' "$vstore")" "victim's checkpoint store owner and mode"
	assert_eq "$vuid 700" "$(stat -c '%u %a' "$vckpt")" "victim's checkpoint staging dir owner and mode"
	# Something worth stealing in each, as the victim would have written it.
	setpriv --reuid="$vuid" --regid="$vuid" --clear-groups sh -c \
		"echo weights >$vdir/model.bin && echo state >$vckpt/checkpoint"

	assert_fails as_mallory ls "$vdir"
	assert_fails as_mallory cat "$vdir/model.bin"
	assert_fails as_mallory rm -f "$vdir/model.bin"
	assert_fails as_mallory rm -rf "$vdir/tmp"
	assert_fails as_mallory ls "$vstore"
	assert_fails as_mallory ls "$vckpt"
	assert_fails as_mallory cat "$vckpt/checkpoint"
	assert_fails as_mallory rm -f "$vckpt/checkpoint"
	assert_fails as_mallory mv "$vdir" /var/lib/infervisor/workers/stolen
	assert_eq weights "$(cat "$vdir/model.bin")" "victim's model file"
	assert_eq state "$(cat "$vckpt/checkpoint")" "victim's checkpoint"

	assert_contains "$(tr '\0' '\n' <"/proc/$vpid/environ")" "API_KEY=victim-env-secret-110" "environ as root"
	assert_fails as_mallory cat "/proc/$vpid/environ"
	assert_fails as_mallory dd if="/proc/$vpid/mem" of=/dev/null bs=1 count=1 skip=4096
	if command -v strace >/dev/null; then
		assert_fails as_mallory timeout 20 strace -p "$vpid" -e trace=none -o /dev/null
	fi
	assert_fails as_mallory kill -9 "$vpid"
	assert_fails as_mallory kill -STOP "$vpid"

	# Credentials: each its own, and only its own; none in the environment.
	assert_eq "/run/infervisor/credentials/mallory" \
		"$(tr '\0' '\n' <"/proc/$mpid/environ" | sed -n 's/^CREDENTIALS_DIRECTORY=//p')" "mallory's CREDENTIALS_DIRECTORY"
	assert_eq "mallory-secret-110" "$(as_mallory cat /run/infervisor/credentials/mallory/token)" "mallory's own credential"
	assert_fails as_mallory cat /run/infervisor/credentials/victim/token
	assert_fails as_mallory ls /run/infervisor/credentials/victim
	assert_fails as_mallory cat "$creds/victim-token"
	assert_eq "victim-secret-110" "$(setpriv --reuid="$vuid" --regid="$vuid" --clear-groups cat /run/infervisor/credentials/victim/token)" "victim's own credential"
	local environ
	environ=$(tr '\0' '\n' <"/proc/$vpid/environ")
	[[ $environ != *victim-secret-110* ]] || fail "the credential is in victim's environment"

	# The victim never noticed: same pid, still serving, never exited.
	local served
	served=$(served_count victim)
	wait_until 120 served_more_than victim "$served"
	assert_eq "$vpid" "$(worker_pids victim | head -n1)" "victim's pid"
	assert_eq 0 "$(event_count victim exited)" "victim's exits"
	assert_eq 1 "$(event_count victim started)" "victim's starts"
}
run_scenario attacks-on-another-worker-fail attacks_fail

# A restart of the daemon keeps each worker's uid, so its dirs stay its own.
uids_survive_a_daemon_restart() {
	local before
	before=$(stat -c %u /var/lib/infervisor/workers/victim)
	fresh_daemon
	wait_until 300 has_events victim ready 1
	assert_eq "$before" "$(uid_of_pid "$(main_pid victim)")" "victim's uid after a daemon restart"
}
run_scenario uids-survive-a-daemon-restart uids_survive_a_daemon_restart
