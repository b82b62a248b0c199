#include "services/shared_tmp_guard.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

#include "cgroup/cgroup_dir.h"
#include "supervise/private_tmp.h"

namespace infervisor {

namespace {

// A path as the message shows it: control bytes (a newline in a name) as
// \xNN, so that the message stays one line. PATH= carries the bytes as they are.
std::string shown(const std::string& path) {
    std::string out;
    for (unsigned char c : path) {
        if (c < 0x20 || c == 0x7f) {
            char hex[5];
            std::snprintf(hex, sizeof hex, "\\x%02x", c);
            out += hex;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

}  // namespace

SharedTmpGuard::SharedTmpGuard(WorkerContext& ctx, Supervisor& supervisor, ScanLimits limits)
    : ctx_(ctx),
      supervisor_(supervisor),
      limits_(limits),
      mount_ns_(own_mount_namespace(ctx.paths.procfs)),
      protection_(ctx.paths.tmpfiles_dir),
      tick_(ctx.io),
      background_(ctx.io) {
    subscription_ = ctx_.events.subscribe([this](const Event& e) { on_event(e); });
    if (mount_ns_.empty())
        spdlog::warn(
            "cannot read {}/self/ns/mnt: files workers hold open under /tmp are not "
            "protected",
            ctx.paths.procfs.string());
}

SharedTmpGuard::~SharedTmpGuard() {
    ctx_.events.unsubscribe(subscription_);
    alive_.reset();
}

void SharedTmpGuard::configure(const Config& config) { interval_ = config.daemon.sample_interval; }

void SharedTmpGuard::start() {
    if (running_) return;
    running_ = true;
    scan_now();
    arm_tick();
}

void SharedTmpGuard::stop() {
    running_ = false;
    tick_.cancel();
}

void SharedTmpGuard::arm_tick() {
    tick_.expires_after(interval_);
    std::weak_ptr<char> alive = alive_;
    tick_.async_wait([this, alive](const boost::system::error_code& ec) {
        if (ec || !alive.lock() || !running_) return;
        scan_now();
        arm_tick();
    });
}

void SharedTmpGuard::on_event(const Event& e) {
    if (e.kind == EventKind::exited) release(e.worker);
}

std::vector<SharedTmpGuard::Target> SharedTmpGuard::targets() {
    std::vector<Target> out;
    for (const Worker* w : supervisor_.workers()) {
        if (!w->started_at() || w->exiting() || !shares_tmp(*w)) continue;
        out.push_back({w->name(), w->cgroup().path(), w->started_at()});
    }
    return out;
}

bool SharedTmpGuard::shares_tmp(const Worker& worker) {
    auto [it, added] = sharing_.try_emplace(worker.name());
    Sharing& sharing = it->second;
    if (added || sharing.run != worker.started_at())
        sharing = {worker.started_at(), shares_host_tmp(worker.spec(), ctx_.paths)};
    return sharing.shares;
}

void SharedTmpGuard::scan_now(std::function<void()> done) {
    drop_gone_workers();
    if (scanning_ || mount_ns_.empty()) {
        if (mount_ns_.empty()) write();  // at least no stale file of an earlier daemon
        if (done) done();
        return;
    }
    auto list = targets();
    if (list.empty()) {
        // Nothing shares the host's /tmp (the common case: private_tmp): no
        // thread is started for an empty round (issue 28: one per tick was
        // a tenth of the idle daemon's CPU under emulation). The write
        // still replaces an earlier daemon's file at the first round.
        ++scans_;
        write();
        if (done) done();
        return;
    }
    scanning_ = true;
    // Starting with another worker each round: one that used up the round's
    // budget does not starve the ones after it.
    std::rotate(list.begin(), list.begin() + static_cast<long>(scans_ % list.size()), list.end());
    auto job = [targets = std::move(list), procfs = ctx_.paths.procfs, ns = mount_ns_,
                limits = limits_] {
        std::vector<ScanResult> results;
        size_t fds_left = limits.max_fds * kRoundBudgetWorkers;
        size_t maps_left = limits.max_maps_bytes * kRoundBudgetWorkers;
        for (const auto& target : targets) {
            ScanLimits mine = limits;
            mine.max_fds = std::min(mine.max_fds, fds_left);
            mine.max_maps_bytes = std::min(mine.max_maps_bytes, maps_left);
            auto pids = CgroupDir(target.cgroup).procs_up_to(limits.max_pids + 1);
            results.push_back({target, scan_open_tmp_files(procfs, pids, ns, mine)});
            fds_left -= results.back().scan.fds;
            maps_left -= results.back().scan.maps_bytes;
        }
        return results;
    };
    std::weak_ptr<char> alive = alive_;
    background_.run<std::vector<ScanResult>>(
        job, [this, alive, done = std::move(done)](std::vector<ScanResult> results) {
            if (!alive.lock()) return;
            scanning_ = false;
            ++scans_;
            for (const auto& result : results) apply(result);
            write();
            if (done) done();
        });
}

void SharedTmpGuard::apply(const ScanResult& result) {
    const std::string& name = result.target.worker;
    const Worker* w = supervisor_.find(name);
    // A run that ended (and was released) while the scan ran is not brought back.
    if (!w || w->exiting() || w->started_at() != result.target.run) return;
    std::vector<std::string> found;
    for (const auto& [path, file] : result.scan.files) found.push_back(path);
    auto added = protection_.add(name, found);
    for (const auto& path : added.paths) {
        const OpenTmpFile& file = result.scan.files.at(path);
        std::string how = file.mapped ? "mapped" : "open";
        ctx_.events.emit(
            Event{EventKind::tmp_file_protected,
                  name,
                  shown(path) + (file.mapped ? ", mapped" : ", held open") + " by pid " +
                      std::to_string(file.pid) +
                      ", is kept from systemd-tmpfiles aging until the worker stops (it shares the "
                      "host's /tmp)",
                  {{"PATH", path}, {"PID", std::to_string(file.pid)}, {"HOW", how}}});
    }
    if ((added.refused > 0 || result.scan.truncated) && warned_.insert(name).second)
        spdlog::warn(
            "{}: holds more under /tmp than is protected (caps: {} pids, {} fds, {} "
            "bytes of maps, {} paths per worker, {} in all; {} more refused): the rest "
            "may be aged away by systemd-tmpfiles",
            name, limits_.max_pids, limits_.max_fds, limits_.max_maps_bytes,
            TmpFileProtection::kPerWorker, TmpFileProtection::kTotal, added.refused);
}

void SharedTmpGuard::release(const std::string& worker) {
    warned_.erase(worker);
    if (protection_.release(worker)) write();
}

void SharedTmpGuard::drop_gone_workers() {
    std::vector<std::string> gone;
    for (const auto& name : warned_)
        if (!supervisor_.find(name)) gone.push_back(name);
    for (const auto& name : gone) warned_.erase(name);
    std::erase_if(sharing_, [&](const auto& entry) { return !supervisor_.find(entry.first); });
    bool changed = false;
    for (const auto& path_owner : protection_.workers()) {
        const Worker* w = supervisor_.find(path_owner);
        if (!w || !w->started_at()) changed |= protection_.release(path_owner);
    }
    if (changed) write();
}

void SharedTmpGuard::write() {
    auto r = protection_.write();
    if (r) {
        last_write_error_.clear();
        return;
    }
    if (r.error().message() != last_write_error_)
        spdlog::warn("open-file tmpfiles exclusions: {}", r.error().message());
    last_write_error_ = r.error().message();
}

}  // namespace infervisor
