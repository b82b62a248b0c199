# shellcheck shell=bash
# Guest-side helpers for the infervisord scenarios (tests/vm/scenarios/*.sh).
# Source after lib.sh. The daemon is installed from the build dir into the
# guest's overlay exactly as a package would install it (meson install), and
# run by systemd as infervisord.service.

ivd_service_cgroup=/sys/fs/cgroup/system.slice/infervisord.service
# The workers' cgroups live in a unit of their own (units/infervisor-workers.service.in).
ivd_workers_unit=infervisor-workers.service
ivd_workers_cgroup=/sys/fs/cgroup/system.slice/$ivd_workers_unit
ivd_conf=/etc/infervisor
ivd_example_worker=/usr/libexec/infervisor/infervisor-example-worker

# install_infervisor: meson install into / (the overlay), once per boot.
# Stripped, as a package installs it: the overlay is a tmpfs, so unstripped
# binaries (over 150 MB of debug info) would take that much of the guest's
# 1 GiB of RAM from the memory scenarios.
install_infervisor() {
	if [[ ! -e /run/vmtest-infervisor-installed ]]; then
		meson install -C "$VMTEST_BUILD_DIR" --no-rebuild --strip --quiet >/dev/null
		# What a package's postinst does: users, directories, catalog.
		systemd-sysusers
		systemd-tmpfiles --create /usr/lib/tmpfiles.d/infervisor.conf
		journalctl --update-catalog
		systemctl daemon-reload
		touch /run/vmtest-infervisor-installed
	fi
	assert_cmd test -x /usr/sbin/infervisord
	assert_cmd test -x "$ivd_example_worker"
}

# use_workers FILE <<YAML: installs a workers drop-in, removing every other.
use_workers() {
	rm -f "$ivd_conf"/workers.d/*.yaml
	mkdir -p "$ivd_conf/workers.d"
	cat >"$ivd_conf/workers.d/$1"
}

# fresh_daemon: stop it if running, forget old journal lines' relevance by
# remembering a cursor, start it and wait until systemd says it is active.
fresh_daemon() {
	systemctl stop infervisord 2>/dev/null || true
	systemctl reset-failed infervisord 2>/dev/null || true
	# The cursor of the newest entry; later queries start there (--cursor, not
	# --after-cursor: journalctl 252 with field matches skips the first match
	# after the cursor).
	ivd_cursor=$(journalctl -q -n 1 --show-cursor | sed -n 's/^-- cursor: //p')
	[[ -n $ivd_cursor ]] || { echo "no journal cursor" >&2; return 1; }
	# And the kernel's clock now: a kernel line journald reads late (it was
	# slow under the memory pressure of the scenario before) is after the
	# cursor but not of this scenario (kernel_oom_kills).
	ivd_since_kernel_usec=$(awk '{ printf "%d", $1 * 1000000 }' /proc/uptime)
	export ivd_cursor ivd_since_kernel_usec
	systemctl start infervisord
	wait_until 120 service_active
}

service_active() { [[ $(systemctl is-active infervisord || true) == active ]]; }

# journal since fresh_daemon, for the service, with extra match arguments.
ivd_journal() {
	journalctl -q --no-pager --cursor="$ivd_cursor" -u infervisord "$@"
}

# event_count WORKER EVENT: how many INFERVISOR_EVENT=EVENT entries WORKER has.
event_count() {
	ivd_journal INFERVISOR_WORKER="$1" INFERVISOR_EVENT="$2" -o cat | grep -c . || true
}

has_events() { # WORKER EVENT N
	(($(event_count "$1" "$2") >= $3))
}

worker_cgroup() { echo "$ivd_workers_cgroup/workers/$1"; }

# worker_pids WORKER: the pids in the worker's cgroup (none if it has none).
worker_pids() { cat "$(worker_cgroup "$1")/cgroup.procs" 2>/dev/null || true; }

worker_running() { [[ -n $(worker_pids "$1") ]]; }

# main_pid WORKER: pid of the worker's last `started` event.
main_pid() {
	ivd_journal INFERVISOR_WORKER="$1" INFERVISOR_EVENT=started -o export |
		sed -n 's/^INFERVISOR_PID=//p' | tail -n1
}

# ready_count WORKER
ready_count() { event_count "$1" ready; }

# event_sequence WORKER: the worker's events since fresh_daemon, oldest first,
# one word each: EVENT, or EVENT:RULE for policy actions.
event_sequence() {
	ivd_journal INFERVISOR_WORKER="$1" -o export | awk -v RS= -F '\n' '{
		event = ""; rule = ""
		for (i = 1; i <= NF; i++) {
			if ($i ~ /^INFERVISOR_EVENT=/) event = substr($i, 18)
			if ($i ~ /^INFERVISOR_RULE=/) rule = ":" substr($i, 17)
		}
		if (event != "") out = out (out == "" ? "" : " ") event rule
	}
	END { print out }'
}

# event_field WORKER EVENT FIELD [MATCH...]: INFERVISOR_FIELD of each such
# event, one per line, oldest first.
event_field() {
	local worker=$1 event=$2 field=$3
	shift 3
	ivd_journal INFERVISOR_WORKER="$worker" INFERVISOR_EVENT="$event" "$@" -o export |
		sed -n "s/^INFERVISOR_$field=//p"
}

# kernel_oom_kills [WORKER]: kernel oom-kill lines since fresh_daemon, for
# the worker's memcg, or all of them. By the kernel's own time of each line
# (_SOURCE_MONOTONIC_TIMESTAMP), not only the journal's order: the global
# OOM kill that ended the scenario before may reach the journal after this
# one's cursor. A line without the kernel's time counts.
kernel_oom_kills() {
	local pattern="oom-kill:${1:+.*oom_memcg=/system.slice/$ivd_workers_unit/workers/$1}"
	journalctl -k -q --no-pager --cursor="$ivd_cursor" -o export |
		awk -v since="${ivd_since_kernel_usec:-0}" -v pattern="$pattern" '
			/^_SOURCE_MONOTONIC_TIMESTAMP=/ { t = substr($0, 29) + 0 }
			/^MESSAGE=/ { m = substr($0, 9) }
			/^$/ { if (m ~ pattern && (t == 0 || t >= since)) n++; t = 0; m = "" }
			END { if (m ~ pattern && (t == 0 || t >= since)) n++; print n + 0 }'
}

served_count() { # WORKER
	journalctl -q --no-pager --cursor="$ivd_cursor" -t "infervisor-worker-$1" |
		grep -c 'served request' || true
}

served_more_than() { (($(served_count "$1") > $2)); }

cgroup_gone() { [[ ! -d $(worker_cgroup "$1") ]]; }

# idle_workers_yaml COUNT: a workers file of COUNT idle example workers
# (idle-1, idle-2, ...; notify, 64M): the idle benchmarks' load.
idle_workers_yaml() {
	local i
	echo "workers:"
	for ((i = 1; i <= $1; i++)); do
		cat <<-YAML
			  - name: idle-$i
			    command: [$ivd_example_worker, --serve-interval-ms, "3600000"]
			    notify: true
			    memory: {max: 64M}
		YAML
	done
}

# start_two_idle_workers FILE [WATCHDOG]: workers 'one' and 'two' (the
# example worker, notify, 64M) in workers.d/FILE, a fresh daemon, and both
# ready. WATCHDOG (e.g. 10s): 'one' must send WATCHDOG=1 that often.
start_two_idle_workers() {
	use_workers "$1" <<-YAML
		workers:
		  - name: one
		    command: [$ivd_example_worker]
		    notify: true
		    watchdog: ${2:-0s}
		    memory: {max: 64M}
		  - name: two
		    command: [$ivd_example_worker]
		    notify: true
		    memory: {max: 64M}
	YAML
	fresh_daemon
	wait_until 300 has_events one ready 1
	wait_until 300 has_events two ready 1
}

# dump_state: diagnostics into the results dir when a scenario fails.
dump_state() {
	{
		systemctl status infervisord --no-pager -l || true
		find "$ivd_service_cgroup" "$ivd_workers_cgroup" -maxdepth 3 -name cgroup.procs -exec sh -c 'echo "$1: $(cat "$1" | tr "\n" " ")"' _ {} \; || true
		journalctl -q --no-pager -u infervisord -n 200 || true
	} >>"$VMTEST_RESULTS/infervisor-state.txt" 2>&1
	write_digest >"$VMTEST_RESULTS/digest.txt" 2>&1 || true
}

# write_digest: a few lines that say what the daemon went through, for
# run-all to show when this script failed (CI shows little more than the
# end of run-all's output): the service's restarts and result, and the
# daemon's and systemd's last lines about it, worker output left out.
write_digest() {
	echo "infervisord: $(systemctl show -p ActiveState -p Result -p NRestarts -p MainPID infervisord | tr '\n' ' ')"
	journalctl -q --no-pager -u infervisord -o short-monotonic -n 400 |
		grep -E ' (infervisord|systemd)\[[0-9]+\]: ' | tail -n 12 | cut -c1-220 | sed 's/^/  /'
}

# workers_unit_gone: the workers' unit has stopped and its cgroup is gone
# (after `systemctl stop infervisord`, systemd stops it as no longer needed).
workers_unit_gone() {
	[[ $(systemctl is-active "$ivd_workers_unit" || true) != active && ! -d $ivd_workers_cgroup ]]
}

# require_torch: fails the scenario, saying what to install, unless Debian's
# python3-torch is there for the example torch worker. Finds the module
# without importing it: an import costs a minute under emulation, and the
# worker's own start shows whether it works.
require_torch() {
	if ! /usr/bin/python3 -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)' 2>/dev/null; then
		fail "python3-torch is not installed on the host (./run-tests installs it; apt install python3-torch)"
		return 1
	fi
}

# what_if_agrees NAME: `infervisorctl simulate` with the configuration the
# daemon runs replays its recording to the same decisions at the same
# evaluations (issue 31: none that only the replay or only the daemon took,
# no departure, every run's phase judged alike), and the recording is
# exported into the results as NAME/recording.trace beside the workers'
# files it ran with (NAME/workers.d): tests/unit/policy/recorded_traces/
# holds such exports.
what_if_agrees() {
	local out
	out=$(infervisorctl simulate --json)
	log "simulate: $(jq -c '{rounds, same, would, not_taken, phase_differences, diverged_at_usec}' <<<"$out")"
	assert_cmd test "$(jq .rounds <<<"$out")" -gt 0
	assert_eq null "$(jq -c .diverged_at_usec <<<"$out")" "where the replay departs from the daemon (nowhere)"
	assert_eq 0 "$(jq '.would + .not_taken' <<<"$out")" "decisions only the replay or only the daemon took"
	assert_eq 0 "$(jq .phase_differences <<<"$out")" "samples whose phase the replay judged otherwise"
	[[ -n ${VMTEST_RESULTS:-} ]] || return 0
	mkdir -p "$VMTEST_RESULTS/$1/workers.d"
	cp "$ivd_conf"/workers.d/*.yaml "$VMTEST_RESULTS/$1/workers.d/"
	assert_cmd infervisorctl history --export "$VMTEST_RESULTS/$1/recording.trace"
}
