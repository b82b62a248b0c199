#!/bin/bash
# Issue 25, case 1 (the seeds' fourth crash): the tiny host. With the SHIPPED
# main configuration and workers as the README shows them (a command and a
# cap; no notify, no probes), an important 350 MB server (cap 400M) serves
# steadily; then a batch job (cap 1G) starts and grows at 20 MB/s toward
# 800 MB, more than the 1 GiB guest (no swap) has left. The batch job never
# holds still, so it is "loading" throughout. The host rules act on the
# grower, not on the larger server that holds still: the batch job is
# killed first (and, if it comes back and grows again, again), the server is
# never acted on and its first run serves on; no kernel OOM kill.
#
# Checked by order and outcome, never by time. Figures (not asserted): the
# rule, the victim's reason as journaled, the time from the batch job's
# start and from the host crossing into danger (MemAvailable under 25% of
# MemTotal) to the kill. Guest time ~90 s.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

server_entry() {
	cat <<-YAML
		  - name: server
		    command: [$ivd_example_worker, --model-mb, "350", --serve-interval-ms, "500"]
		    memory: {max: 400M}
	YAML
}

batch_entry() {
	cat <<-YAML
		  - name: batch
		    command: [$ivd_example_worker, --model-mb, "10", --leak-mb-per-s, "20", --leak-max-mb, "800"]
		    memory: {max: 1G}
	YAML
}

# memwatch FILE: "REALTIME_US AVAILABLE_PCT" every half second, for figures.
# Run in the background and killed when done: no assertion of the
# scenario's may see its commands die.
memwatch() {
	trap - ERR
	set +e
	while :; do
		awk -v t="$(date +%s%6N)" '/^MemTotal:/ { m = $2 } /^MemAvailable:/ { a = $2 }
			END { printf "%s %.2f\n", t, 100 * a / m }' /proc/meminfo
		sleep 0.5
	done >"$1"
}

policy_actions() { # every policy action since fresh_daemon: WORKER:ACTION, oldest first
	# Each message is "WORKER: rule 'RULE': ACTION: why -> result".
	ivd_journal INFERVISOR_EVENT=policy-action -o cat |
		awk -F ': ' '{ printf "%s%s:%s", (n++ ? " " : ""), $1, $3 } END { print "" }'
}

only_kills_of_batch() { [[ $1 =~ ^batch:kill( batch:kill)*$ ]]; }

the_grower_pays_not_the_steady_server() {
	install_infervisor
	if swapon --show=NAME --noheadings | grep -q .; then
		log "swap is on: $(swapon --show=NAME,SIZE --noheadings)"
	fi
	{
		echo "workers:"
		server_entry
	} | use_workers tiny.yaml
	fresh_daemon
	wait_until 300 has_events server ready 1
	local server_pid served
	server_pid=$(main_pid server)
	# Serving and holding still for a while (its load is long out of every
	# growth window) before the batch job comes.
	served=$(served_count server)
	wait_until 300 served_more_than server $((served + 30))

	local watch=/run/vmtest-135-memwatch watcher
	memwatch "$watch" &
	watcher=$!
	at_exit kill "$watcher"
	{
		echo "workers:"
		server_entry
		batch_entry
	} | use_workers tiny.yaml
	systemctl reload infervisord
	wait_until 300 has_events batch started 1
	wait_until 600 has_events batch exited 1
	# Whatever follows (the batch job waiting for room, or restarted and
	# grown again), the server serves 20 more requests untouched.
	served=$(served_count server)
	wait_until 300 served_more_than server $((served + 20))

	local actions
	actions=$(policy_actions)
	log "policy actions, oldest first: $actions"
	assert_cmd only_kills_of_batch "$actions"
	local rule reason phase
	rule=$(event_field batch policy-action RULE | head -n1)
	reason=$(event_field batch policy-action VICTIM_REASON | head -n1)
	phase=$(event_field batch policy-action PHASE | head -n1)
	assert_word "host-memory-low host-memory-running-out" "$rule" "the host rule"
	assert_contains "$reason" "growing " "why the batch job was chosen"
	assert_contains "$reason" "others: server +" "the server was considered"
	assert_eq loading "$phase" "the batch job's phase when acted on"
	assert_eq SIGKILL "$(event_field batch exited EXIT_SIGNAL | head -n1)" "batch's exit signal"
	assert_eq 0 "$(event_count server policy-action)" "server's policy actions"
	assert_eq 0 "$(event_count server exited)" "server's exits"
	assert_eq 1 "$(event_count server started)" "server's starts"
	assert_eq "$server_pid" "$(main_pid server)" "server's pid"
	assert_cmd kill -0 "$server_pid"
	assert_eq 0 "$(kernel_oom_kills)" "kernel OOM kills"

	kill "$watcher" 2>/dev/null || true
	local started killed danger
	started=$(ivd_journal INFERVISOR_WORKER=batch INFERVISOR_EVENT=started -o export |
		sed -n 's/^__REALTIME_TIMESTAMP=//p' | head -n1)
	killed=$(ivd_journal INFERVISOR_WORKER=batch INFERVISOR_EVENT=policy-action -o export |
		sed -n 's/^__REALTIME_TIMESTAMP=//p' | head -n1)
	danger=$(awk -v s="$started" -v k="$killed" '$1 >= s && $1 <= k && $2 < 25 { print $1; exit }' "$watch")
	local from_danger="n/a (never under 25% before the kill)"
	[[ -z $danger ]] || from_danger="$(((killed - danger) / 1000)) ms"
	log "FIGURES tiny host: rule $rule; batch started -> kill $(((killed - started) / 1000)) ms;" \
		"MemAvailable < 25% -> kill $from_danger;" \
		"MemAvailable at the kill $(event_field batch policy-action HOST_MEM_AVAILABLE_PCT | head -n1)%"
	log "victim reason: $reason"
	log "decision: $(ivd_journal INFERVISOR_WORKER=batch INFERVISOR_EVENT=policy-action -o cat | head -n1)"
	what_if_agrees tiny-host
	systemctl stop infervisord
}
run_scenario the-tiny-host-kills-the-growing-batch-job-not-the-steady-server the_grower_pays_not_the_steady_server
