#include "supervise/admission_queue.h"

#include <algorithm>

#include "base/file_io.h"
#include "cgroup/cgroup_stats.h"
#include "policy/stat_files.h"
#include "supervise/worker.h"

namespace infervisor {

namespace {

bool holds_memory(WorkerState s) {
    return s == WorkerState::starting || s == WorkerState::running || s == WorkerState::stopping;
}

std::optional<uint64_t> memory_current(const Worker& w) {
    return value_or_empty(CgroupStats(w.cgroup()).memory_current());
}

}  // namespace

AdmissionQueue::AdmissionQueue(WorkerContext& ctx, WorkerList workers)
    : ctx_(ctx), workers_(std::move(workers)), timer_(ctx.clock.make_timer()) {
    subscription_ = ctx_.events.subscribe([this](const Event& e) { on_event(e); });
}

AdmissionQueue::~AdmissionQueue() { ctx_.events.unsubscribe(subscription_); }

AdmissionVerdict AdmissionQueue::check(const WorkerSpec& spec) const {
    std::vector<ReservedWorker> running;
    for (const Worker* w : workers_())
        if (w->name() != spec.name && w->spec().memory.reserve && holds_memory(w->state()))
            running.push_back({w->name(), *w->spec().memory.reserve, memory_current(*w)});
    std::optional<uint64_t> available;
    if (auto host = read_meminfo(ctx_.paths.procfs)) available = host->mem_available;
    return check_admission(spec.memory.reserve.value_or(0), available, running);
}

void AdmissionQueue::on_event(const Event& e) {
    switch (e.kind) {
        case EventKind::waiting:
            return schedule(kRecheck);
        case EventKind::exited:
        case EventKind::stopped:
        case EventKind::suspended:
            return schedule(kAfterExit);
        default:
            return;
    }
}

void AdmissionQueue::schedule(Duration delay) {
    auto due = ctx_.clock.now() + delay;
    if (timer_->armed() && timer_->due() <= due) return;
    timer_->arm_at(due, [this] { recheck(); });
}

void AdmissionQueue::recheck() {
    std::vector<Worker*> waiting;
    for (Worker* w : workers_())
        if (w->state() == WorkerState::waiting) waiting.push_back(w);
    if (waiting.empty()) return;
    std::sort(waiting.begin(), waiting.end(), [](const Worker* a, const Worker* b) {
        return std::make_pair(-a->spec().priority, a->name()) <
               std::make_pair(-b->spec().priority, b->name());
    });
    // A start changes no worker's place in the Supervisor (only states).
    for (Worker* w : waiting) w->start();
    for (const Worker* w : workers_())
        if (w->state() == WorkerState::waiting) return schedule(kRecheck);
}

}  // namespace infervisor
