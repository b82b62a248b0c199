#include "supervise/workdir_monitor.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cstring>
#include <system_error>
#include <utility>

#include "workdir/deleting_process.h"
#include "workdir/disk_usage.h"

namespace infervisor {

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

using Kind = DeletionEvent::Kind;

// A close-on-exec copy for asio to own (workers must never inherit a
// descriptor that reports other workers' deletions); start-up fails loudly
// when even that is impossible.
int cloexec_dup(int fd) {
    int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0)
        throw std::system_error(errno, std::generic_category(), "dup of a watch descriptor");
    return copy;
}

const char* action_name(Kind kind) {
    switch (kind) {
        case Kind::entry_deleted:
            return "deleted";
        case Kind::entry_moved_out:
            return "moved-out";
        case Kind::dir_deleted:
            return "dir-removed";
        case Kind::dir_moved:
            return "dir-moved";
        case Kind::overflow:
            return "overflow";
    }
    return "?";
}

std::string what_happened(const DeletionEvent& e) {
    switch (e.kind) {
        case Kind::entry_deleted:
            return (e.entry_is_dir ? "directory " : "") + e.entry + " deleted from protected dir " +
                   e.dir.string();
        case Kind::entry_moved_out:
            return (e.entry_is_dir ? "directory " : "") + e.entry + " moved out of protected dir " +
                   e.dir.string();
        case Kind::dir_deleted:
            return "protected dir " + e.dir.string() + " was removed";
        case Kind::dir_moved:
            return "protected dir " + e.dir.string() + " was moved away";
        case Kind::overflow:
            break;
    }
    return "events lost";
}

// Who did it, for the journal: DELETER is "other" (not the worker) or
// "unknown" (could not be told).
struct Attribution {
    std::string deleter;
    std::string who;  // for the message
};

Attribution attribute(const DeletingProcess& p, bool pid_known, bool worker_up) {
    std::string pid = std::to_string(p.pid);
    if (pid_known && p.alive)
        return {"other",
                "by pid " + pid + " (" + p.comm + ", cgroup " + p.cgroup + "), not the worker"};
    if (pid_known && !worker_up)
        return {"other", "by pid " + pid + " (exited since), not the worker: it has no process"};
    if (pid_known)
        return {"unknown", "by pid " + pid + ", which exited before it could be identified"};
    if (!worker_up)
        return {"other", "not by the worker (it has no process; who is not reported for this dir)"};
    return {"unknown", "by whom unknown (the process is not reported for this dir)"};
}

}  // namespace

WorkDirMonitor::WorkDirMonitor(WorkerContext& ctx, BackgroundWork& background, WorkerLookup lookup)
    : ctx_(ctx), background_(background), lookup_(std::move(lookup)), tick_(ctx.io) {}

WorkDirMonitor::~WorkDirMonitor() { stop(); }

void WorkDirMonitor::start(Duration scan_interval) {
    if (running_) return;
    running_ = true;
    interval_ = scan_interval;
    if (auto f = FanotifyDeletionWatcher::create()) {
        fanotify_.emplace(std::move(*f));
        fanotify_wait_ =
            std::make_unique<asio::posix::stream_descriptor>(ctx_.io, cloexec_dup(fanotify_->fd()));
        arm_deletion_wait(*fanotify_wait_);
    } else {
        spdlog::info("deletions in protected dirs: {}; using inotify (cannot say who deleted)",
                     f.error().message());
    }
    if (auto i = DeletionWatcher::create(ctx_.paths.procfs)) {
        inotify_.emplace(std::move(*i));
        inotify_wait_ =
            std::make_unique<asio::posix::stream_descriptor>(ctx_.io, cloexec_dup(inotify_->fd()));
        arm_deletion_wait(*inotify_wait_);
    } else {
        spdlog::warn("deletions in protected dirs: {}", i.error().message());
    }
    ctx_.workdirs.set_change_listener([this](const std::string& worker) { sync_watches(worker); });
    for (const auto& worker : ctx_.workdirs.prepared_workers()) sync_watches(worker);
    arm_tick();
}

void WorkDirMonitor::stop() {
    if (!running_) return;
    running_ = false;
    ctx_.workdirs.set_change_listener({});
    tick_.cancel();
    if (fanotify_wait_) fanotify_wait_->cancel();
    if (inotify_wait_) inotify_wait_->cancel();
}

std::optional<WorkDirMonitor::Usage> WorkDirMonitor::usage(const std::string& worker) const {
    auto it = watched_.find(worker);
    if (it == watched_.end()) return std::nullopt;
    return it->second.usage;
}

void WorkDirMonitor::fill_sample(const std::string& worker, WorkerSample& sample) const {
    auto u = usage(worker);
    if (!u) return;
    sample.workdir_usage = u->bytes;
    sample.workdir_quota = u->quota;
}

bool WorkDirMonitor::identifies_deleters(const std::string& worker) const {
    return fanotify_ && fanotify_->watches(worker) && !inotify_owners_.count(worker);
}

void WorkDirMonitor::sync_watches(const std::string& worker) {
    if (!running_) return;
    if (fanotify_) fanotify_->unwatch(worker);
    if (inotify_) inotify_->unwatch(worker);
    inotify_owners_.erase(worker);
    const PreparedWorkDir* prepared = ctx_.workdirs.find(worker);
    if (!prepared) {
        watched_.erase(worker);
        limit_.forget(worker);
        return;
    }
    watched_[worker];
    auto watch = [&](const PreparedDir& dir) {
        if (!dir.is_protected()) return;
        if (fanotify_) {
            auto r = fanotify_->watch(worker, dir.path, dir.fd.get());
            if (r) return;
            spdlog::debug("{}: {}; watching it with inotify", worker, r.error().message());
        }
        if (!inotify_) return;
        if (auto r = inotify_->watch(worker, dir.path, dir.fd.get()); !r)
            spdlog::warn("{}: {}", worker, r.error().message());
        else
            inotify_owners_.insert(worker);
    };
    watch(prepared->workdir);
    for (const auto& extra : prepared->extra_dirs) watch(extra);
}

void WorkDirMonitor::arm_tick() {
    tick_.expires_after(interval_);
    tick_.async_wait([this](const boost::system::error_code& ec) {
        if (ec || !running_) return;
        flush_suppressed();
        scan_now();
        arm_tick();
    });
}

// Either watcher's descriptor becoming readable drains both (drain_deletions
// reads each in bounded turns); then it waits again.
void WorkDirMonitor::arm_deletion_wait(asio::posix::stream_descriptor& wait) {
    wait.async_wait(asio::posix::stream_descriptor::wait_read,
                    [this, &wait](const boost::system::error_code& ec) {
                        if (ec || !running_) return;
                        drain_deletions();
                        arm_deletion_wait(wait);
                    });
}

void WorkDirMonitor::scan_now() {
    for (const auto& worker : ctx_.workdirs.prepared_workers()) {
        auto view = lookup_(worker);
        if (!view || !view->has_processes) continue;
        if (const PreparedWorkDir* prepared = ctx_.workdirs.find(worker))
            measure(worker, *prepared);
    }
}

void WorkDirMonitor::measure(const std::string& worker, const PreparedWorkDir& prepared) {
    Watched& w = watched_[worker];
    if (w.measuring != 0) return;
    auto fd = std::make_shared<UniqueFd>(::fcntl(prepared.workdir.fd.get(), F_DUPFD_CLOEXEC, 0));
    if (!*fd) return spdlog::warn("{}: dup work dir descriptor: {}", worker, std::strerror(errno));
    uint64_t measurement = w.measuring = ++last_measurement_;
    std::weak_ptr<char> alive = alive_;
    fs::path dir = prepared.workdir.path;
    ByteLimit quota = prepared.spec.quota;
    background_.run<Result<TreeUsage>>(
        [fd, limits = limits_] { return measure_usage(fd->get(), limits); },
        [this, alive, worker, measurement, dir, quota](Result<TreeUsage> usage) {
            if (alive.lock()) on_measured(worker, measurement, dir, quota, usage);
        });
}

void WorkDirMonitor::on_measured(const std::string& worker, uint64_t measurement,
                                 const fs::path& dir, ByteLimit quota,
                                 const Result<TreeUsage>& usage) {
    auto it = watched_.find(worker);
    // Released meanwhile, or released and prepared again: not this dir's.
    if (it == watched_.end() || it->second.measuring != measurement) return;
    Watched& w = it->second;
    w.measuring = 0;
    if (!usage)
        return spdlog::warn("{}: measuring {}: {}", worker, dir.string(), usage.error().message());
    note_capped(worker, w, dir, *usage);
    const uint64_t bytes = usage->bytes;
    w.usage = Usage{bytes, quota, ctx_.clock.now(), usage->exact()};
    if (!w.quota.update(bytes, quota)) return;
    ctx_.events.emit(Event{EventKind::workdir_over_quota,
                           worker,
                           "work dir " + dir.string() + " uses " + format_size(bytes) +
                               ", above its workdir_quota of " + format_size(quota),
                           {{"WORKDIR", dir.string()},
                            {"USAGE_BYTES", std::to_string(bytes)},
                            {"QUOTA_BYTES", std::to_string(quota.value_or(0))}}});
}

void WorkDirMonitor::note_capped(const std::string& worker, Watched& w, const fs::path& dir,
                                 const TreeUsage& usage) {
    bool was_capped = std::exchange(w.capped, !usage.exact());
    if (usage.exact() || was_capped) return;
    std::string capped_by = usage.capped_by(limits_);
    ctx_.events.emit(Event{EventKind::usage_capped,
                           worker,
                           "measuring work dir " + dir.string() + " stopped at " + capped_by +
                               ": it uses at least " + format_size(usage.bytes),
                           {{"WORKDIR", dir.string()},
                            {"USAGE_BYTES", std::to_string(usage.bytes)},
                            {"USAGE_ENTRIES", std::to_string(usage.entries)},
                            {"USAGE_CAPPED_BY", capped_by}}});
}

void WorkDirMonitor::drain_deletions() {
    identified_.clear();
    bool more = false;
    if (fanotify_) {
        auto reports = fanotify_->drain(kDeletionReadsPerTurn);
        if (!reports) spdlog::warn("{}", reports.error().message());
        for (const auto& r : reports.value_or({})) on_deletion(r.event, r.pid, r.pid > 0);
        more |= fanotify_->more_pending();
    }
    if (inotify_) {
        auto events = inotify_->drain(kDeletionReadsPerTurn);
        if (!events) spdlog::warn("{}", events.error().message());
        for (const auto& e : events.value_or({})) on_deletion(e, 0, false);
        more |= inotify_->more_pending();
    }
    // A process deleting faster than we read must not starve the loop: take
    // a turn, then come back for the rest (edge-triggered waits would not).
    if (more && !drain_queued_) {
        drain_queued_ = true;
        asio::post(ctx_.io, [this, alive = std::weak_ptr<char>(alive_)] {
            if (!alive.lock()) return;
            drain_queued_ = false;
            if (running_) drain_deletions();
        });
    }
}

const DeletingProcess& WorkDirMonitor::identify(pid_t pid) {
    auto it = identified_.find(pid);
    if (it == identified_.end())
        it = identified_.emplace(pid, look_up_process(ctx_.paths.procfs, pid)).first;
    return it->second;
}

void WorkDirMonitor::on_deletion(const DeletionEvent& event, pid_t pid, bool pid_known) {
    TimePoint now = ctx_.clock.now();
    if (event.kind == Kind::overflow) {
        if (now - last_overflow_log_ < kDeletionLogWindow) return;
        last_overflow_log_ = now;
        return spdlog::warn(
            "deletions in protected dirs: the kernel queue overflowed; some were not examined");
    }
    if (pid_known && pid == ::getpid()) return;  // the daemon's own
    auto view = lookup_(event.owner);
    DeletingProcess process{pid, false, {}, {}};
    if (pid_known) process = identify(pid);
    if (process.alive && view && cgroup_contains(view->cgroup, process.cgroup))
        return;  // the worker's own
    auto admitted = limit_.admit(event.owner, now);
    if (!admitted.log) return;
    Attribution by = attribute(process, pid_known, view && view->has_processes);
    std::vector<std::pair<std::string, std::string>> fields = {
        {"DIR", event.dir.string()},
        {"ACTION", action_name(event.kind)},
        {"DELETER", by.deleter},
    };
    if (!event.entry.empty()) {
        fields.emplace_back("ENTRY", event.entry);
        fields.emplace_back("PATH", (event.dir / event.entry).string());
    }
    if (pid_known) fields.emplace_back("DELETER_PID", std::to_string(pid));
    if (!process.comm.empty()) fields.emplace_back("DELETER_COMM", process.comm);
    if (!process.cgroup.empty()) fields.emplace_back("DELETER_CGROUP", process.cgroup);
    std::string message = what_happened(event) + " " + by.who;
    if (admitted.suppressed_before > 0) {
        fields.emplace_back("SUPPRESSED", std::to_string(admitted.suppressed_before));
        message += " (" + std::to_string(admitted.suppressed_before) + " earlier not logged)";
    }
    ctx_.events.emit(Event{EventKind::protected_entry_deleted, event.owner, std::move(message),
                           std::move(fields)});
}

void WorkDirMonitor::flush_suppressed() {
    for (const auto& [worker, w] : watched_) {
        uint64_t n = limit_.take_suppressed(worker);
        if (n == 0) continue;
        ctx_.events.emit(Event{
            EventKind::protected_entry_deleted,
            worker,
            std::to_string(n) + " further deletion(s) in protected dirs, by processes other than "
                                "the worker, were not logged individually",
            {{"SUPPRESSED", std::to_string(n)}, {"ACTION", "summary"}}});
    }
}

}  // namespace infervisor
