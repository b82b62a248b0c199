#!/bin/bash
# Cooperative checkpoints on a real kernel, with the example worker (it writes
# its served count into $INFERVISOR_CHECKPOINT_DIR on SIGUSR1, answers
# CHECKPOINT=1, and counts on from $INFERVISOR_RESTORE_FROM):
#  1. a memory rule with `action: checkpoint, then: restart` checkpoints a
#     growing worker, stops it, and the restart resumes from its count;
#  2. a worker that ignores the checkpoint signal is killed after the timeout,
#     and the journal names its last good checkpoint;
#  3. periodic checkpoints survive a `kill -9` of the worker: the restart
#     resumes from the newest one;
#  4. a checkpoint over checkpoint.quota fails (REASON=quota), the previous
#     one is kept and restored (issue 26 #9);
#  5. an operator lists and deletes a worker's checkpoints with the real
#     infervisorctl (issue 26 #9): anyone lists, only root deletes, a bad id
#     deletes nothing, and with all deleted the next start is fresh.
# In 1, the published checkpoint is root's: the worker's user reads it (its
# ACL) and cannot change it, nobody else reads it (issue 26 #9).
# Guest time: about 60-90 s for the three under load.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

main_config=$ivd_conf/infervisor.yaml
main_config_saved=/run/vmtest-140-checkpoint-main.yaml
store=/var/lib/infervisor/checkpoints

# Samples every second, so that the memory rule acts within seconds.
use_fast_sampling() {
	if [[ ! -e $main_config_saved ]]; then
		cp "$main_config" "$main_config_saved"
		at_exit cp "$main_config_saved" "$main_config"
	fi
	{
		grep -Ev '^(sample_interval):' "$main_config_saved"
		echo "sample_interval: 1s"
	} >"$main_config"
}

# served_in CHECKPOINT_DIR: the count the worker wrote into it.
served_in() { sed -n 's/^served=//p' "$1/checkpoint"; }

# resumed_count WORKER CHECKPOINT: the count a run says it resumed from.
resumed_count() {
	journalctl -q --no-pager --cursor="$ivd_cursor" -t "infervisor-worker-$1" -o cat |
		grep -F "resumed from $2 (served " | head -n1 | sed 's/.*(served \([0-9]*\) requests before).*/\1/'
}
has_resumed() { [[ -n $(resumed_count "$1" "$2") ]]; }

# first_served_after_resume WORKER CHECKPOINT: N of the first "served
# request N" line after the run that resumed from CHECKPOINT said so.
first_served_after_resume() {
	journalctl -q --no-pager --cursor="$ivd_cursor" -t "infervisor-worker-$1" -o cat |
		awk -v from="resumed from $2 (" '
			index($0, from) { resumed = 1; next }
			resumed && match($0, /served request [0-9]+/) {
				print substr($0, RSTART + 15, RLENGTH - 15); exit
			}'
}
served_after_resume() { [[ -n $(first_served_after_resume "$1" "$2") ]]; }

# newest_checkpoint WORKER: the newest complete checkpoint's directory.
newest_checkpoint() {
	find "$store/$1" -mindepth 1 -maxdepth 1 -type d -name '[0-9]*' | sort | tail -n1
}

no_default_rules() {
	cat <<-YAML
		    rules:
		      - {name: runaway-growth, enabled: false}
		      - {name: memory-pressure, enabled: false}
	YAML
}

memory_rule_checkpoints_and_the_restart_resumes() {
	install_infervisor
	use_fast_sampling
	rm -rf "${store:?}/grower"
	{
		cat <<-YAML
			workers:
			  - name: grower
			    command: [$ivd_example_worker, --serve-interval-ms, "200", --leak-mb-per-s, "2"]
			    notify: true
			    memory: {max: 256M}
			    restart: {policy: on-failure, backoff_initial: 1s}
			    checkpoint: {timeout: 60s, keep: 20}
		YAML
		no_default_rules
		cat <<-YAML
			      - {name: too-big, when: "memory.current > 24M for 1s", action: checkpoint, then: restart}
		YAML
	} | use_workers checkpoint.yaml
	fresh_daemon
	wait_until 300 has_events grower checkpoint-restoring 1
	wait_until 300 has_events grower ready 2

	assert_eq "started ready policy-action:too-big checkpoint-written exited restarting started checkpoint-restoring ready checkpoint-restored" \
		"$(event_sequence grower | cut -d' ' -f1-10)" "grower's events"
	assert_eq checkpoint "$(event_field grower policy-action ACTION | head -n1)" "action"
	local checkpoint served
	checkpoint=$(event_field grower checkpoint-written CHECKPOINT | head -n1)
	assert_eq "$store/grower/0000000001" "$checkpoint" "published checkpoint"
	assert_eq "rule 'too-big'" "$(event_field grower checkpoint-written TRIGGER | head -n1)" "trigger"
	assert_cmd test "$(event_field grower checkpoint-written CHECKPOINT_BYTES | head -n1)" -gt 0
	log "checkpoint: $(ivd_journal INFERVISOR_WORKER=grower INFERVISOR_EVENT=checkpoint-written -o cat | head -n1)"
	# Stopped by its stop signal, not killed.
	assert_eq 0 "$(event_field grower exited EXIT_CODE | head -n1)" "exit code"
	assert_eq "$checkpoint" "$(event_field grower checkpoint-restoring CHECKPOINT | head -n1)" "restored from"
	log "restore: $(ivd_journal INFERVISOR_WORKER=grower INFERVISOR_EVENT=checkpoint-restored -o cat | head -n1)"

	# The new run says it resumed from the count in the checkpoint, and
	# counts on from there.
	served=$(served_in "$checkpoint")
	assert_cmd test "$served" -gt 0
	wait_until 120 has_resumed grower "$checkpoint"
	assert_eq "$served" "$(resumed_count grower "$checkpoint")" "count resumed from"
	wait_until 120 served_after_resume grower "$checkpoint"
	assert_eq $((served + 1)) "$(first_served_after_resume grower "$checkpoint")" "next request"

	# Issue 26 #9: a published checkpoint is root's, mode without group or
	# other bits but the ACL's mask; the worker's user (it owns the staging
	# dir) reads it through the ACL (the restore above did) and cannot write,
	# add or re-mode anything in it.
	local uid gid
	uid=$(stat -c %u "$store/grower/staging")
	gid=$(stat -c %g "$store/grower/staging")
	assert_ne 0 "$uid" "the worker's uid"
	as_worker() { setpriv --reuid="$uid" --regid="$gid" --clear-groups -- "$@"; }
	assert_eq root "$(stat -c %U "$store/grower")" "owner of the store"
	assert_eq 0:0 "$(stat -c %u:%g "$checkpoint")" "owner of the checkpoint"
	assert_eq 0:0 "$(stat -c %u:%g "$checkpoint/checkpoint")" "owner of its file"
	assert_eq "$served" "$(as_worker sed -n 's/^served=//p' "$checkpoint/checkpoint")" \
		"the worker's uid reads its checkpoint"
	assert_fails as_worker sh -c "echo more >>'$checkpoint/checkpoint'"
	assert_fails as_worker touch "$checkpoint/planted"
	assert_fails as_worker chmod 0666 "$checkpoint/checkpoint"
	assert_eq "$served" "$(served_in "$checkpoint")" "the checkpoint is as it was"
	assert_fails setpriv --reuid=65534 --regid=65534 --clear-groups -- cat "$checkpoint/checkpoint"
}

run_scenario memory-rule-checkpoints-the-worker-and-its-restart-resumes memory_rule_checkpoints_and_the_restart_resumes

a_worker_that_ignores_the_signal_is_killed() {
	install_infervisor
	use_fast_sampling
	rm -rf "${store:?}/deaf"
	# First it checkpoints (every 2 s) ...
	use_workers checkpoint.yaml <<-YAML
		workers:
		  - name: deaf
		    command: [$ivd_example_worker, --serve-interval-ms, "200"]
		    notify: true
		    memory: {max: 64M}
		    checkpoint: {interval: 2s, timeout: 60s}
	YAML
	fresh_daemon
	wait_until 300 has_events deaf checkpoint-written 1
	# ... then it is asked with a signal it does not handle (SIGWINCH is
	# ignored by default), by a rule that would stop it.
	{
		cat <<-YAML
			workers:
			  - name: deaf
			    command: [$ivd_example_worker, --serve-interval-ms, "200"]
			    notify: true
			    memory: {max: 64M}
			    restart: {policy: always}
			    checkpoint: {signal: SIGWINCH, timeout: 5s}
		YAML
		no_default_rules
		cat <<-YAML
			      - {name: late, when: "runtime > 3s", action: checkpoint, then: park}
		YAML
	} | use_workers checkpoint.yaml
	systemctl reload infervisord
	wait_until 300 has_events deaf parked 1

	# The newest complete checkpoint (a periodic one of the first config).
	local good
	good=$(newest_checkpoint deaf)
	assert_ne "" "$good" "a good checkpoint"
	assert_eq "$good" "$(event_field deaf checkpoint-restoring CHECKPOINT | tail -n1)" "offered on the new start"
	assert_eq timeout "$(event_field deaf checkpoint-failed REASON | tail -n1)" "reason"
	assert_eq "$good" "$(event_field deaf checkpoint-failed LAST_CHECKPOINT | tail -n1)" "last good checkpoint named"
	local message
	message=$(ivd_journal INFERVISOR_WORKER=deaf INFERVISOR_EVENT=checkpoint-failed -o cat | tail -n1)
	log "journal: $message"
	assert_contains "$message" "no CHECKPOINT=1 within 5s of SIGWINCH"
	assert_contains "$message" "killing the worker"
	assert_eq SIGKILL "$(event_field deaf exited EXIT_SIGNAL | tail -n1)" "exit signal"
	assert_eq late "$(event_field deaf parked RULE)" "parked by"
	assert_cmd test -s "$good/checkpoint"
}
run_scenario a-worker-that-ignores-the-checkpoint-signal-is-killed a_worker_that_ignores_the_signal_is_killed

periodic_checkpoints_survive_kill_9() {
	install_infervisor
	rm -rf "${store:?}/steady"
	use_workers checkpoint.yaml <<-YAML
		workers:
		  - name: steady
		    command: [$ivd_example_worker, --serve-interval-ms, "200"]
		    notify: true
		    memory: {max: 64M}
		    restart: {policy: always, backoff_initial: 1s}
		    checkpoint: {interval: 2s, keep: 2}
	YAML
	fresh_daemon
	wait_until 300 has_events steady checkpoint-written 3
	local before offered served
	before=$(event_field steady checkpoint-written CHECKPOINT | tail -n1)
	kill -9 "$(main_pid steady)"
	wait_until 300 has_events steady ready 2

	# The newest: the last one journaled before the kill, or one published
	# between that and the kill.
	offered=$(event_field steady checkpoint-restoring CHECKPOINT | tail -n1)
	assert_eq "$store/steady" "${offered%/*}" "offered from the store"
	assert_cmd test "${offered##*/}" -ge "${before##*/}"
	assert_eq SIGKILL "$(event_field steady exited EXIT_SIGNAL | head -n1)" "killed"
	# (Retention may have deleted it by now: the count comes from the worker.)
	wait_until 120 has_resumed steady "$offered"
	served=$(resumed_count steady "$offered")
	log "restarted from $offered (served $served)"
	assert_cmd test "$served" -gt 0
	wait_until 120 served_after_resume steady "$offered"
	assert_eq $((served + 1)) "$(first_served_after_resume steady "$offered")" "next request"

	# Retention: never more than `keep` complete checkpoints.
	local complete
	complete=$(find "$store/steady" -mindepth 1 -maxdepth 1 -type d -name '[0-9]*' | wc -l)
	assert_cmd test "$complete" -le 2
}
run_scenario periodic-checkpoints-survive-kill-9 periodic_checkpoints_survive_kill_9

# Issue 27, point 4: `infervisorctl checkpoint` of a worker that does not
# handle SIGUSR1 answered with "killed by SIGUSR1". The daemon reads the
# main process's signal masks first: the signal would end it, so it is not
# sent; the command fails with why and the worker runs on.
a_signal_that_would_end_the_worker_is_not_sent() {
	install_infervisor
	use_workers checkpoint.yaml <<-YAML
		workers:
		  - name: plain
		    command: [$ivd_example_worker, --checkpoint-signal, USR2]
		    notify: true
		    memory: {max: 64M}
	YAML
	fresh_daemon
	wait_until 300 has_events plain ready 1
	local pid rc=0 err=/run/ctl-checkpoint.err
	pid=$(main_pid plain)
	infervisorctl checkpoint plain 2>"$err" || rc=$?
	log "checkpoint plain: exit $rc: $(cat "$err")"
	assert_eq 1 "$rc" "exit code of checkpoint plain"
	assert_file_contains "$err" "neither catches nor blocks SIGUSR1"
	assert_file_contains "$err" "the signal would end it: not sent"
	assert_cmd infervisorctl status plain
	assert_eq "$pid" "$(main_pid plain)" "plain's pid"
	assert_eq 0 "$(event_count plain exited)" "plain's exits"
}
run_scenario a-checkpoint-signal-that-would-end-the-worker-is-not-sent a_signal_that_would_end_the_worker_is_not_sent

# Issue 26 #9: a worker's checkpoints are bounded by checkpoint.quota. A
# checkpoint over it is deleted with checkpoint-failed (REASON=quota), the
# previous one is kept, and the next start restores that one.
a_checkpoint_over_the_quota_fails_and_the_old_one_is_kept() {
	install_infervisor
	rm -rf "${store:?}/bounded"
	use_workers checkpoint.yaml <<-YAML
		workers:
		  - name: bounded
		    command: [$ivd_example_worker, --serve-interval-ms, "200"]
		    notify: true
		    memory: {max: 64M}
		    restart: {policy: always, backoff_initial: 1s}
		    checkpoint: {timeout: 60s, keep: 5, quota: 2M}
	YAML
	fresh_daemon
	wait_until 300 has_events bounded ready 1
	assert_cmd infervisorctl checkpoint bounded
	wait_until 120 has_events bounded checkpoint-written 1
	local first rc=0 err=/run/ctl-checkpoint-quota.err
	first=$(newest_checkpoint bounded)
	assert_eq "$store/bounded/0000000001" "$first" "first checkpoint"
	# The next checkpoint holds 4 MiB besides the worker's own file, the
	# worker's as if it wrote them (a root's file in it would be refused by
	# the seal before the quota is judged).
	dd if=/dev/urandom of="$store/bounded/staging/padding" bs=1M count=4 status=none
	chown --reference="$store/bounded/staging" "$store/bounded/staging/padding"
	infervisorctl checkpoint bounded 2>"$err" || rc=$?
	log "checkpoint bounded over its quota: exit $rc: $(cat "$err")"
	assert_ne 0 "$rc" "exit code of a checkpoint over the quota"
	wait_until 120 has_events bounded checkpoint-failed 1
	assert_eq quota "$(event_field bounded checkpoint-failed REASON | tail -n1)" "reason"
	assert_eq $((2 << 20)) "$(event_field bounded checkpoint-failed QUOTA_BYTES | tail -n1)" "quota"
	assert_eq "$first" "$(event_field bounded checkpoint-failed LAST_CHECKPOINT | tail -n1)" "last good"
	log "journal: $(ivd_journal INFERVISOR_WORKER=bounded INFERVISOR_EVENT=checkpoint-failed -o cat | tail -n1)"
	assert_eq "$first" "$(newest_checkpoint bounded)" "newest after the refusal"
	assert_cmd test ! -e "$store/bounded/0000000002"
	assert_eq 1 "$(event_count bounded checkpoint-written)" "checkpoints written"
	# The next start restores the kept one.
	kill -9 "$(main_pid bounded)"
	wait_until 300 has_events bounded ready 2
	assert_eq "$first" "$(event_field bounded checkpoint-restoring CHECKPOINT | tail -n1)" "restored from"
}
run_scenario a-checkpoint-over-the-quota-fails-and-the-old-one-is-kept a_checkpoint_over_the_quota_fails_and_the_old_one_is_kept

# Issue 26 #9: checkpoints hold prompts and KV caches; `infervisorctl
# checkpoints` lists them for anyone who may read status and deletes them for
# root (or the control group) only, journaled with the caller's uid.
an_operator_lists_and_deletes_checkpoints() {
	install_infervisor
	rm -rf "${store:?}/kept"
	use_workers checkpoint.yaml <<-YAML
		workers:
		  - name: kept
		    command: [$ivd_example_worker, --serve-interval-ms, "200"]
		    notify: true
		    memory: {max: 64M}
		    restart: {policy: always, backoff_initial: 1s}
		    checkpoint: {timeout: 60s, keep: 5}
	YAML
	fresh_daemon
	wait_until 300 has_events kept ready 1
	local n
	for n in 1 2 3; do
		assert_cmd infervisorctl checkpoint kept
		wait_until 120 has_events kept checkpoint-written "$n"
	done
	local listing=/run/ctl-checkpoints.out rc
	# Anyone may list: ids, times, sizes, methods, the next restore.
	assert_cmd setpriv --reuid=65534 --regid=65534 --clear-groups \
		infervisorctl --no-pager checkpoints kept >"$listing"
	log "checkpoints kept (as nobody):"$'\n'"$(cat "$listing")"
	assert_file_matches "$listing" '^0000000001  .* cooperative$'
	assert_file_matches "$listing" '^0000000003  .* cooperative +next$'
	assert_eq 3 "$(grep -c '^000000000[123] ' "$listing")" "checkpoints listed"
	assert_eq 3 "$(infervisorctl checkpoints kept --json | grep -c '"id": "')" "in JSON"
	# Nobody else may delete; a bad or unknown id deletes nothing.
	rc=0
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		infervisorctl checkpoints kept --all --yes 2>/dev/null || rc=$?
	assert_eq 5 "$rc" "exit code of a delete as nobody"
	rc=0
	infervisorctl checkpoints kept --delete ../x --yes 2>/dev/null || rc=$?
	assert_eq 2 "$rc" "exit code of --delete ../x"
	rc=0
	infervisorctl checkpoints kept --delete 9 --yes 2>/dev/null || rc=$?
	assert_eq 1 "$rc" "exit code of --delete 9"
	rc=0
	infervisorctl checkpoints kept --all </dev/null 2>/dev/null || rc=$?
	assert_eq 2 "$rc" "exit code of --all without --yes and without a terminal"
	assert_eq 0 "$(event_count kept checkpoint-deleted)" "deletions so far"
	for n in 1 2 3; do assert_cmd test -d "$store/kept/000000000$n"; done
	# Root deletes one, then all: journaled, gone from the disk.
	assert_eq "deleted checkpoint 0000000001 of kept" \
		"$(infervisorctl checkpoints kept --delete 1 --yes)" "--delete 1"
	assert_cmd test ! -e "$store/kept/0000000001"
	assert_eq 0 "$(event_field kept checkpoint-deleted CALLER_UID | tail -n1)" "caller uid"
	assert_eq 0000000001 "$(event_field kept checkpoint-deleted CHECKPOINT_IDS | tail -n1)" "ids"
	assert_cmd infervisorctl checkpoints kept --all --yes
	assert_eq "0000000002, 0000000003" "$(event_field kept checkpoint-deleted CHECKPOINT_IDS | tail -n1)" "ids"
	assert_eq none "$(event_field kept checkpoint-deleted NEXT_RESTORE | tail -n1)" "next restore"
	log "journal: $(ivd_journal INFERVISOR_WORKER=kept INFERVISOR_EVENT=checkpoint-deleted -o cat | tail -n1)"
	assert_eq "" "$(newest_checkpoint kept)" "checkpoints left"
	wait_until 60 bash -c "[[ -z \$(ls -A '$store/kept/trash') ]]"
	assert_eq "worker 'kept' has no checkpoints" "$(infervisorctl checkpoints kept)" "listing"
	# Nothing left to restore: the next start is fresh.
	kill -9 "$(main_pid kept)"
	wait_until 300 has_events kept ready 2
	assert_eq 0 "$(event_count kept checkpoint-restoring)" "restores"
}
run_scenario an-operator-lists-and-deletes-checkpoints an_operator_lists_and_deletes_checkpoints
