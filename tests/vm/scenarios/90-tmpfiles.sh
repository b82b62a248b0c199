#!/bin/bash
# The temp-file trap: systemd-tmpfiles-clean ages /tmp, and a model file that
# a worker keeps under /tmp vanishes under it. A protected extra dir is kept
# out of the clean-up (the daemon's shared flock and its x line in
# /run/tmpfiles.d/infervisor-workdirs.conf) while its worker is configured,
# and is aged like anything else once the worker is gone.
#
# The aging rule is as aggressive as it gets: `d /tmp ... 0` removes everything
# under /tmp that was last touched before the clean-up began.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

models=/tmp/models
model_file=$models/model.bin
exclusions=/run/tmpfiles.d/infervisor-workdirs.conf
aging_rule=/etc/tmpfiles.d/tmp.conf # masks /usr/lib/tmpfiles.d/tmp.conf

# age_tmp_at_once: /tmp entries older than the clean-up's start are removed;
# the rig's own state dirs (lib.sh) are spared.
age_tmp_at_once() {
	cat >"$aging_rule" <<-EOF
		d /tmp 1777 root root 0
		x /tmp/vmtest-state.*
	EOF
	at_exit rm -f "$aging_rule"
}

# clean_tmp: one run of the real clean-up service (its timer is masked).
clean_tmp() {
	systemctl start systemd-tmpfiles-clean.service || true
	log "systemd-tmpfiles-clean: $(systemctl show -P Result systemd-tmpfiles-clean.service)"
}

workers_with_modeler() {
	use_workers tmpfiles.yaml <<-YAML
		workers:
		  - name: modeler
		    command: [$ivd_example_worker, --tmp-file, $model_file, --serve-interval-ms, "500"]
		    notify: true
		    memory: {max: 128M}
		    extra_dirs: [{path: $models, protect: true}]
		  - name: bystander
		    command: [$ivd_example_worker, --serve-interval-ms, "1000"]
		    notify: true
		    memory: {max: 64M}
	YAML
}

workers_without_modeler() {
	use_workers tmpfiles.yaml <<-YAML
		workers:
		  - name: bystander
		    command: [$ivd_example_worker, --serve-interval-ms, "1000"]
		    notify: true
		    memory: {max: 64M}
	YAML
}

served_count() { # WORKER
	journalctl -q --no-pager --cursor="$ivd_cursor" -t "infervisor-worker-$1" |
		grep -c 'served request' || true
}

served_more_than() { (($(served_count "$1") > $2)); }

# shared_flock_by PID DIR: PID holds a shared BSD lock on DIR (/proc/locks).
shared_flock_by() {
	local ino
	ino=$(stat -c %i "$2") || return 1
	grep -qE "^[0-9]+: FLOCK +ADVISORY +READ +$1 +[0-9a-f]+:[0-9a-f]+:$ino " /proc/locks
}

no_shared_flock_by() { ! shared_flock_by "$@"; }

excluded() { grep -qxF "x $1" "$exclusions" 2>/dev/null; }

not_excluded() { ! excluded "$1"; }

protected_dir_survives_the_clean_up() {
	install_infervisor
	systemctl stop infervisord
	rm -rf "$models" /tmp/scratch /tmp/loose-file
	workers_with_modeler
	fresh_daemon
	wait_until 300 has_events modeler ready 1
	wait_until 300 has_events bystander ready 1
	local modeler_pid daemon_pid
	modeler_pid=$(main_pid modeler)
	daemon_pid=$(systemctl show -P MainPID infervisord)
	assert_cmd test -s "$model_file"
	assert_cmd excluded "$models"
	assert_cmd shared_flock_by "$daemon_pid" "$models"
	log "$exclusions: $(grep '^x ' "$exclusions" | tr '\n' ' ')"

	# Unprotected neighbours, as old as the model file.
	mkdir /tmp/scratch
	echo data >/tmp/scratch/data
	echo data >/tmp/loose-file
	age_tmp_at_once
	clean_tmp
	assert_fails test -e /tmp/scratch
	assert_fails test -e /tmp/loose-file
	assert_cmd test -s "$model_file"

	# It re-reads the file on every request: three more after the clean-up,
	# and it is still the same run.
	local served
	served=$(served_count modeler)
	wait_until 300 served_more_than modeler $((served + 3))
	assert_eq 0 "$(event_count modeler exited)" "modeler exits"
	assert_eq 1 "$(event_count modeler started)" "modeler starts"
	assert_eq "$modeler_pid" "$(main_pid modeler)" "modeler pid"
	assert_cmd kill -0 "$modeler_pid"
}
run_scenario protected-extra-dir-survives-tmpfiles-clean protected_dir_survives_the_clean_up

protection_ends_with_the_worker() {
	install_infervisor
	systemctl stop infervisord
	rm -rf "$models"
	workers_with_modeler
	fresh_daemon
	wait_until 300 has_events modeler ready 1
	wait_until 300 has_events bystander ready 1
	assert_cmd excluded "$models"
	local daemon_pid bystander_pid
	daemon_pid=$(systemctl show -P MainPID infervisord)
	bystander_pid=$(main_pid bystander)

	workers_without_modeler
	systemctl reload infervisord
	wait_until 300 has_events modeler stopped 1
	wait_until 300 not_excluded "$models"
	wait_until 300 no_shared_flock_by "$daemon_pid" "$models"
	# The extra dir itself is never deleted by the daemon; the other worker's
	# protection stays.
	assert_cmd test -s "$model_file"
	assert_cmd excluded "/var/lib/infervisor/workers/bystander"
	assert_eq "$bystander_pid" "$(main_pid bystander)" "bystander pid"

	age_tmp_at_once
	clean_tmp
	assert_fails test -e "$models"
	assert_eq 1 "$(event_count modeler started)" "modeler starts"
	assert_eq active "$(systemctl is-active infervisord)" "service state"
}
run_scenario protection-ends-when-the-worker-is-removed protection_ends_with_the_worker
