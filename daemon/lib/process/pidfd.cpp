#include "process/pidfd.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <system_error>
#include <thread>
#include <utility>

#include "base/signal_names.h"
#include "base/unique_fd.h"

namespace infervisor {

// glibc 2.36's <sys/pidfd.h> lacks extern "C" (fixed in 2.37), so C++ cannot
// link against its wrappers: the pidfd calls here are made directly.
namespace {

Result<std::optional<ExitStatus>> wait_pidfd(int pidfd, int options) {
    siginfo_t info = {};
    int rc;
    do {
        rc = ::waitid(P_PIDFD, static_cast<id_t>(pidfd), &info, WEXITED | options);
    } while (rc < 0 && errno == EINTR);
    if (rc < 0) return errno_error("waitid on pidfd " + std::to_string(pidfd));
    if (info.si_pid == 0) return std::optional<ExitStatus>();
    return std::optional<ExitStatus>(exit_status_from(info));
}

}  // namespace

Result<UniqueFd> open_pidfd(pid_t pid) {
    UniqueFd fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0U)));
    if (!fd) return errno_error("pidfd_open " + std::to_string(pid));
    return fd;
}

Result<std::optional<ExitStatus>> reap(int pidfd) { return wait_pidfd(pidfd, WNOHANG); }

Result<ExitStatus> wait_for_exit(int pidfd) {
    auto status = wait_pidfd(pidfd, 0);
    if (!status) return status.error();
    return **status;
}

Result<void> send_signal(int pidfd, int sig) {
    if (::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0U) < 0)
        return errno_error("send " + signal_name(sig) + " via pidfd");
    return {};
}

Result<std::size_t> signal_listed(const std::function<Result<std::vector<pid_t>>()>& list,
                                  int sig) {
    auto first = list();
    if (!first) return first.error();
    std::vector<std::pair<pid_t, UniqueFd>> opened;
    for (pid_t pid : *first) {
        if (pid <= 0) continue;
        auto fd = open_pidfd(pid);
        if (fd) opened.emplace_back(pid, std::move(*fd));  // else: gone already
    }
    auto second = list();
    if (!second) return second.error();
    std::set<pid_t> still(second->begin(), second->end());
    std::size_t sent = 0;
    for (const auto& [pid, fd] : opened)
        if (still.count(pid) && send_signal(fd.get(), sig)) ++sent;
    return sent;
}

Result<void> release_memory(int pidfd) {
    if (::syscall(SYS_process_mrelease, pidfd, 0U) < 0) return errno_error("process_mrelease");
    return {};
}

void release_memory_in_background(int pidfd) {
    UniqueFd own(::fcntl(pidfd, F_DUPFD_CLOEXEC, 0));
    if (!own) return;
    try {
        std::thread([fd = std::move(own)] { (void)release_memory(fd.get()); }).detach();
    } catch (const std::system_error&) {
        // No thread to be had (EAGAIN): the memory goes when the process exits.
    }
}

}  // namespace infervisor
