#include "process/fd_limit.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "process/spawn.h"
#include "spawn_support.h"

namespace infervisor {
namespace {

// Runs `body` in a forked child (raise_fd_limit() changes the process for
// good) and returns its exit code; codes name the failed step.
template <typename Body>
int in_child(Body body) {
    pid_t pid = ::fork();
    if (pid == 0) ::_exit(body());
    int status = 0;
    if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

// The worker's view of its limits: "SOFT HARD".
std::string child_limits() {
    SpawnRequest request;
    request.argv = {"/bin/sh", "-c", "echo $(ulimit -Sn) $(ulimit -Hn)"};
    request.environment = {"PATH=/usr/bin:/bin"};
    auto finished = testing::run_captured(request);
    return finished ? finished->output : "spawn failed";
}

TEST(FdLimit, TheDaemonRaisesItsSoftLimitAndChildrenGetTheOriginalBack) {
    int code = in_child([] {
        ::unsetenv(kInheritedFdLimitVariable);
        rlimit start{512, 4096};
        if (::setrlimit(RLIMIT_NOFILE, &start) != 0) return 10;
        raise_fd_limit();
        rlimit now{};
        ::getrlimit(RLIMIT_NOFILE, &now);
        if (now.rlim_cur != 4096 || now.rlim_max != 4096) return 11;
        auto children = fd_limit_for_children();
        if (!children || children->rlim_cur != 512 || children->rlim_max != 4096) return 12;
        const char* carried = std::getenv(kInheritedFdLimitVariable);
        if (!carried || std::string(carried) != "512") return 13;
        if (child_limits() != "512 4096\n") return 14;
        return 0;
    });
    EXPECT_EQ(code, 0) << "10: setrlimit, 11: not raised, 12: children's limit, 13: not carried "
                          "for a re-execution, 14: a spawned child's limits";
}

TEST(FdLimit, AReexecutedDaemonKeepsTheLimitItsFirstStartFound) {
    int code = in_child([] {
        // The re-executed daemon starts with the raised limit it inherited.
        ::setenv(kInheritedFdLimitVariable, "256", 1);
        rlimit start{4096, 4096};
        if (::setrlimit(RLIMIT_NOFILE, &start) != 0) return 10;
        raise_fd_limit();
        auto children = fd_limit_for_children();
        if (!children || children->rlim_cur != 256) return 11;
        if (child_limits() != "256 4096\n") return 12;
        return 0;
    });
    EXPECT_EQ(code, 0) << "10: setrlimit, 11: children's limit, 12: a spawned child's limits";
}

TEST(FdLimit, NothingChangesWhenTheSoftLimitIsAlreadyTheHardOne) {
    int code = in_child([] {
        ::unsetenv(kInheritedFdLimitVariable);
        rlimit start{2048, 2048};
        if (::setrlimit(RLIMIT_NOFILE, &start) != 0) return 10;
        raise_fd_limit();
        if (fd_limit_for_children()) return 11;
        if (std::getenv(kInheritedFdLimitVariable)) return 12;
        if (child_limits() != "2048 2048\n") return 13;
        return 0;
    });
    EXPECT_EQ(code, 0) << "10: setrlimit, 11: a limit for children, 12: carried, 13: child's";
}

}  // namespace
}  // namespace infervisor
