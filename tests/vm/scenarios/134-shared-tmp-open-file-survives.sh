#!/bin/bash
# Issue 11: private_tmp: false shares the host's /tmp, and what such a worker
# holds there is still kept. Two workers with private_tmp: false keep a model
# file under the host's /tmp, one holding it open (a file descriptor), the
# other mapped (its descriptor closed). The daemon finds both in /proc, lists
# them in /run/tmpfiles.d/infervisor-open-files.conf and journals a
# tmp-file-protected event naming each path. Their mtime and atime are then
# set two days back, next to a file nobody holds, and the real
# systemd-tmpfiles-clean runs with an aging rule on /tmp by atime/mtime
# (amAM:1h): the held files survive, the loose one goes. After the workers
# stop, their lines are gone and the same clean-up removes the files.
# (The workers serve once a minute, so they do not read their files again
# meanwhile: the files stay old for the rule.) Guest time 16 s, install
# included (87 s once on a loaded host).
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

aging_rule=/etc/tmpfiles.d/tmp.conf # masks /usr/lib/tmpfiles.d/tmp.conf
open_files=/run/tmpfiles.d/infervisor-open-files.conf
held_open=/tmp/vm134-held-open.bin
held_mapped=/tmp/vm134-held-mapped.bin
loose=/tmp/vm134-loose.bin

age_tmp_by_atime_and_mtime() {
	cat >"$aging_rule" <<-EOF
		d /tmp 1777 root root amAM:1h
		x /tmp/vmtest-state.*
	EOF
	at_exit rm -f "$aging_rule"
}

make_old() { touch -a -m -d '2 days ago' "$@"; }

clean_tmp() {
	systemctl start systemd-tmpfiles-clean.service || true
	log "systemd-tmpfiles-clean: $(systemctl show -P Result systemd-tmpfiles-clean.service)"
}

excluded() { grep -qxF "x $1" "$open_files" 2>/dev/null; }
not_excluded() { ! excluded "$1"; }

protected_event_for() { # WORKER PATH
	event_field "$1" tmp-file-protected PATH | grep -qxF "$2"
}

held_files_survive_while_their_workers_run() {
	install_infervisor
	systemctl stop infervisord
	rm -f "$held_open" "$held_mapped" "$loose"
	use_workers shared-tmp.yaml <<-YAML
		workers:
		  - name: opener
		    command: [$ivd_example_worker, --tmp-file, $held_open, --hold-tmp-file, open,
		              --serve-interval-ms, "60000"]
		    notify: true
		    memory: {max: 64M}
		    private_tmp: false
		    restart: {policy: never}
		  - name: mapper
		    command: [$ivd_example_worker, --tmp-file, $held_mapped, --hold-tmp-file, map,
		              --serve-interval-ms, "60000"]
		    notify: true
		    memory: {max: 64M}
		    private_tmp: false
		    restart: {policy: never}
	YAML
	fresh_daemon
	wait_until 300 has_events opener ready 1
	wait_until 300 has_events mapper ready 1
	wait_until 120 protected_event_for opener "$held_open"
	wait_until 120 protected_event_for mapper "$held_mapped"
	assert_eq open "$(event_field opener tmp-file-protected HOW)" "opener's HOW"
	assert_eq mapped "$(event_field mapper tmp-file-protected HOW)" "mapper's HOW"
	assert_contains "$(ivd_journal INFERVISOR_EVENT=tmp-file-protected -o cat)" "$held_mapped"
	assert_cmd excluded "$held_open"
	assert_cmd excluded "$held_mapped"
	log "$(cat "$open_files")"

	echo "nobody holds this" >"$loose"
	age_tmp_by_atime_and_mtime
	make_old "$held_open" "$held_mapped" "$loose"
	clean_tmp
	assert_cmd test -s "$held_open"
	assert_cmd test -s "$held_mapped"
	assert_fails test -e "$loose" # the rule does match old files here
	assert_eq 0 "$(event_count opener exited)" "opener's exits"
	assert_eq 0 "$(event_count mapper exited)" "mapper's exits"

	# The runs end: the protection ends with them.
	infervisorctl stop opener mapper
	wait_until 60 has_events opener exited 1
	wait_until 60 has_events mapper exited 1
	wait_until 30 not_excluded "$held_open"
	wait_until 30 not_excluded "$held_mapped"
	make_old "$held_open" "$held_mapped"
	clean_tmp
	assert_fails test -e "$held_open"
	assert_fails test -e "$held_mapped"
}
run_scenario a-file-a-worker-holds-under-the-shared-tmp-survives-tmpfiles-clean \
	held_files_survive_while_their_workers_run
