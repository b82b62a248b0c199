#!/bin/bash
# Issue 25, case 2: a second model load. With the SHIPPED main configuration
# and a worker as the README shows it (a command and a cap; no notify, no
# probes), a server loads a 200 MB model, serves for 55 s, then loads a
# second model: +150 MB in 3 s (an on-demand model switch), within its 800M
# cap. The host is left low but steady (8-10% of RAM available: under
# the old rule's 10%), with 1 GiB of (zram) swap nearly all free (the
# worker may not swap; the kernel may page a little of the rest out) and no
# memory pressure. That is no emergency: nobody is acted on, the server's
# first run serves on. (The old `host.mem.available < 10%` killed it at once
# and it was restarted into the same state.)
#
# The rest of the guest's memory is taken by ballast processes outside the
# daemon, added in steps until MemAvailable is at the level wanted before
# the second load (8% + 150 MiB), so the level the host is left at does not
# depend on the guest's own footprint or on how the kernel's estimate moves
# as memory fills. (One ballast sized from a single reading once left the
# host at 2.9%, where host-memory-low rightly acts on a fast fill.) Checked
# by outcome: no policy action at all while the server serves 40 requests
# after its second load; an action or exit fails the case at once. Figures
# (not asserted): the level the host was left at and the swap traffic.
# Guest time ~100 s.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
zram_swap_on 1G
at_exit zram_swap_off # last: after the workers and the ballast are gone
at_exit systemctl stop infervisord
at_exit dump_state

available_pct() { awk '/^MemTotal:/ { m = $2 } /^MemAvailable:/ { a = $2 } END { printf "%.2f", 100 * a / m }' /proc/meminfo; }
pswp() { awk '$1 == "pswpin" || $1 == "pswpout" { s += $2 } END { print s }' /proc/vmstat; }
leak_began() { journalctl -q --no-pager --cursor="$ivd_cursor" -t infervisor-worker-server | grep -q -E 'leaked|leak done'; }
leak_done() { journalctl -q --no-pager --cursor="$ivd_cursor" -t infervisor-worker-server | grep -q 'leak done'; }

# ballast MIB: a process outside the daemon holding MIB of anonymous memory.
ballast() {
	"$ivd_example_worker" --name "ballast-$1" --model-mb "$1" --serve-interval-ms 60000 >/dev/null 2>&1 &
	local pid=$!
	at_exit kill "$pid"
	# Loaded once its resident size reached the model's.
	local deadline=$((SECONDS + 300))
	until (($(awk '/^VmRSS:/ { print int($2 / 1024) }' "/proc/$pid/status") >= $1)); do
		((SECONDS < deadline)) || return 1
		sleep 0.2
	done
}

available_mib() { echo $(($(mem_kib MemAvailable) / 1024)); }

# fill_to MIB: ballast in steps until MemAvailable is within 8 MiB above MIB:
# each step takes three quarters of what is left to take (a ballast costs
# the host more than its size: 290 MiB took 326), measured after it has
# loaded and the kernel's figures have settled.
fill_to() {
	local want=$1 step=0 size
	size=$(($(available_mib) - want))
	while ((size > 8 && step < 12)); do
		size=$((size * 3 / 4))
		log "MemAvailable $(available_mib) MiB; ballast $size MiB"
		ballast "$size" || return 1
		sleep 2
		size=$(($(available_mib) - want))
		step=$((step + 1))
	done
}

# acted_on: a policy action or an exit of the server since the daemon started.
acted_on() {
	(($(ivd_journal INFERVISOR_EVENT=policy-action -o cat | grep -c . || true) > 0)) ||
		(($(event_count server exited) > 0))
}

leak_done_or_acted_on() { leak_done || acted_on; }

a_second_model_load_is_no_emergency() {
	install_infervisor
	use_workers second-model.yaml <<-YAML
		workers:
		  - name: server
		    command: [$ivd_example_worker, --model-mb, "200", --serve-interval-ms, "500",
		              --leak-after-ms, "55000", --leak-mb-per-s, "50", --leak-max-mb, "150"]
		    memory: {max: 800M}
	YAML
	fresh_daemon
	wait_until 300 has_events server ready 1
	local server_pid
	server_pid=$(main_pid server)
	# The ballast leaves 8-10% of MemTotal once the second model is in (it
	# costs the host 135-150 MiB); it loads right after the first model,
	# long before the second load.
	local target_mib
	target_mib=$(($(mem_kib MemTotal) / 1024 * 8 / 100 + 150))
	fill_to "$target_mib"
	# The level is the one wanted only if the second load had not begun.
	assert_fails leak_began
	log "MemAvailable with the ballast: $(available_pct)% ($(available_mib) MiB; wanted $target_mib MiB: 8% + 150 MiB)"

	local swapped_before
	swapped_before=$(pswp)
	wait_until 600 leak_done_or_acted_on
	log "the second model is in: MemAvailable $(available_pct)%, swap used" \
		"$((($(mem_kib SwapTotal) - $(mem_kib SwapFree)) / 1024)) MiB"
	local low=100 pct served deadline=$((SECONDS + 600))
	served=$(served_count server)
	until served_more_than server $((served + 40)); do
		if acted_on; then
			_vmtest_assert_failed "the server was acted on: $(ivd_journal INFERVISOR_EVENT=policy-action -o cat | head -n 1)"
			return 1
		fi
		pct=$(available_pct)
		if awk -v p="$pct" -v l="$low" 'BEGIN { exit !(p < l) }'; then low=$pct; fi
		((SECONDS < deadline)) || { _vmtest_assert_failed "the server did not serve 40 requests in 600 s"; return 1; }
		sleep 0.5
	done
	# The host was low indeed (the old rule's level), and stayed that way.
	log "FIGURES second model: host left at $low% available (lowest seen while serving 40 requests);" \
		"pages swapped in+out $(($(pswp) - swapped_before)); memory some avg10" \
		"$(sed -n 's/^some avg10=\([0-9.]*\) .*/\1/p' /proc/pressure/memory)%"
	assert_cmd awk -v p="$low" 'BEGIN { exit !(p < 12 && p > 4) }'

	assert_eq 0 "$(ivd_journal INFERVISOR_EVENT=policy-action -o cat | grep -c . || true)" "policy actions"
	assert_eq 0 "$(event_count server exited)" "server's exits"
	assert_eq 1 "$(event_count server started)" "server's starts"
	assert_eq "$server_pid" "$(main_pid server)" "server's pid"
	assert_cmd kill -0 "$server_pid"
	assert_eq 0 "$(kernel_oom_kills)" "kernel OOM kills"
	what_if_agrees second-model-load
	systemctl stop infervisord
}
run_scenario a-second-model-load-that-leaves-the-host-low-but-steady-is-left-alone a_second_model_load_is_no_emergency
