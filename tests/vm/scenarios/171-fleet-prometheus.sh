#!/bin/bash
# Issue 32: Prometheus for the fleet, with Debian's real Prometheus and the
# shipped etc/prometheus files as a new user copies them (prometheus.yml,
# infervisor-alerts.yml; only the targets file names this guest's two
# "hosts"). Two daemons run side by side in the guest, each its own host:
# gpu-a is the packaged service (metrics on 127.0.0.1:9816, a healthy
# worker), gpu-b a second infervisord with its own config, runtime dir,
# state dir and cgroup subtree (metrics on 127.0.0.1:9817) whose worker
# crashes until it hits its start limit (state failed). Prometheus scrapes
# both through file_sd with a `host` label each; the alert
# InfervisorWorkerParked fires for host gpu-b, worker crasher, and no alert
# names gpu-a; the series of both hosts carry their host label.
# Guest time: about 2-4 min (Prometheus's start under emulation, the shipped
# 15s evaluation interval and the alert's `for: 1m`).
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/../lib.sh"
source "${BASH_SOURCE[0]%/*}/../infervisor.sh"
at_exit systemctl stop infervisord
at_exit dump_state

dir=/run/vmtest-171
main_config=$ivd_conf/infervisor.yaml
conf_b=/etc/infervisor-b
prom=http://127.0.0.1:9090

promql() {
	curl -fsS "$prom/api/v1/query" --data-urlencode "query=$1" | jq -r '.data.result[0].value[1] // empty'
}
has_value() { [[ -n $(promql "$1") ]]; }
prometheus_ready() { curl -fsS "$prom/-/ready" >/dev/null 2>&1; }
# firing ALERT: "host/worker" of each firing alert of that name, sorted.
firing() {
	curl -fsS "$prom/api/v1/alerts" |
		jq -r --arg a "$1" '.data.alerts[] | select(.labels.alertname == $a and .state == "firing")
			| "\(.labels.host)/\(.labels.worker)"' | sort
}
fires_for_b() { [[ $(firing InfervisorWorkerParked) == gpu-b/crasher ]]; }
b_failed() {
	[[ $(infervisorctl --socket /run/infervisor-b/io.infervisor status --json crasher 2>/dev/null |
		jq -r '.workers[0].state') == failed ]]
}

two_hosts_one_alert() {
	if ! command -v prometheus >/dev/null; then
		fail "prometheus is not installed on the host (apt-get install prometheus)"
		return 1
	fi
	install_infervisor
	mkdir -p "$dir/tsdb"
	cp "$main_config" "$dir/main.saved.yaml"
	at_exit cp "$dir/main.saved.yaml" "$main_config"
	{
		grep -Ev '^(sample_interval):' "$dir/main.saved.yaml"
		printf 'sample_interval: 1s\nmetrics:\n  listen: 127.0.0.1:9816\n'
	} >"$main_config"
	use_workers fleet-a.yaml <<-YAML
		workers:
		  - name: steady
		    command: [$ivd_example_worker, --serve-interval-ms, "500"]
		    memory: {max: 64M}
	YAML
	fresh_daemon

	# Host gpu-b: a second daemon with everything of its own.
	mkdir -p "$conf_b/workers.d" /var/lib/infervisor-b /sys/fs/cgroup/vmtest-171-b
	at_exit rm -rf "$conf_b"
	cat >"$conf_b/infervisor.yaml" <<-YAML
		control_group: infervisor
		sample_interval: 1s
		metrics:
		  listen: 127.0.0.1:9817
	YAML
	cat >"$conf_b/workers.d/fleet-b.yaml" <<-YAML
		workers:
		  - name: crasher
		    command: [$ivd_example_worker, --crash-after-ms, "100", --exit-code, "3"]
		    memory: {max: 64M}
		    restart: {policy: always, backoff_initial: 100ms, start_limit_burst: 3, start_limit_interval: 10m}
	YAML
	systemd-run --unit=vmtest-171-infervisord-b -p Delegate=yes -p Type=notify \
		/usr/sbin/infervisord -c "$conf_b/infervisor.yaml" --runtime-dir /run/infervisor-b \
		--state-dir /var/lib/infervisor-b --cgroup-root /sys/fs/cgroup/vmtest-171-b
	at_exit systemctl stop vmtest-171-infervisord-b
	wait_until 120 b_failed

	# Prometheus with the shipped files; the targets name the two hosts.
	install -m 644 "$VMTEST_SRC_DIR/etc/prometheus/prometheus.yml" \
		"$VMTEST_SRC_DIR/etc/prometheus/infervisor-alerts.yml" "$dir/"
	cat >"$dir/infervisor-targets.yml" <<-YAML
		- targets: ['127.0.0.1:9816']
		  labels: {host: gpu-a}
		- targets: ['127.0.0.1:9817']
		  labels: {host: gpu-b}
	YAML
	echo '[]' >"$dir/node-targets.yml"
	(cd "$dir" && promtool check config prometheus.yml) || fail "promtool check config"
	(cd "$dir" && exec prometheus --config.file=prometheus.yml --storage.tsdb.path=tsdb \
		--web.listen-address=127.0.0.1:9090 >"$VMTEST_RESULTS/171-prometheus.log" 2>&1) &
	at_exit kill $!
	wait_until 300 prometheus_ready

	wait_until 300 has_value 'infervisor_worker_state{host="gpu-a",worker="steady",state="running"} == 1'
	wait_until 300 has_value 'infervisor_worker_state{host="gpu-b",worker="crasher",state="failed"} == 1'
	wait_until 400 fires_for_b
	log "firing: $(firing InfervisorWorkerParked | tr '\n' ' ')"
	assert_eq gpu-b/crasher "$(firing InfervisorWorkerParked)" "the alert names host gpu-b only"
	local summary
	summary=$(curl -fsS "$prom/api/v1/alerts" |
		jq -r '.data.alerts[] | select(.labels.alertname == "InfervisorWorkerParked") | .annotations.summary')
	log "summary: $summary"
	assert_contains "$summary" "gpu-b"
	assert_eq "" "$(curl -fsS "$prom/api/v1/alerts" | jq -r '.data.alerts[] | select(.labels.host == "gpu-a") | .labels.alertname')" "no alert for gpu-a"
	assert_eq 2 "$(promql 'count(count by (host) (infervisor_worker_state))')" "two hosts scraped"
}
run_scenario fleet-prometheus-two-hosts-one-alert two_hosts_one_alert
