// WorkerSignalWatch: the event-driven wake-ups of one worker's run, so the
// policy runner reacts when the kernel reports something rather than at its
// next sampling tick:
//   - a PSI trigger on the cgroup's memory.pressure (negotiated as in
//     psi_trigger.h: 6.1 refuses windows under 500 ms, a writer without
//     CAP_SYS_RESOURCE gets only 2 s multiples), which wakes with POLLPRI;
//   - the cgroup's memory.events, which kernfs_notify() wakes with
//     POLLPRI|POLLERR whenever a counter (low, high, max, oom, oom_kill)
//     changes. cgroup_file_notify() sends at most one notification per 20 ms
//     per file, so even a worker pinned at memory.high wakes us at most 50
//     times a second.
// Either may be missing (no PSI, no memory controller, a kernel that refuses
// every window); what was opened is in description(), and the sampling tick
// covers the rest.
//
// Contract: open() when the run starts (its processes are in the cgroup),
// destroy when the run ends, before the cgroup is removed. `wake` runs on the
// event loop with the name of the file that fired; it must not destroy the
// watch (post the evaluation instead). Handlers that were already queued when
// the watch is destroyed do nothing.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "cgroup/cgroup_stats.h"
#include "cgroup/psi_trigger.h"

namespace infervisor {

// The files watched in a worker's cgroup. A seam for tests: our development
// hosts' cgroup2 has no memory controller, so there the watch is shown to
// work on cgroup.events, which kernfs notifies the same way.
struct SignalWatchFiles {
    std::string pressure = kMemoryPressureFile;
    std::string events = kMemoryEventsFile;
};

class WorkerSignalWatch {
  public:
    using Wake = std::function<void(std::string_view file)>;

    WorkerSignalWatch(boost::asio::io_context& io, const std::filesystem::path& cgroup,
                      const PsiTriggerSpec& trigger, Wake wake, SignalWatchFiles files = {});
    ~WorkerSignalWatch();
    WorkerSignalWatch(const WorkerSignalWatch&) = delete;
    WorkerSignalWatch& operator=(const WorkerSignalWatch&) = delete;

    bool has_pressure_trigger() const { return pressure_ != nullptr; }
    bool watches_events() const { return events_ != nullptr; }
    // What was chosen, for one log line, e.g. "memory.pressure trigger
    // 'some 300000 2000000' (kernel refused some 150000 1000000 (EINVAL));
    // memory.events watched".
    const std::string& description() const { return description_; }

  private:
    using Stream = boost::asio::posix::stream_descriptor;

    void open_pressure(const std::filesystem::path& file, const PsiTriggerSpec& trigger);
    void open_events(const std::filesystem::path& file);
    std::unique_ptr<Stream> watch_fd(int fd, const std::string& what);
    void arm(Stream& stream, const std::string& file, bool reread);

    boost::asio::io_context& io_;
    Wake wake_;
    SignalWatchFiles files_;
    std::unique_ptr<Stream> pressure_;
    std::unique_ptr<Stream> events_;
    std::string description_;
    // Expires with the watch: queued handlers check it before touching it.
    std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace infervisor
