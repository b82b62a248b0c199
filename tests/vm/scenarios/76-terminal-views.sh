#!/bin/bash
# Issue 27: `infervisorctl top` and `infervisorctl events -f` as a person
# sees them, on a real terminal (tmux, 80x24). top: its header, one row per
# worker that fits the 80 columns (a wider table would wrap, and its last
# column would fall on the next line), and q ends it with the screen given
# back. events -f: a new event appears as it happens, and when the daemon
# stops the stream says so and ends with exit 0.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state
at_exit tmux kill-server

# screen SESSION: what the terminal shows, one screen row per line.
screen() { tmux capture-pane -p -t "$1"; }
# joined SESSION: the same with wrapped rows joined into their lines.
joined() { tmux capture-pane -p -J -t "$1"; }
shows() { screen "$1" | grep -qF -- "$2"; }       # SESSION TEXT
shows_joined() { joined "$1" | grep -qF -- "$2"; } # SESSION TEXT
# on_terminal SESSION COMMAND: runs it in an 80x24 terminal; the pane stays
# after it ends, with its exit code.
on_terminal() {
	tmux new-session -d -s "$1" -x 80 -y 24 "$2; echo \"$1 exited \$?\"; sleep 3600"
}

top_and_events_on_a_terminal() {
	install_infervisor
	start_two_idle_workers terminal.yaml
	wait_until 120 test -S /run/infervisor/io.infervisor

	on_terminal top "infervisorctl top"
	wait_until 120 shows top "(q to quit)"
	wait_until 120 eval 'screen top | grep -q "^one "'
	local shown header
	shown=$(screen top)
	assert_contains "$shown" "infervisor: 2 workers" "top's header"
	header=$(grep "^NAME" <<<"$shown" || true)
	assert_contains "$header" "STATE" "the table's header row"
	assert_contains "$header" "RESTARTS" "the last column on the header's row: it fits 80 columns"
	assert_contains "$(grep "^one " <<<"$shown" || true)" "running" "one's row"
	assert_contains "$(grep "^two " <<<"$shown" || true)" "running" "two's row"
	tmux send-keys -t top q
	wait_until 120 shows top "top exited 0"
	assert_fails shows top "(q to quit)" # the alternate screen is left

	on_terminal events "infervisorctl events -f"
	wait_until 120 shows_joined events "two ready"
	infervisorctl stop one
	wait_until 120 shows_joined events "one stopped"
	assert_fails shows events "events exited" # still following
	systemctl stop infervisord
	wait_until 120 shows_joined events "-- infervisord closed the connection"
	wait_until 120 shows events "events exited 0"
}
run_scenario top-and-events-follow-on-a-terminal top_and_events_on_a_terminal
