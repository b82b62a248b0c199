#!/bin/bash
# Benchmark: the real infervisord's own memory, natively (issue 28). Not a
# test: it reports figures and asserts nothing. VM 102 and 161 measure the
# same in the guest, beside earlyoom.
#
#   tests/bench/daemon-footprint.sh BUILD_DIR [--count N] [--metrics] [--rounds R]
#
# Runs BUILD_DIR's infervisord with the shipped main configuration
# (etc/infervisor.yaml; --metrics turns its metrics listener on, on
# 127.0.0.1:$FOOTPRINT_PORT, default 9816) and N example workers (default 1)
# in a cgroup of its own below this shell's, with its runtime and state dirs
# in a temporary directory. Once every worker is ready (on a fake root,
# below: failed) and the daemon's RSS has settled it prints the daemon's VmRSS, what of it is pinned, its
# threads, major faults and the largest mappings; then R rounds (default 4)
# of a config check (as nobody), a status of every worker and, with
# --metrics, a metrics scrape, and the same figures again.
#
# As root, on a cgroup2 host. The daemon gets LD_BIND_NOW=1, as
# infervisord.service gives it. Build a packaged-like daemon to compare
# with the README's figures: buildtype plain, CXXFLAGS and LDFLAGS from
# dpkg-buildflags with DEB_BUILD_MAINT_OPTIONS=hardening=+all (as
# packaging/debian/rules; the daemon's own code is then built with -Os and
# --gc-sections, daemon/lib/meson.build), then strip
# build/daemon/infervisord.
# FOOTPRINT_HOLD=S leaves the daemon running S seconds more at the end (for a
# look at /proc/PID/smaps); FOOTPRINT_KEEP=1 keeps the temporary directory
# (the daemon's log).
set -euo pipefail
source_dir=$(cd "${BASH_SOURCE[0]%/*}/../.." && pwd)

usage() {
	echo "usage: $0 BUILD_DIR [--count N] [--metrics] [--rounds R]" >&2
	exit 2
}
(($# >= 1)) || usage
build_dir=$(cd "$1" && pwd)
shift
count=1 metrics=false rounds=4
while (($#)); do
	case $1 in
	--count)
		count=$2
		shift
		;;
	--metrics) metrics=true ;;
	--rounds)
		rounds=$2
		shift
		;;
	*) usage ;;
	esac
	shift
done
port=${FOOTPRINT_PORT:-9816}
daemon=$build_dir/daemon/infervisord
ctl=$build_dir/cli/infervisorctl
worker=$build_dir/tests/example-worker/infervisor-example-worker
for f in "$daemon" "$ctl" "$worker"; do
	[[ -x $f ]] || {
		echo "missing $f (ninja -C $build_dir daemon/infervisord cli/infervisorctl tests/example-worker/infervisor-example-worker)" >&2
		exit 1
	}
done

# status_kib, pinned_kib, mapping_breakdown and settle_rss, as VM 102 and 161
# use them (its report is redefined below: to stdout, with major faults).
# shellcheck disable=SC2034 # read by footprint.sh
footprint_file=/dev/null VMTEST_BUILD_DIR=$build_dir
# shellcheck source-path=SCRIPTDIR source=../vm/footprint.sh
source "$source_dir/tests/vm/footprint.sh"
footprint_report() { # PID LABEL
	echo "$2:"
	echo "  VmRSS $(status_kib "$1" VmRSS) KiB, pinned (Rss of locked mappings) $(pinned_kib "$1") KiB," \
		"VmSize $(status_kib "$1" VmSize) KiB, threads $(status_kib "$1" Threads)," \
		"major faults $(major_faults "$1")"
	echo "  RSS KiB  pinned KiB  mapping (the 16 largest)"
	mapping_breakdown "$1" | head -n 16 | sed 's/^/  /'
}
major_faults() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $10 }'; } # majflt, after the command's ")"

own=$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)
mount=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[[ -n $mount ]] || {
	echo "no cgroup2 mount here" >&2
	exit 1
}
tmp=$(mktemp -d /tmp/daemon-footprint.XXXXXX)
cgroup=$mount${own%/}/infervisor-footprint-$$
daemon_pid=
cleanup() {
	if [[ -n $daemon_pid ]]; then
		kill -TERM "$daemon_pid" 2>/dev/null || true
		wait "$daemon_pid" 2>/dev/null || true
	fi
	# The daemon stops its workers; what is left of the tree goes.
	find "$cgroup" -depth -type d -exec rmdir {} + 2>/dev/null || true
	[[ -n ${FOOTPRINT_KEEP:-} ]] || rm -rf "$tmp"
}
trap cleanup EXIT

config=$tmp/infervisor.yaml
cp "$source_dir/etc/infervisor.yaml" "$config"
if $metrics; then
	sed -i "s/^# metrics:\$/metrics:/; s/^#   listen: 127.0.0.1:9816\$/  listen: 127.0.0.1:$port/" "$config"
	grep -q "^  listen: 127.0.0.1:$port\$" "$config" || {
		echo "the shipped config's metrics listener line has changed" >&2
		exit 1
	}
fi
mkdir -p "$tmp/workers.d"
{
	echo "workers:"
	for i in $(seq 1 "$count"); do
		printf '  - name: w%02d\n    command: [%s, --model-mb, "1"]\n    notify: true\n    memory: {max: 32M}\n' "$i" "$worker"
	done
} >"$tmp/workers.d/footprint.yaml"
chmod 755 "$tmp"

# Without the memory controller on the unified hierarchy (a hybrid host, a
# container), the daemon gets a fake root of plain directories: it runs, but
# its workers cannot start there (a worker's cgroup made by mkdir has no
# cgroup.procs), so they end "failed" after their restarts. The daemon's
# code, libraries, configuration, per-worker state and requests are the
# same; what is missing is the workers' sampling, triggers and processes.
fake=false
if grep -qw memory "$mount${own%/}/cgroup.controllers" 2>/dev/null; then
	mkdir "$cgroup"
else
	fake=true
	cgroup=$tmp/fake-cgroup
	mkdir "$cgroup"
	fake_cgroup() {
		mkdir -p "$1"
		echo "memory pids cpu" >"$1/cgroup.controllers"
		: >"$1/cgroup.subtree_control"
		: >"$1/cgroup.procs"
	}
	fake_cgroup "$cgroup"
	fake_cgroup "$cgroup/supervisor"
	fake_cgroup "$cgroup/workers"
	echo "note: no memory controller in $mount${own%/}: a fake cgroup root in $cgroup" >&2
fi
# As infervisord.service runs it; LD_BIND_NOW= (empty) measures lazy binding.
LD_BIND_NOW=${LD_BIND_NOW-1} "$daemon" -c "$config" --cgroup-root "$cgroup" --runtime-dir "$tmp/run" --state-dir "$tmp/state" \
	2>"$tmp/daemon.log" &
daemon_pid=$!
export INFERVISOR_SOCKET=$tmp/run/io.infervisor

settled_workers() { # ready ones, or on a fake root failed ones
	local pattern="is ready"
	$fake && pattern="\\[failed\\]"
	(($(grep -c "$pattern" "$tmp/daemon.log" || true) >= count))
}
for _ in $(seq 300); do
	settled_workers && break
	kill -0 "$daemon_pid" 2>/dev/null || {
		cat "$tmp/daemon.log" >&2
		exit 1
	}
	sleep 1
done
settled_workers || {
	echo "not every worker settled; the daemon's log:" >&2
	cat "$tmp/daemon.log" >&2
	exit 1
}

label="infervisord ($build_dir), shipped config, $count worker(s)$($fake && echo ' (fake cgroup root: failed)'), metrics $($metrics && echo on || echo off)"
settle_rss "$daemon_pid"
footprint_report "$daemon_pid" "$label, idle"
before=$(status_kib "$daemon_pid" VmRSS)

one_round() {
	setpriv --reuid=65534 --regid=65534 --clear-groups "$ctl" config check "$config" >/dev/null
	"$ctl" --no-pager status --json >/dev/null
	if $metrics; then curl -sf "http://127.0.0.1:$port/metrics" >/dev/null; fi
}
for _ in $(seq "$rounds"); do one_round; done
settle_rss "$daemon_pid"
footprint_report "$daemon_pid" "$label, after $rounds round(s) of config check + status --json$($metrics && echo ' + metrics scrape')"
after=$(status_kib "$daemon_pid" VmRSS)
echo "VmRSS idle $before KiB, after the requests $after KiB ($((after - before)) KiB)"
sleep "${FOOTPRINT_HOLD:-0}" # seconds to leave the daemon running for a look at /proc/PID
