#!/bin/bash
# Issue 16: the Debian packages as an operator uses them. `apt install` of the
# built .deb files (infervisor and infervisor-example-worker, from
# $VMTEST_BUILD_DIR/deb, made by packaging/build-deb) enables and starts the
# service from the package's own files; the demo workers run; `apt purge`
# stops it and leaves nothing of ours but the system users and the journal.
# In between, an upgrade to a newer version (the same .deb repacked with a
# higher version) re-executes the daemon in place: the workers keep running
# with the same pids and are adopted.
#
# Not in the default VM run (it needs the .deb, a second full build):
# ./run-tests builds the .deb and runs it last, in a boot of its own; alone,
# run it with packaging/test-deb BUILD_DIR, or by hand:
#   packaging/build-deb BUILD_DIR/deb
#   tests/vm/run-all --build-dir BUILD_DIR --skip-selftest tests/vm/package/161-deb-install.sh
# It must run in a boot of its own, before anything `meson install`s into the
# guest. Guest time: ~60-120 s (apt, dpkg triggers over 9p).
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
source "${BASH_SOURCE[0]%/*}/../footprint.sh"

deb_dir=$VMTEST_BUILD_DIR/deb
export DEBIAN_FRONTEND=noninteractive

owned_by_package() { # PATH PACKAGE
	assert_contains "$(dpkg -S "$1" 2>&1)" "$2:" "owner of $1"
}

chat_running() { infervisorctl --no-pager status chat >/dev/null 2>&1; }

# repack_newer DEB OUT: DEB with its version raised by "+upgrade1", as the
# next release would be.
repack_newer() {
	local tree
	tree=$(mktemp -d)
	dpkg-deb -R "$1" "$tree"
	sed -i 's/^Version: .*/&+upgrade1/' "$tree/DEBIAN/control"
	dpkg-deb -b "$tree" "$2" >/dev/null
	rm -rf "$tree"
}

reexecuted() {
	ivd_journal SYSLOG_IDENTIFIER=infervisord -o cat | grep -c "re-executed in place" || true
}

# An apt upgrade: same daemon pid (re-executed, not restarted), same worker
# pid, an adopted event for it.
upgrade_keeps_the_workers() {
	local daemon_pid chat_pid chat_starts newer
	daemon_pid=$(systemctl show -P MainPID infervisord)
	chat_pid=$(event_field chat started PID | tail -n1)
	chat_starts=$(event_count chat started)
	newer=/tmp/infervisor_upgrade.deb
	repack_newer "$(ls "$deb_dir"/infervisor_*.deb)" "$newer"
	assert_cmd apt-get install -y -q "$newer"
	assert_contains "$(dpkg-query -W -f='${Version}' infervisor)" "+upgrade1" "upgraded version"
	wait_until 300 eval '(( $(reexecuted) >= 1 ))'
	wait_until 300 has_events chat adopted 1
	assert_eq "$daemon_pid" "$(systemctl show -P MainPID infervisord)" "daemon pid after the upgrade"
	assert_eq "$chat_pid" "$(event_field chat adopted PID | tail -n1)" "chat's adopted pid"
	assert_contains "$(cat /proc/"$chat_pid"/cgroup)" "/workers/chat" "chat still in its cgroup"
	assert_eq "$chat_starts" "$(event_count chat started)" "chat was not started again"
	rm -f "$newer"
}

# The daemon as the package ships it (optimised, stripped), with the
# packaged main configuration and one idle worker: its memory beside
# earlyoom's in this boot (issue 28; tests/vm/footprint.sh).
packaged_footprint() {
	cat >/etc/infervisor/workers.d/footprint.yaml <<-YAML
		workers:
		  - name: idle
		    command: [/usr/libexec/infervisor/infervisor-example-worker]
		    notify: true
		    memory: {max: 64M}
	YAML
	systemctl reload infervisord
	wait_until 300 has_events idle ready 1
	local pid
	pid=$(systemctl show -P MainPID infervisord)
	settle_rss "$pid"
	footprint_report "$pid" "infervisord (Debian package), packaged main config, 1 worker, idle"
	assert_eq 1 "$(status_kib "$pid" Threads)" "the idle daemon's threads"
	earlyoom_beside "$pid" "infervisord (Debian package)"
	rm /etc/infervisor/workers.d/footprint.yaml
}

# What of ours is left in the places a package or the daemon writes.
leftovers() {
	local places=(/etc /var/lib /run /lib/systemd/system /usr/lib/systemd /usr/lib/sysusers.d
		/usr/lib/tmpfiles.d /usr/sbin /usr/bin /usr/libexec /usr/share/doc /usr/share/man
		/usr/share/bash-completion /usr/share/zsh /usr/share/fish /sys/fs/cgroup/system.slice)
	# (infervisor-vmtest.* is the VM rig's own unit that runs this script.)
	find "${places[@]}" -maxdepth 3 -iname '*infervisor*' 2>/dev/null |
		grep -v -e '^/run/vmtest' -e 'infervisor-vmtest\.' || true
}

install_start_purge() {
	if [[ -e /run/vmtest-infervisor-installed ]]; then
		fail "meson install ran in this boot already; run this script in a boot of its own"
		return 1
	fi
	ivd_cursor=$(journalctl -q -n 1 --show-cursor | sed -n 's/^-- cursor: //p')
	export ivd_cursor  # ivd_journal and event_* read from here on
	local debs=("$deb_dir"/infervisor_*.deb "$deb_dir"/infervisor-example-worker_*.deb)
	for deb in "${debs[@]}"; do
		assert_cmd test -f "$deb"
	done
	# The host is a container image whose policy-rc.d forbids starting
	# services; a real host has none. man-db's trigger would rescan every man
	# page over 9p for minutes.
	rm -f /usr/sbin/policy-rc.d /var/lib/man-db/auto-update

	assert_cmd apt-get install -y -q "${debs[@]}"  # (apt 2.6: --no-download refuses local .deb files)
	assert_eq enabled "$(systemctl is-enabled infervisord)" "enabled by the package"
	wait_until 120 service_active
	owned_by_package /lib/systemd/system/infervisord.service infervisor
	owned_by_package /usr/sbin/infervisord infervisor
	owned_by_package /usr/libexec/infervisor/infervisor-tls-relay infervisor
	owned_by_package /usr/libexec/infervisor/infervisor-example-worker infervisor-example-worker
	assert_eq /lib/systemd/system/infervisord.service "$(systemctl show -P FragmentPath infervisord)" "unit file"
	assert_contains "$(systemctl show -P ExecStart infervisord)" "path=/usr/sbin/infervisord" "ExecStart"
	assert_cmd getent group infervisor
	assert_cmd id infervisor-worker
	assert_cmd test -d /var/lib/infervisor/workers
	assert_contains "$(dpkg-query -W -f='${Conffiles}' infervisor)" /etc/infervisor/infervisor.yaml "conffiles"
	assert_ne 0 "$(journalctl --list-catalog 2>/dev/null | grep -ci infervisor || true)" "catalog entries after install"
	assert_cmd test -s /usr/share/man/man8/infervisord.8.gz
	assert_cmd test -s /usr/share/zsh/vendor-completions/_infervisorctl
	assert_cmd test -s /usr/share/fish/vendor_completions.d/infervisorctl.fish

	packaged_footprint

	# The demo workers, as the example package's docs say.
	cp /usr/share/doc/infervisor-example-worker/examples/demo.yaml /etc/infervisor/workers.d/
	systemctl reload infervisord
	wait_until 300 chat_running
	assert_contains "$(infervisorctl --no-pager status)" leaky "status after reload"
	local cgroup=/sys/fs/cgroup/system.slice/infervisor-workers.service
	assert_cmd test -d "$cgroup/workers/chat"

	upgrade_keeps_the_workers

	assert_cmd apt-get purge -y -q infervisor infervisor-example-worker
	assert_ne active "$(systemctl is-active infervisord || true)" "state after purge"
	assert_cmd test ! -e /lib/systemd/system/infervisord.service
	assert_cmd test ! -e /etc/infervisor
	assert_cmd test ! -e /var/lib/infervisor
	assert_cmd test ! -e /run/infervisor
	assert_cmd test ! -e "$cgroup"
	assert_eq "" "$(pgrep -f infervisor-example-worker || true)" "example workers after purge"
	assert_eq 0 "$(journalctl --list-catalog 2>/dev/null | grep -ci infervisor || true)" "catalog entries after purge"
	local left
	left=$(leftovers)
	log "left after purge (expected: none): ${left:-none}"
	assert_eq "" "$left" "files left after purge"
	log "left after purge by design: group $(getent group infervisor), user $(getent passwd infervisor-worker)"
}
run_scenario deb-install-start-purge install_start_purge
