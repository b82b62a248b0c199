#!/bin/bash
# Idle profile (issue 28), a VM payload that reports figures and asserts
# nothing: where the daemon's CPU goes while it supervises 20 idle workers
# with the packaged main configuration, as `perf record` sees it in the
# guest (the build's unstripped daemon replaces the installed one, so that
# perf names its functions), and its CPU time over a minute without perf.
# Needs perf on the host (Debian: linux-perf), which the guest shares.
#
#   tests/vm/run-vm --build-dir DIR --results DIR/vm-results/idle-profile \
#       -- tests/vm/bench/idle-profile-bench.sh
#
# Writes cpu.txt (the minute's CPU time), perf-self.txt (functions by their
# own samples), perf-children.txt (by samples in them and their callees) and
# perf.data to the results dir.
set -uo pipefail
here=${BASH_SOURCE[0]%/*}
# shellcheck source=../lib.sh
VMTEST_LIB_FUNCTIONS_ONLY=1 source "$here/../lib.sh"
# shellcheck source=../infervisor.sh
source "$here/../infervisor.sh"
_vmtest_state=$(mktemp -d) # wait_until's notes (functions-only mode makes none)
out=${VMTEST_RESULTS:-/tmp}
count=20

command -v perf >/dev/null || { echo "idle-profile: no perf on this host (apt install linux-perf)" >&2; exit 1; }
install_infervisor
cp "$VMTEST_BUILD_DIR/daemon/infervisord" /usr/sbin/infervisord
idle_workers_yaml "$count" | use_workers profile.yaml
fresh_daemon || exit 1
all_ready() { (($(ivd_journal INFERVISOR_EVENT=ready -o cat | grep -c . || true) >= count)); }
wait_until 1200 all_ready || exit 1
sleep 5 # start-up done
daemon=$(systemctl show -P MainPID infervisord)
ticks() { sed 's/.*) //' "/proc/$daemon/stat" | awk '{ print $12 + $13 }'; }

t0=$(ticks)
sleep 60
t1=$(ticks)
awk -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" \
	'BEGIN { printf "%d workers, 60 s without perf: %.2f %% of one core\n", '"$count"', 100 * t / hz / 60 }' |
	tee "$out/cpu.txt"

perf record -F 1000 --call-graph dwarf,8192 -o /run/perf.data -p "$daemon" -- sleep 120 2>&1 | tail -1
perf report -i /run/perf.data --no-children --sort dso,sym --stdio -g none 2>/dev/null |
	head -120 >"$out/perf-self.txt"
perf report -i /run/perf.data --children --sort sym --stdio -g none 2>/dev/null |
	head -200 >"$out/perf-children.txt"
cp /run/perf.data "$out/"
systemctl stop infervisord
