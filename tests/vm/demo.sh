#!/bin/bash
# Guest payload of the README's demo (./run-demo): infervisord, installed as a
# package would install it, supervises the bundled example workers under
# systemd on a kernel with the cgroup2 memory controller. `leaky` grows until
# the kernel OOM-kills it inside its own cgroup; infervisord restarts it with
# backoff until its start limit parks it as failed; `chat` keeps serving.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/lib.sh"
source "${BASH_SOURCE[0]%/*}/infervisor.sh"

section() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

demo() {
	install_infervisor
	use_workers demo.yaml </usr/share/doc/infervisor/examples/demo.yaml
	section "/etc/infervisor/workers.d/demo.yaml"
	grep -v '^#' /etc/infervisor/workers.d/demo.yaml
	section "systemctl start infervisord"
	fresh_daemon
	wait_until 300 has_events chat ready 1
	section "systemctl status infervisor-workers (the workers' unit: each worker in its own cgroup)"
	systemctl status infervisor-workers --no-pager -l | sed -n '1,/^$/p' | head -30
	section "caps written before the workers ran"
	local w
	for w in chat leaky; do
		[[ -d $(worker_cgroup $w) ]] || continue
		printf '%-6s memory.max=%s memory.high=%s memory.swap.max=%s pids.max=%s oom.group=%s\n' "$w" \
			"$(cat "$(worker_cgroup $w)/memory.max")" "$(cat "$(worker_cgroup $w)/memory.high")" \
			"$(cat "$(worker_cgroup $w)/memory.swap.max")" "$(cat "$(worker_cgroup $w)/pids.max")" \
			"$(cat "$(worker_cgroup $w)/memory.oom.group")"
	done
	section "waiting while leaky leaks 16 MB/s into its 96M cap ..."
	wait_until 900 has_events leaky failed 1
	section "journalctl -u infervisord INFERVISOR_WORKER=leaky (its lifecycle)"
	ivd_journal INFERVISOR_WORKER=leaky -o cat
	section "kernel: OOM kills stayed inside leaky's cgroup"
	journalctl -k -q --no-pager --cursor="$ivd_cursor" | grep -o 'oom-kill:.*task_memcg=[^,]*' | sed 's/,.*task_memcg=/ ... task_memcg=/' || true
	section "chat kept serving: journalctl -t infervisor-worker-chat (last lines)"
	journalctl -q --no-pager --cursor="$ivd_cursor" -t infervisor-worker-chat -o cat | tail -n 5
	printf 'chat started %s time(s); pid %s still running: ' "$(event_count chat started)" "$(main_pid chat)"
	kill -0 "$(main_pid chat)" && echo yes
	section "systemctl status infervisord"
	systemctl status infervisord --no-pager -l | head -n 3
	systemctl stop infervisord
}
run_scenario demo demo
