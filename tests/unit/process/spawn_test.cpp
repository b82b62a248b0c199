#include "process/spawn.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "process/pidfd.h"
#include "spawn_support.h"

namespace infervisor {
namespace {

int count_open_fds() {
    int n = 0;
    std::error_code ec;
    for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
         it.increment(ec))
        ++n;
    return n;
}

using testing::Finished;
using testing::run_captured;

SpawnRequest command(std::vector<std::string> argv) {
    SpawnRequest request;
    request.argv = std::move(argv);
    request.environment = {"PATH=/usr/bin:/bin"};
    return request;
}

std::string status_line(const std::string& status, const std::string& key) {
    std::istringstream in(status);
    std::string line;
    while (std::getline(in, line)) {
        // Trailing blanks vary between kernels ("Groups:\t \n" on 6.18).
        if (line.rfind(key + ":", 0) == 0) return line.substr(0, line.find_last_not_of(" \t") + 1);
    }
    return "";
}

TEST(Spawn, TrueExitsWithZero) {
    auto spawned = spawn_process(command({"/bin/true"}));
    ASSERT_TRUE(spawned.ok()) << spawned.error().message();
    EXPECT_GT(spawned->pid, 0);
    EXPECT_FALSE(spawned->born_in_cgroup);
    auto status = wait_for_exit(spawned->pidfd.get());
    ASSERT_TRUE(status.ok()) << status.error().message();
    EXPECT_TRUE(status->success());
    EXPECT_EQ(status->describe(), "exited with code 0");
}

TEST(Spawn, ReapSeesExitCodeOnceThePidfdIsReadable) {
    auto spawned = spawn_process(command({"/bin/sh", "-c", "exit 3"}));
    ASSERT_TRUE(spawned.ok()) << spawned.error().message();
    pollfd p{spawned->pidfd.get(), POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, -1), 1);
    auto status = reap(spawned->pidfd.get());
    ASSERT_TRUE(status.ok()) << status.error().message();
    ASSERT_TRUE(status->has_value());
    EXPECT_EQ(**status, ExitStatus::exited_with(3));
    EXPECT_EQ((*status)->describe(), "exited with code 3");

    auto again = reap(spawned->pidfd.get());
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.error().code, ECHILD);
}

TEST(Spawn, ReapReturnsNothingWhileRunningAndSeesTheKillingSignal) {
    auto spawned = spawn_process(command({"/bin/sleep", "1000"}));
    ASSERT_TRUE(spawned.ok()) << spawned.error().message();
    auto running = reap(spawned->pidfd.get());
    ASSERT_TRUE(running.ok()) << running.error().message();
    EXPECT_FALSE(running->has_value());

    auto not_dying = release_memory(spawned->pidfd.get());
    ASSERT_FALSE(not_dying.ok());
    EXPECT_EQ(not_dying.error().code, EINVAL) << not_dying.error().message();

    ASSERT_TRUE(send_signal(spawned->pidfd.get(), SIGKILL).ok());
    auto released = release_memory(spawned->pidfd.get());
    EXPECT_TRUE(released.ok() || released.error().code == ESRCH) << released.error().message();
    auto status = wait_for_exit(spawned->pidfd.get());
    ASSERT_TRUE(status.ok()) << status.error().message();
    EXPECT_EQ(*status, ExitStatus::killed_by(SIGKILL));
    EXPECT_EQ(status->describe(), "killed by SIGKILL");

    auto late = send_signal(spawned->pidfd.get(), SIGTERM);
    ASSERT_FALSE(late.ok());
    EXPECT_EQ(late.error().code, ESRCH);
}

TEST(Spawn, MemoryIsReleasedInTheBackgroundWithItsOwnDescriptor) {
    auto spawned = spawn_process(command({"/bin/sleep", "1000"}));
    ASSERT_TRUE(spawned.ok()) << spawned.error().message();
    ASSERT_TRUE(send_signal(spawned->pidfd.get(), SIGKILL).ok());
    int fds_before = count_open_fds();
    release_memory_in_background(spawned->pidfd.get());
    // The caller's descriptor is its own: still usable to wait and reap.
    auto status = wait_for_exit(spawned->pidfd.get());
    ASSERT_TRUE(status.ok()) << status.error().message();
    EXPECT_EQ(*status, ExitStatus::killed_by(SIGKILL));
    // The duplicate goes with the thread, which ends once the call returns
    // (a thread that never did would hang here, under meson's timeout).
    while (count_open_fds() > fds_before) ::usleep(1000);
    EXPECT_EQ(count_open_fds(), fds_before);
}

TEST(Spawn, MissingBinaryNamesTheBinaryAndExecve) {
    auto spawned = spawn_process(command({"/no/such/binary", "arg"}));
    ASSERT_FALSE(spawned.ok());
    EXPECT_EQ(spawned.error().code, ENOENT);
    EXPECT_EQ(spawned.error().message(),
              "spawn /no/such/binary: execve: No such file or directory");
}

TEST(Spawn, RefusesRelativeProgramsAndEmptyArgv) {
    auto relative = spawn_process(command({"true"}));
    ASSERT_FALSE(relative.ok());
    EXPECT_EQ(relative.error().message(), "spawn true: argv[0] must be an absolute path");
    EXPECT_FALSE(spawn_process(command({})).ok());
}

TEST(Spawn, MissingWorkingDirectoryIsAClearError) {
    SpawnRequest request = command({"/bin/true"});
    request.working_directory = "/no/such/dir";
    auto spawned = spawn_process(request);
    ASSERT_FALSE(spawned.ok());
    EXPECT_EQ(spawned.error().code, ENOENT);
    EXPECT_EQ(spawned.error().message(),
              "spawn /bin/true: chdir(/no/such/dir): No such file or directory");
}

TEST(Spawn, EntersTheWorkingDirectory) {
    SpawnRequest request = command({"/bin/pwd"});
    request.working_directory = "/usr/share";
    auto finished = run_captured(request);
    ASSERT_TRUE(finished);
    EXPECT_EQ(finished->output, "/usr/share\n");
    request.working_directory.clear();
    finished = run_captured(request);
    ASSERT_TRUE(finished);
    EXPECT_EQ(finished->output, "/\n");
}

TEST(Spawn, EnvironmentIsExactlyWhatWasGiven) {
    SpawnRequest request = command({"/usr/bin/env"});
    request.environment = {"A=1", "B=two words", "EMPTY="};
    auto finished = run_captured(request);
    ASSERT_TRUE(finished);
    EXPECT_EQ(finished->output, "A=1\nB=two words\nEMPTY=\n");
    EXPECT_TRUE(finished->status.success());

    request.environment.clear();
    finished = run_captured(request);
    ASSERT_TRUE(finished);
    EXPECT_EQ(finished->output, "");
}

TEST(Spawn, StrayFdsAreClosed) {
    UniqueFd inheritable(::open("/dev/null", O_RDONLY));  // deliberately not O_CLOEXEC
    ASSERT_TRUE(inheritable.valid());
    UniqueFd another(::dup(inheritable.get()));
    auto finished = run_captured(command({"/bin/sh", "-c", "ls /proc/self/fd"}));
    ASSERT_TRUE(finished);
    std::set<std::string> fds;
    std::istringstream lines(finished->output);
    for (std::string fd; std::getline(lines, fd);) fds.insert(fd);
    // 0-2, plus the directory ls itself opened to list /proc/self/fd.
    EXPECT_EQ(fds, (std::set<std::string>{"0", "1", "2", "3"})) << finished->output;
}

TEST(Spawn, StdinComesFromTheGivenFdOrDevNull) {
    testing::Pipe input = testing::make_pipe();
    ASSERT_EQ(::write(input.write.get(), "hello\n", 6), 6);
    input.write.reset();
    SpawnRequest request = command({"/bin/cat"});
    request.stdin_fd = input.read.get();
    auto finished = run_captured(request);
    ASSERT_TRUE(finished);
    EXPECT_EQ(finished->output, "hello\n");

    finished = run_captured(command({"/bin/cat"}));
    ASSERT_TRUE(finished);
    EXPECT_EQ(finished->output, "");
    EXPECT_TRUE(finished->status.success());
}

TEST(Spawn, StderrGoesWhereItIsSent) {
    auto finished = run_captured(command({"/bin/sh", "-c", "echo out; echo err >&2"}));
    ASSERT_TRUE(finished);
    EXPECT_EQ(finished->output, "out\nerr\n");

    SpawnRequest request = command({"/bin/sh", "-c", "echo out; echo err >&2"});
    testing::Pipe out = testing::make_pipe();
    request.stdout_fd = out.write.get();  // stderr stays -1: /dev/null
    auto spawned = spawn_process(request);
    ASSERT_TRUE(spawned.ok()) << spawned.error().message();
    out.write.reset();
    testing::LineReader reader(std::move(out.read));
    EXPECT_EQ(reader.next_line(), "out");
    EXPECT_EQ(reader.next_line(), std::nullopt);
    ASSERT_TRUE(wait_for_exit(spawned->pidfd.get()).ok());
}

TEST(Spawn, ABadStdioFdIsAClearError) {
    SpawnRequest request = command({"/bin/true"});
    request.stdout_fd = 987;
    auto spawned = spawn_process(request);
    ASSERT_FALSE(spawned.ok());
    EXPECT_EQ(spawned.error().code, EBADF);
    EXPECT_EQ(spawned.error().message(),
              "spawn /bin/true: duplicate stdout fd 987: Bad file descriptor");
}

TEST(Spawn, ChildLeadsItsOwnSession) {
    auto spawned = spawn_process(command({"/bin/sleep", "1000"}));
    ASSERT_TRUE(spawned.ok()) << spawned.error().message();
    std::ifstream in("/proc/" + std::to_string(spawned->pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::string state;
    long ppid = 0, pgrp = 0, session = 0;
    fields >> state >> ppid >> pgrp >> session;
    EXPECT_EQ(ppid, ::getpid());
    EXPECT_EQ(pgrp, spawned->pid);
    EXPECT_EQ(session, spawned->pid);
    ASSERT_TRUE(send_signal(spawned->pidfd.get(), SIGKILL).ok());
    ASSERT_TRUE(wait_for_exit(spawned->pidfd.get()).ok());
}

TEST(Spawn, SignalMaskAndDispositionsAreReset) {
    sigset_t blocked, saved;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGUSR1);
    sigaddset(&blocked, SIGTERM);
    sigaddset(&blocked, SIGCHLD);
    ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &blocked, &saved), 0);
    struct sigaction ignore = {}, handle = {}, old_pipe = {}, old_usr2 = {};
    ignore.sa_handler = SIG_IGN;
    handle.sa_handler = [](int) {};
    ::sigaction(SIGPIPE, &ignore, &old_pipe);
    ::sigaction(SIGUSR2, &handle, &old_usr2);

    auto finished = run_captured(command({"/bin/cat", "/proc/self/status"}));

    ::sigaction(SIGPIPE, &old_pipe, nullptr);
    ::sigaction(SIGUSR2, &old_usr2, nullptr);
    ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
    ASSERT_TRUE(finished);
    EXPECT_EQ(status_line(finished->output, "SigBlk"), "SigBlk:\t0000000000000000");
    EXPECT_EQ(status_line(finished->output, "SigIgn"), "SigIgn:\t0000000000000000");
    EXPECT_EQ(status_line(finished->output, "SigCgt"), "SigCgt:\t0000000000000000");
}

TEST(Spawn, NoNewPrivilegesIsSetUnlessDisabled) {
    auto finished = run_captured(command({"/bin/cat", "/proc/self/status"}));
    ASSERT_TRUE(finished);
    EXPECT_EQ(status_line(finished->output, "NoNewPrivs"), "NoNewPrivs:\t1");

    std::ifstream own("/proc/self/status");
    std::string own_status((std::istreambuf_iterator<char>(own)), std::istreambuf_iterator<char>());
    if (status_line(own_status, "NoNewPrivs") != "NoNewPrivs:\t0")
        GTEST_SKIP() << "this test process already has no_new_privs set";
    SpawnRequest request = command({"/bin/cat", "/proc/self/status"});
    request.no_new_privileges = false;
    finished = run_captured(request);
    ASSERT_TRUE(finished);
    EXPECT_EQ(status_line(finished->output, "NoNewPrivs"), "NoNewPrivs:\t0");
}

// The daemon turns transparent huge pages off for itself; its children get
// the host's setting back.
TEST(Spawn, AChildDoesNotInheritTheDaemonsHugePageOptOut) {
    ASSERT_EQ(::prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0), 0);
    auto finished = run_captured(command({"/bin/cat", "/proc/self/status"}));
    ::prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
    ASSERT_TRUE(finished);
    EXPECT_EQ(status_line(finished->output, "THP_enabled"), "THP_enabled:\t1");
}

TEST(Spawn, WorkersNeverGetTheSupervisorsOwnCapabilities) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to hold capabilities to drop";
    if (::prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) != 1)
        GTEST_SKIP() << "this test process has no CAP_SYS_ADMIN to hand on";
    auto finished = run_captured(command({"/bin/cat", "/proc/self/status"}));
    ASSERT_TRUE(finished);
    std::string line = status_line(finished->output, "CapBnd");
    ASSERT_EQ(line.rfind("CapBnd:\t", 0), 0u) << finished->output;
    uint64_t bounding = std::stoull(line.substr(8), nullptr, 16);
    EXPECT_EQ(bounding & (1ull << CAP_SYS_ADMIN), 0u) << line;
    EXPECT_EQ(bounding & (1ull << CAP_SETPCAP), 0u) << line;
    EXPECT_EQ(bounding & (1ull << CAP_SYS_PTRACE), 0u) << line;
    EXPECT_EQ(bounding & (1ull << CAP_NET_ADMIN), 0u) << line;
    EXPECT_EQ(bounding & (1ull << CAP_SYS_CHROOT), 0u) << line;
    EXPECT_EQ(bounding & (1ull << CAP_SYS_TIME), 0u) << line;
    EXPECT_NE(bounding & (1ull << CAP_KILL), 0u) << line;  // the rest is left alone
}

TEST(Spawn, TheDaemonsOwnToolsKeepThem) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to hold capabilities to drop";
    if (::prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) != 1)
        GTEST_SKIP() << "this test process has no CAP_SYS_ADMIN to hand on";
    SpawnRequest request = command({"/bin/cat", "/proc/self/status"});
    request.keep_supervisor_capabilities = true;  // what criu is spawned with
    auto finished = run_captured(request);
    ASSERT_TRUE(finished);
    std::string line = status_line(finished->output, "CapBnd");
    uint64_t bounding = std::stoull(line.substr(8), nullptr, 16);
    EXPECT_NE(bounding & (1ull << CAP_SYS_ADMIN), 0u) << line;
    EXPECT_NE(bounding & (1ull << CAP_SYS_PTRACE), 0u) << line;
}

TEST(Spawn, DropsToAnUnprivilegedUserWithExactlyTheGivenGroups) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to change credentials";
    SpawnRequest request = command({"/bin/cat", "/proc/self/status"});
    request.uid = 65534;
    request.gid = 65534;
    request.supplementary_groups = {65534, 100};
    auto finished = run_captured(request);
    ASSERT_TRUE(finished);
    EXPECT_TRUE(finished->status.success()) << finished->output;
    EXPECT_EQ(status_line(finished->output, "Uid"), "Uid:\t65534\t65534\t65534\t65534");
    EXPECT_EQ(status_line(finished->output, "Gid"), "Gid:\t65534\t65534\t65534\t65534");
    EXPECT_EQ(status_line(finished->output, "Groups"), "Groups:\t100 65534");
    EXPECT_EQ(status_line(finished->output, "CapEff"), "CapEff:\t0000000000000000");
    EXPECT_EQ(status_line(finished->output, "NoNewPrivs"), "NoNewPrivs:\t1");

    request.supplementary_groups.clear();
    finished = run_captured(request);
    ASSERT_TRUE(finished);
    EXPECT_EQ(status_line(finished->output, "Groups"), "Groups:");
}

TEST(Spawn, UnprivilegedWorkingDirectoryCheckHappensAsTheWorker) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to change credentials";
    SpawnRequest request = command({"/bin/true"});
    request.uid = 65534;
    request.gid = 65534;
    request.working_directory = "/root";  // mode 0700 root: root could enter, nobody cannot
    std::error_code ec;
    auto perms = std::filesystem::status("/root", ec).permissions();
    if (ec || (perms & std::filesystem::perms::others_exec) != std::filesystem::perms::none)
        GTEST_SKIP() << "/root is enterable by others here";
    auto spawned = spawn_process(request);
    ASSERT_FALSE(spawned.ok());
    EXPECT_EQ(spawned.error().message(), "spawn /bin/true: chdir(/root): Permission denied");
}

// Runs spawn_process in a forked helper that has lost CAP_SETUID (but kept
// CAP_SETGID), so setgroups and setresgid succeed and setresuid fails.
TEST(Spawn, FailedSetresuidIsReportedWithTheUid) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to hold and drop capabilities";
    testing::Pipe report = testing::make_pipe();
    pid_t helper = ::fork();
    ASSERT_GE(helper, 0);
    if (helper == 0) {
        __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
        __user_cap_data_struct data[2] = {};
        ::syscall(SYS_capget, &header, data);
        data[0].effective &= ~(1U << CAP_SETUID);
        data[0].permitted &= ~(1U << CAP_SETUID);
        data[0].inheritable &= ~(1U << CAP_SETUID);
        if (::syscall(SYS_capset, &header, data) < 0) ::_exit(3);
        SpawnRequest request = command({"/bin/true"});
        request.uid = 1000;
        request.gid = 1000;
        auto spawned = spawn_process(request);
        std::string message = spawned.ok() ? "spawned" : spawned.error().message();
        ssize_t ignored = ::write(report.write.get(), message.data(), message.size());
        (void)ignored;
        ::_exit(0);
    }
    report.write.reset();
    testing::LineReader reader(std::move(report.read));
    auto message = reader.next_line();
    int helper_status = 0;
    ::waitpid(helper, &helper_status, 0);
    ASSERT_TRUE(WIFEXITED(helper_status) && WEXITSTATUS(helper_status) == 0);
    EXPECT_EQ(message, "spawn /bin/true: setresuid(1000): Operation not permitted");
}

}  // namespace
}  // namespace infervisor

namespace infervisor {
namespace {

TEST(Spawn, SetsOomScoreAdjBeforeDroppingPrivileges) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to lower oom_score_adj";
    // The daemon runs at -900; a worker must get what it is given, here 0,
    // even though it then runs as an unprivileged user.
    SpawnRequest request = command({"/bin/cat", "/proc/self/oom_score_adj"});
    request.oom_score_adj = 0;
    request.uid = 65534;
    request.gid = 65534;
    auto finished = run_captured(request);
    ASSERT_TRUE(finished);
    EXPECT_EQ(finished->output, "0\n");
    request.oom_score_adj = 300;  // raising needs no privilege; lowering needs CAP_SYS_RESOURCE
    finished = run_captured(request);
    ASSERT_TRUE(finished);
    EXPECT_EQ(finished->output, "300\n");
}

TEST(Spawn, ReportsAnOutOfRangeOomScoreAdj) {
    SpawnRequest request = command({"/bin/true"});
    request.oom_score_adj = 5000;
    auto spawned = spawn_process(request);
    ASSERT_FALSE(spawned.ok());
    EXPECT_NE(spawned.error().message().find("oom_score_adj 5000"), std::string::npos)
        << spawned.error().message();
}

}  // namespace
}  // namespace infervisor
