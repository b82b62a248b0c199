#include "process/spawn.h"

#include <signal.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "process/child_setup.h"
#include "process/clone_child.h"
#include "process/pidfd.h"
#include "process/prepared_child.h"

namespace infervisor {

namespace {

// nullopt: EOF, i.e. the child exec'ed (or died without a word).
Result<std::optional<ChildFailure>> read_child_failure(int fd) {
    ChildFailure failure{};
    ssize_t n;
    do {
        n = ::read(fd, &failure, sizeof failure);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return errno_error("read error pipe");
    if (n == 0) return std::optional<ChildFailure>();
    if (n != sizeof failure) return plain_error("short report on error pipe");
    return std::optional<ChildFailure>(failure);
}

Error in_context(const std::string& context, const Error& error) {
    return Error{error.code, context + ": " + error.what};
}

}  // namespace

Result<SpawnedProcess> spawn_process(const SpawnRequest& request) {
    if (request.argv.empty()) return plain_error("spawn: empty argv");
    const std::string context = "spawn " + request.argv[0];
    if (request.argv[0].empty() || request.argv[0][0] != '/')
        return plain_error(context + ": argv[0] must be an absolute path");

    PreparedChild child;
    if (auto prepared = prepare_child(request, child); !prepared)
        return in_context(context, prepared.error());

    sigset_t all, saved;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &saved);
    auto cloned = clone_child(request.cgroup_fd, request.allow_clone_into_cgroup);
    if (cloned.ok() && cloned->pid == 0)
        run_child(child.plan, request.cgroup_fd >= 0 && !cloned->in_cgroup);
    ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
    if (!cloned) return in_context(context, cloned.error());

    SpawnedProcess spawned{cloned->pid, UniqueFd(cloned->pidfd), cloned->in_cgroup};
    child.error_write.reset();
    auto failure = read_child_failure(child.error_read.get());
    if (failure.ok() && !failure->has_value()) return spawned;

    if (!failure) (void)send_signal(spawned.pidfd.get(), SIGKILL);
    (void)wait_for_exit(spawned.pidfd.get());
    if (!failure) return in_context(context, failure.error());
    const ChildFailure& report = **failure;
    return Error{report.error, context + ": " + describe_child_step(report.step, request)};
}

}  // namespace infervisor
