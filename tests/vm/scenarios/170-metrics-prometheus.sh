#!/bin/bash
# Metrics with Debian's real Prometheus (package `prometheus`): the daemon
# serves /metrics on 127.0.0.1:9816 and writes a textfile, Prometheus scrapes
# it every second; a worker leaking 4 MiB/s is killed and parked by a growth
# rule. Then, through Prometheus' HTTP API, PromQL returns the leaker's memory
# series and its policy action counter, and its state is `parked`;
# `promtool check metrics` on a scrape and on the textfile is clean;
# `infervisorctl history` shows the samples and the kill, as --json, as
# --csv, and drawn on a terminal (tmux capture, kept in the results dir).
#
# Prometheus under emulation is slow to start (10-60 s), so this scenario is
# not in the default list: run it with
#   tests/vm/run-all --build-dir BUILD --skip-selftest 170-metrics-prometheus
# It is skipped (a PASS that says so) when prometheus is not installed.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

dir=/run/vmtest-170
main_config=$ivd_conf/infervisor.yaml
prom=http://127.0.0.1:9090

# promql QUERY: the first result's value, or nothing.
promql() {
	curl -fsS "$prom/api/v1/query" --data-urlencode "query=$1" |
		jq -r '.data.result[0].value[1] // empty'
}
has_value() { [[ -n $(promql "$1") ]]; }
prometheus_ready() { curl -fsS "$prom/-/ready" >/dev/null 2>&1; }

start_prometheus() {
	mkdir -p "$dir/tsdb"
	cat >"$dir/prometheus.yml" <<-YAML
		global: {scrape_interval: 1s, evaluation_interval: 1s}
		scrape_configs:
		  - job_name: infervisor
		    static_configs: [{targets: ['127.0.0.1:9816']}]
	YAML
	prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/tsdb" \
		--web.listen-address=127.0.0.1:9090 >"$VMTEST_RESULTS/170-prometheus.log" 2>&1 &
	local pid=$!
	at_exit kill "$pid"
	wait_until 300 prometheus_ready
}

prometheus_sees_a_leak_stopped_by_a_rule() {
	if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
		log "SKIPPED: prometheus is not installed (apt-get install prometheus on the host)"
		return 0
	fi
	install_infervisor
	mkdir -p "$dir"
	cp "$main_config" "$dir.saved.yaml"
	at_exit cp "$dir.saved.yaml" "$main_config"
	{
		grep -Ev '^(sample_interval|growth_window):' "$dir.saved.yaml"
		cat <<-YAML
			sample_interval: 1s
			growth_window: 10s
			metrics:
			  listen: 127.0.0.1:9816
			  textfile: $dir/infervisor.prom
			  textfile_interval: 5s
			  history: 10m
		YAML
	} >"$main_config"
	use_workers metrics.yaml <<-YAML
		workers:
		  - name: leaker
		    command: [$ivd_example_worker, --leak-mb-per-s, "4"]
		    notify: true
		    memory: {max: 256M, high: 224M}
		    rules:
		      - {name: runaway-growth, enabled: false}
		      - {name: memory-pressure, enabled: false}
		      - {name: leak, when: "memory.growth > 15%/min for 10s", action: kill, then: park}
		  - name: sibling
		    command: [$ivd_example_worker, --serve-interval-ms, "1000"]
		    notify: true
		    memory: {max: 64M}
	YAML
	start_prometheus
	fresh_daemon
	wait_until 300 has_events leaker parked 1
	assert_eq leak "$(event_field leaker policy-action RULE)" "rule"

	# Prometheus scraped the leaker while it ran, and sees the kill counted
	# and the worker parked (a scrape after the kill).
	wait_until 120 has_value 'infervisor_worker_state{worker="leaker",state="parked"} == 1'
	local peak actions
	peak=$(promql 'max_over_time(infervisor_worker_memory_bytes{worker="leaker"}[10m])')
	log "leaker's memory as Prometheus saw it, at most: $peak bytes"
	assert_cmd test "${peak%.*}" -gt $((4 * 1024 * 1024))
	assert_cmd has_value 'count_over_time(infervisor_worker_memory_bytes{worker="leaker"}[10m]) >= 2'
	actions=$(promql 'infervisor_policy_actions_total{worker="leaker",rule="leak",action="kill"}')
	assert_eq 1 "$actions" "policy action counter"
	assert_cmd has_value 'max_over_time(infervisor_worker_memory_growth_per_minute_ratio{worker="leaker"}[10m]) > 0.15'
	assert_eq 1 "$(promql 'infervisor_worker_state{worker="sibling",state="running"}')" "sibling running"

	# The exposition passes Prometheus' linter, served and as a file.
	curl -fsS http://127.0.0.1:9816/metrics >"$VMTEST_RESULTS/170-scrape.txt"
	assert_eq "" "$(promtool check metrics <"$VMTEST_RESULTS/170-scrape.txt" 2>&1)" "promtool on the scrape"
	# The textfile is rewritten every textfile_interval (5s), not every round.
	wait_until 60 grep -qF 'infervisor_policy_actions_total{worker="leaker",rule="leak",action="kill"} 1' "$dir/infervisor.prom"
	assert_eq "" "$(promtool check metrics <"$dir/infervisor.prom" 2>&1)" "promtool on the textfile"
	# Anything but GET /metrics is refused.
	assert_contains "$(curl -sS -o /dev/null -w '%{http_code}' http://127.0.0.1:9816/)" 404 "GET /"

	# History: the samples of the run and the kill, readable by anyone.
	local json
	json=$(setpriv --reuid=65534 --regid=65534 --clear-groups infervisorctl history leaker --json)
	assert_cmd test "$(jq '.samples | length' <<<"$json")" -ge 5
	# Drawn from the policy's recording: its interval, and the growth the
	# rule judged (memory.growth, known once the window is filled).
	# (the median gap between ticks: 1s give or take the timer's jitter)
	assert_eq true "$(jq '.interval_usec >= 900000 and .interval_usec <= 1100000' <<<"$json")" \
		"history's sample interval is about 1s: $(jq .interval_usec <<<"$json")"
	assert_cmd test "$(jq '[.samples[] | select(.memory_growth_percent_per_min != null)] | length' <<<"$json")" -ge 1
	assert_eq kill "$(jq -r '.actions[-1].action' <<<"$json")" "history's last action"
	assert_eq leak "$(jq -r '.actions[-1].rule' <<<"$json")" "history's last rule"
	infervisorctl history leaker --csv >"$VMTEST_RESULTS/170-history.csv"
	assert_cmd grep -q '^time_usec,memory_current,' "$VMTEST_RESULTS/170-history.csv"
	if command -v tmux >/dev/null; then
		tmux new-session -d -s hist -x 100 -y 30 "infervisorctl history leaker; sleep 60"
		sleep 2
		tmux capture-pane -p -t hist >"$VMTEST_RESULTS/170-history-tty.txt"
		tmux kill-session -t hist
		log "infervisorctl history on a terminal:"
		cat "$VMTEST_RESULTS/170-history-tty.txt"
		assert_file_contains "$VMTEST_RESULTS/170-history-tty.txt" "leaker: last"
		assert_file_contains "$VMTEST_RESULTS/170-history-tty.txt" "rule 'leak': kill"
	fi
}
run_scenario prometheus-sees-a-leak-stopped-by-a-rule prometheus_sees_a_leak_stopped_by_a_rule
