#!/bin/bash
# Issue 32, logs for the fleet: infervisord's journal entries shipped with
# Debian's systemd-journal-upload to systemd-journal-remote (package
# systemd-journal-remote, installed on the host whose root the guest
# shares), both as the README configures them (the packaged units, HTTP on
# port 19532, a drop-in each), here on one guest over 127.0.0.1. The guest
# plays two hosts in turn: the kernel's hostname is vm172-a for one daemon
# run and vm172-b for the next, so journald stamps their events with two
# _HOSTNAMEs. On the collector's /var/log/journal/remote,
# `infervisorctl events -D` shows both hosts' events with their host,
# `--hostname` keeps one host's and a host that sent nothing shows none;
# `journalctl -D` finds them too.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

remote=/var/log/journal/remote
remote_dropin=/etc/systemd/system/systemd-journal-remote.service.d/vmtest-172.conf
upload_dropin=/etc/systemd/journal-upload.conf.d/vmtest-172.conf

set_hostname() { echo "$1" >/proc/sys/kernel/hostname; }

# journald stamps _HOSTNAME from the name it caches, which it refreshes when
# the kernel's changes: wait until a marker logged after the change carries
# the new name, so that the daemon's entries that follow do too.
marker_has_host() {
	journalctl -q --no-pager -t vmtest-172 _HOSTNAME="$1" -o cat | grep -qx "now $1"
}
become_host() {
	set_hostname "$1"
	echo "now $1" | systemd-cat -t vmtest-172
	wait_until 120 marker_has_host "$1"
}

# The collector and the uploader, with the README's configuration.
start_shipping() {
	mkdir -p "${remote_dropin%/*}" "${upload_dropin%/*}"
	cat >"$remote_dropin" <<-'INI'
		[Service]
		ExecStart=
		ExecStart=/lib/systemd/systemd-journal-remote --listen-http=-3 --output=/var/log/journal/remote/
	INI
	printf '[Upload]\nURL=http://127.0.0.1:19532\n' >"$upload_dropin"
	at_exit systemctl daemon-reload
	at_exit rm -f "$remote_dropin" "$upload_dropin"
	at_exit systemctl stop systemd-journal-upload.service systemd-journal-remote.socket \
		systemd-journal-remote.service
	systemctl daemon-reload
	systemctl start systemd-journal-remote.socket
	# --no-block: the uploader wants network-online.target, which a guest
	# without a network may take its time to give up on.
	systemctl start --no-block systemd-journal-upload.service
}

# collector_has HOST WORKER EVENT: the collector's journal shows that event
# of WORKER from HOST.
collector_has() {
	infervisorctl events -D "$remote" --since "$since" --hostname "$1" "$2" 2>/dev/null |
		grep -q " $1 $2 $3:"
}

# run_as_host HOST WORKER: a daemon run on HOST that starts WORKER (its own
# name, so that nothing of the other run's is adopted or carried over) and
# stops when WORKER is ready.
run_as_host() {
	use_workers journal-upload.yaml <<-YAML
		workers:
		  - name: $2
		    command: [$ivd_example_worker, --serve-interval-ms, "1000"]
		    notify: true
		    memory: {max: 64M}
	YAML
	become_host "$1"
	fresh_daemon
	wait_until 300 has_events "$2" ready 1
	systemctl stop infervisord
	wait_until 120 workers_unit_gone
}

events_reach_the_collector_by_host() {
	assert_cmd test -x /lib/systemd/systemd-journal-remote
	assert_cmd test -x /lib/systemd/systemd-journal-upload
	install_infervisor
	since=@$(date +%s)
	at_exit set_hostname "$(cat /proc/sys/kernel/hostname)"
	start_shipping
	run_as_host vm172-a shipped-a
	run_as_host vm172-b shipped-b

	wait_until 600 collector_has vm172-a shipped-a ready
	wait_until 600 collector_has vm172-b shipped-b ready
	local all a b none by_worker hosts
	all=$(infervisorctl events -D "$remote" --since "$since" -n 10000)
	a=$(infervisorctl events -D "$remote" --since "$since" -n 10000 --hostname vm172-a)
	b=$(infervisorctl events -D "$remote" --since "$since" -n 10000 --hostname vm172-b)
	log "collector, every host:"
	printf '%s\n' "$all"
	assert_contains "$all" " vm172-a shipped-a started:" "every host's events"
	assert_contains "$all" " vm172-b shipped-b started:" "every host's events"
	assert_contains "$a" " vm172-a shipped-a ready:" "vm172-a's events"
	assert_contains "$a" " vm172-a - daemon-stopping:" "vm172-a's daemon events"
	[[ $a != *vm172-b* ]] || _vmtest_assert_failed "--hostname vm172-a shows vm172-b's events: $a"
	assert_contains "$b" " vm172-b shipped-b ready:" "vm172-b's events"
	[[ $b != *vm172-a* ]] || _vmtest_assert_failed "--hostname vm172-b shows vm172-a's events: $b"
	none=$(infervisorctl events -D "$remote" --since "$since" --hostname vm172-nowhere)
	assert_eq "-- No entries --" "$none" "a host that sent nothing"
	by_worker=$(infervisorctl events -D "$remote" --since "$since" -n 10000 shipped-b)
	assert_contains "$by_worker" " vm172-b shipped-b started:" "one worker's events"
	[[ $by_worker != *shipped-a* ]] || _vmtest_assert_failed "NAME shipped-b shows shipped-a: $by_worker"
	hosts=$(infervisorctl events -D "$remote" --since "$since" -n 10000 --json |
		jq -r 'select(.worker | startswith("shipped-")) | .host' | sort -u | tr '\n' ' ')
	assert_eq "vm172-a vm172-b " "$hosts" "the JSON's hosts"
	# journalctl reads the same files.
	assert_contains "$(journalctl -q --no-pager -D "$remote" _HOSTNAME=vm172-a \
		INFERVISOR_WORKER=shipped-a INFERVISOR_EVENT=started -o cat)" "shipped-a:" "journalctl -D"
}
run_scenario journal-upload-events-by-host events_reach_the_collector_by_host
