// WorkerCriu: criu(8) dumps and restores of one worker, off the event loop.
//
// Contract: dump() and restore() queue a job on a background thread of this
// object and call `done` on the loop thread afterwards (never when this
// object has been destroyed first). The job runs criu as a child process of
// the daemon (root, in the daemon's cgroup for a dump, born in the worker's
// fresh cgroup for a restore), polls its pidfd, and kills it with SIGKILL
// when it takes longer than the request's timeout or this object is
// destroyed: the event loop never waits for criu, and a job ends within its
// timeout (plus the kill). criu's log stays in the image dir (dump.log,
// restore.log); its Error lines become the job's error.
//
// A dump, in order: what criu cannot dump (criu_preflight.h), the criu binary
// (root-owned, in /usr/sbin, /usr/bin or /sbin), `criu check` (once per
// daemon while it succeeds), `criu dump`, then the CriuRecord written into
// the image dir. The image dir must be root-owned and not writable by the
// worker (WorkerCheckpoints makes the staging dir so in criu mode): criu
// writes there as root.
// A restore: `criu restore` with the new output stream as its stdin, then the
// pid from the pidfile, checked to be a child of the daemon (criu's
// --restore-sibling) in the worker's cgroup, and a pidfd for it. criu leaves
// the restored tree stopped; every file it holds is checked to be one the
// worker held at the dump (held_files.h) before SIGCONT lets it run. A tree
// that holds anything else is refused: its main process is killed and
// reaped, and the error starts with kCriuRestoreRefused (the caller kills
// the rest of the cgroup).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "base/unique_fd.h"
#include "checkpoint/criu_command.h"
#include "process/spawn_request.h"
#include "supervise/background_work.h"

namespace infervisor {

// The criu binary, if installed: the first root-owned, not group- or
// world-writable regular file of /usr/sbin/criu, /usr/bin/criu, /sbin/criu.
std::optional<std::string> find_criu();

// How the error of a restore that criu did but the daemon refused begins.
inline constexpr std::string_view kCriuRestoreRefused = "restore refused: ";

// Reads the CriuRecord of the image dir `name` below `dir_fd`, only when that
// dir and the record are root-owned and not writable by others (else the
// checkpoint is not a criu image infervisord made). O(1) system calls.
std::optional<CriuRecord> read_criu_record(int dir_fd, const std::string& name);

class WorkerCriu {
  public:
    struct Dump {
        pid_t pid = 0;            // the main process: the root of the dumped tree
        std::vector<pid_t> pids;  // every process of the worker, for the preflight
        std::filesystem::path procfs = "/proc";
        std::filesystem::path images;
        bool leave_running = false;
        Duration timeout{};
    };
    struct DumpOutcome {
        Result<void> result;
        bool preflight_refused = false;  // nothing was dumped: the preflight said no
    };
    struct Restore {
        std::filesystem::path procfs = "/proc";
        std::filesystem::path images;
        CriuRecord record;
        std::shared_ptr<UniqueFd> cgroup_dir;  // the worker's fresh cgroup
        std::string cgroup_in_proc;            // its path as /proc/PID/cgroup shows it
        std::shared_ptr<UniqueFd> output;      // the new stdout/stderr stream
        Duration timeout{};
    };

    explicit WorkerCriu(boost::asio::io_context& io) : io_(io) {}
    ~WorkerCriu();
    WorkerCriu(const WorkerCriu&) = delete;
    WorkerCriu& operator=(const WorkerCriu&) = delete;

    void dump(Dump dump, std::function<void(DumpOutcome)> done);
    void restore(Restore restore, std::function<void(Result<SpawnedProcess>)> done);

  private:
    boost::asio::io_context& io_;
    std::shared_ptr<std::atomic<bool>> cancelled_ = std::make_shared<std::atomic<bool>>(false);
    std::unique_ptr<BackgroundWork> work_;
};

}  // namespace infervisor
