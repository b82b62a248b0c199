#include "supervise/worker_criu.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>

#include "base/units.h"
#include "checkpoint/criu_preflight.h"
#include "checkpoint/held_files.h"
#include "notify/notify_socket.h"
#include "process/pidfd.h"
#include "process/spawn.h"

namespace infervisor {

namespace fs = std::filesystem;

namespace {

// `criu check` passed in this daemon (it is not repeated then).
std::atomic<bool> criu_checked{false};

bool root_owned_safe(const struct stat& st) {
    return st.st_uid == 0 && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

// The last `max` bytes of `path` (a file criu wrote as root into a root-owned
// dir), not following a symlink.
std::string tail_of(const fs::path& path, size_t max = 8192) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!fd) return {};
    struct stat st;
    if (::fstat(fd.get(), &st) < 0 || !S_ISREG(st.st_mode)) return {};
    off_t from = st.st_size > off_t(max) ? st.st_size - off_t(max) : 0;
    std::string out(size_t(st.st_size - from), '\0');
    ssize_t n = ::pread(fd.get(), out.data(), out.size(), from);
    out.resize(n > 0 ? size_t(n) : 0);
    return out;
}

// The first `max` bytes of a /proc file (whose size stat(2) says is 0).
std::string head_of_proc_file(const fs::path& path, size_t max = 4096) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) return {};
    std::string out(max, '\0');
    ssize_t n = ::read(fd.get(), out.data(), out.size());
    out.resize(n > 0 ? size_t(n) : 0);
    return out;
}

// Runs criu (argv) to its end, within `timeout`; SIGKILL at the timeout or
// when `cancelled`. `what` names it in errors ("criu dump"); `log` is its log.
Result<void> run_criu(const std::vector<std::string>& argv, int cgroup_fd, int stdin_fd,
                      Duration timeout, const std::atomic<bool>& cancelled, const std::string& what,
                      const fs::path& log) {
    SpawnRequest req;
    req.argv = argv;
    req.environment = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"};
    req.cgroup_fd = cgroup_fd;
    req.stdin_fd = stdin_fd;
    req.no_new_privileges = false;  // criu is root's tool and needs all of root
    req.keep_supervisor_capabilities = true;
    auto spawned = spawn_process(req);
    if (!spawned) return spawned.error();
    auto deadline = std::chrono::steady_clock::now() + timeout;
    bool killed = false;
    for (;;) {
        pollfd p{spawned->pidfd.get(), POLLIN, 0};
        int r = ::poll(&p, 1, 100);
        if (r > 0) break;
        if (cancelled || std::chrono::steady_clock::now() >= deadline) {
            (void)send_signal(spawned->pidfd.get(), SIGKILL);
            killed = true;
            break;
        }
    }
    auto status = wait_for_exit(spawned->pidfd.get());
    if (!status) return status.error();
    if (killed)
        return plain_error(
            what + (cancelled ? " cancelled" : " took longer than " + format_duration(timeout)) +
            "; killed");
    if (status->kind == ExitStatus::Kind::exited && status->code == 0) return {};
    std::string why = criu_log_errors(tail_of(log));
    return plain_error(what + " failed (" + status->describe() + ")" +
                       (why.empty() ? "" : ": " + why));
}

Result<void> write_record(const fs::path& images, const CriuRecord& record) {
    UniqueFd fd(::open((images / kCriuRecordName).c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) return errno_error("create " + (images / kCriuRecordName).string());
    std::string text = format_criu_record(record);
    if (::write(fd.get(), text.data(), text.size()) != ssize_t(text.size()))
        return errno_error("write " + (images / kCriuRecordName).string());
    return {};
}

WorkerCriu::DumpOutcome dump_now(const WorkerCriu::Dump& d, const std::atomic<bool>& cancelled) {
    std::vector<pid_t> pids = d.pids;
    if (std::find(pids.begin(), pids.end(), d.pid) == pids.end()) pids.insert(pids.begin(), d.pid);
    auto view = read_criu_view(d.procfs, pids);
    if (!view) return {view.error(), true};
    if (auto obstacle = criu_obstacle(*view)) return {plain_error(*obstacle), true};
    auto criu = find_criu();
    if (!criu)
        return {plain_error("criu is not installed (no root-owned /usr/sbin/criu; Debian: "
                            "apt-get install criu)"),
                true};
    if (!criu_checked) {
        fs::path log = d.images / kCriuCheckLog;
        auto checked =
            run_criu(criu_check_argv(*criu, log), -1, -1, d.timeout, cancelled, "criu check", log);
        if (!checked) return {checked.error(), true};
        criu_checked = true;
    }
    CriuRecord record;
    // Whom the image runs as, read before the dump (criu keeps it): what a
    // restore is checked against.
    record.identity = parse_process_identity(
        head_of_proc_file(d.procfs / std::to_string(d.pid) / "status", 16384));
    if (!record.identity)
        return {plain_error("cannot read whom pid " + std::to_string(d.pid) + " runs as (" +
                            (d.procfs / std::to_string(d.pid) / "status").string() + ")"),
                true};
    // Every file the worker holds, before the dump and after it (a file
    // opened or closed meanwhile is in one of them; a missing one can only
    // make the restore refused, never let a swapped path through).
    std::set<HeldFile> held;
    std::vector<GhostDir> ghost_dirs;
    if (auto r = add_held_files(d.procfs, pids, held); !r) return {r.error(), true};
    if (auto r = add_ghost_dirs(d.procfs, pids, ghost_dirs); !r) return {r.error(), true};
    record.stdio.resize(3);
    for (const auto& p : view->processes)
        if (p.pid == d.pid)
            for (const auto& [fd, target] : p.fds)
                if (fd >= 0 && fd <= 2) record.stdio[size_t(fd)] = target;
    CriuDump dump{*criu, d.pid, d.images, record.stdio, d.leave_running};
    if (auto r = run_criu(criu_dump_argv(dump), -1, -1, d.timeout, cancelled, "criu dump",
                          d.images / kCriuDumpLog);
        !r)
        return {r, false};
    if (auto r = add_held_files(d.procfs, pids, held); !r) return {r.error(), false};
    if (auto r = add_ghost_dirs(d.procfs, pids, ghost_dirs); !r) return {r.error(), false};
    record.held = std::move(held);
    record.ghost_dirs = std::move(ghost_dirs);
    return {write_record(d.images, record), false};
}

Result<pid_t> read_pidfile(const fs::path& path) {
    std::string text = tail_of(path, 64);
    try {
        size_t used = 0;
        long pid = std::stol(text, &used);
        if (pid > 0) return pid_t(pid);
    } catch (...) {
    }
    return plain_error("criu restore left no pid in " + path.string());
}

// Our own child, that is, criu's --restore-sibling did what it says.
bool is_child_of_daemon(const fs::path& procfs, pid_t pid) {
    std::string stat = head_of_proc_file(procfs / std::to_string(pid) / "stat");
    size_t close = stat.rfind(')');  // the comm field may hold anything
    if (close == std::string::npos) return false;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) != 2) return false;
    return ppid == ::getpid();
}

// The pids of the cgroup whose directory `dir` is open (O_PATH is enough),
// at most kMaxCriuProcesses; lines that are not a positive pid are skipped.
std::vector<pid_t> cgroup_procs_of(int dir) {
    std::vector<pid_t> out;
    UniqueFd fd(::openat(dir, "cgroup.procs", O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) return out;
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd.get(), buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
    size_t pos = 0;
    while (pos < text.size() && out.size() < kMaxCriuProcesses) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        long pid = std::strtol(text.c_str() + pos, nullptr, 10);
        if (pid > 0) out.push_back(pid_t(pid));
        pos = end + 1;
    }
    return out;
}

// criu restored the tree stopped (--leave-stopped): none of it has run yet.
// Each file it holds must be one the worker held at the dump, or a fresh
// object (held_files.h); then the tree goes on with SIGCONT. Otherwise the
// restore opened what a swapped path named: the error says which, and the
// caller kills the cgroup.
Result<void> release_if_verified(const WorkerCriu::Restore& r) {
    if (!r.record.held || !r.record.identity)
        return plain_error("the checkpoint does not record the files the worker held");
    std::vector<pid_t> pids = cgroup_procs_of(r.cgroup_dir->get());
    if (pids.empty()) return plain_error("the restored processes are not in the worker's cgroup");
    if (auto unheld = first_unheld_file(r.procfs, pids, *r.record.held, r.record.identity->uid))
        return plain_error(std::string(kCriuRestoreRefused) + *unheld);
    for (pid_t pid : pids) (void)::kill(pid, SIGCONT);
    return {};
}

Result<SpawnedProcess> restore_now(const WorkerCriu::Restore& r,
                                   const std::atomic<bool>& cancelled) {
    auto criu = find_criu();
    if (!criu) return plain_error("criu is not installed");
    // criu re-creates a deleted file the worker held in that file's dir, as
    // root, before the tree exists: the dir must be the one it was.
    if (auto moved = first_moved_ghost_dir(r.record.ghost_dirs))
        return plain_error(std::string(kCriuRestoreRefused) + *moved);
    fs::path pidfile = r.images / "restore.pid";
    ::unlink(pidfile.c_str());
    CriuRestore restore{*criu, r.images, pidfile, r.record.stdio};
    if (auto done = run_criu(criu_restore_argv(restore), r.cgroup_dir->get(),
                             r.output ? r.output->get() : -1, r.timeout, cancelled, "criu restore",
                             r.images / kCriuRestoreLog);
        !done)
        return done.error();
    auto pid = read_pidfile(pidfile);
    if (!pid) return pid.error();
    if (!is_child_of_daemon(r.procfs, *pid))
        return plain_error("restored pid " + std::to_string(*pid) +
                           " is not a child of the daemon");
    if (!process_in_cgroup(r.procfs, *pid, r.cgroup_in_proc))
        return plain_error("restored pid " + std::to_string(*pid) + " is not in " +
                           r.cgroup_in_proc);
    auto pidfd = open_pidfd(*pid);
    if (!pidfd) return pidfd.error();
    if (auto verified = release_if_verified(r); !verified) {
        // The restored main process is our child: reap it here; the caller
        // kills whatever else is in the cgroup.
        (void)send_signal(pidfd->get(), SIGKILL);
        (void)wait_for_exit(pidfd->get());
        return verified.error();
    }
    return SpawnedProcess{*pid, std::move(*pidfd), true};
}

}  // namespace

std::optional<std::string> find_criu() {
    for (const char* path : {"/usr/sbin/criu", "/usr/bin/criu", "/sbin/criu"}) {
        struct stat st;
        if (::stat(path, &st) == 0 && S_ISREG(st.st_mode) && root_owned_safe(st) &&
            (st.st_mode & S_IXUSR))
            return std::string(path);
    }
    return std::nullopt;
}

std::optional<CriuRecord> read_criu_record(int dir_fd, const std::string& name) {
    UniqueFd dir(::openat(dir_fd, name.c_str(), kOpenDirNoFollow));
    struct stat st;
    if (!dir || ::fstat(dir.get(), &st) < 0 || !root_owned_safe(st)) return std::nullopt;
    UniqueFd fd(
        ::openat(dir.get(), kCriuRecordName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (!fd || ::fstat(fd.get(), &st) < 0 || !S_ISREG(st.st_mode) || !root_owned_safe(st) ||
        st.st_size > off_t(kMaxCriuRecordBytes))
        return std::nullopt;
    std::string text(size_t(st.st_size), '\0');
    ssize_t n = ::read(fd.get(), text.data(), text.size());
    if (n < 0) return std::nullopt;
    text.resize(size_t(n));
    return parse_criu_record(text);
}

WorkerCriu::~WorkerCriu() { *cancelled_ = true; }

void WorkerCriu::dump(Dump dump, std::function<void(DumpOutcome)> done) {
    if (!work_) work_ = std::make_unique<BackgroundWork>(io_);
    *cancelled_ = false;
    work_->run<DumpOutcome>(
        [dump = std::move(dump), cancelled = cancelled_] { return dump_now(dump, *cancelled); },
        std::move(done));
}

void WorkerCriu::restore(Restore restore, std::function<void(Result<SpawnedProcess>)> done) {
    if (!work_) work_ = std::make_unique<BackgroundWork>(io_);
    *cancelled_ = false;
    work_->run<Result<SpawnedProcess>>(
        [restore = std::move(restore), cancelled = cancelled_] {
            return restore_now(restore, *cancelled);
        },
        std::move(done));
}

}  // namespace infervisor
