// Worker lifecycle on real processes and real cgroup2 directories.
#include <gmock/gmock.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <cstring>
#include <fstream>

#include "base/file_io.h"
#include "cgroup/cgroup_discovery.h"
#include "supervisor_fixture.h"

namespace infervisor::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using K = EventKind;
using namespace std::chrono_literals;

std::string cgroup_of(pid_t pid) {
    auto text = read_file("/proc/" + std::to_string(pid) + "/cgroup");
    return text ? find_cgroup2_path(*text).value_or("") : "";
}

bool process_gone(pid_t pid) {
    auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    return !stat || stat->find(") Z ") != std::string::npos;
}

using Lifecycle = SupervisorFixture;
// The watchdogs' time is fake: a heartbeat is missed when the test lets the
// time pass.
class LifecycleOnFakeTime : public SupervisorFixture {
  protected:
    LifecycleOnFakeTime() : SupervisorFixture(true) {}
};

TEST_F(Lifecycle, WorkerRunsInItsOwnCgroupWithItsLimitsAndBecomesReady) {
    auto spec = example("llama", {"--model-mb", "4", "--load-ms", "50"});
    spec.notify = true;
    spec.memory.high = 200ull << 20;
    spec.pids_max = 32;
    supervisor_->apply(config({spec}));
    run_until_event("llama", K::ready);

    Worker* w = supervisor_->find("llama");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->state(), WorkerState::running);
    pid_t pid = w->main_pid();
    ASSERT_GT(pid, 0);
    EXPECT_THAT(cgroup_of(pid), HasSubstr("/workers/llama"));
    EXPECT_EQ(*limits_written_.at("llama").memory_max, 256ull << 20);
    EXPECT_EQ(*limits_written_.at("llama").memory_high, 200ull << 20);
    EXPECT_EQ(*limits_written_.at("llama").pids_max, 32);
    auto environ = read_file("/proc/" + std::to_string(pid) + "/environ");
    EXPECT_THAT(*environ, HasSubstr(std::string("INFERVISOR_WORKER=llama") + '\0'));
    EXPECT_THAT(*environ, HasSubstr("NOTIFY_SOCKET="));
    EXPECT_THAT(*environ, HasSubstr("/state/workers/llama/tmp"));

    bool stopped = false;
    w->stop([&] { stopped = true; });
    run_until([&] { return stopped; });
    EXPECT_EQ(w->state(), WorkerState::stopped);
    EXPECT_TRUE(process_gone(pid));
    EXPECT_FALSE(w->cgroup().exists());
    EXPECT_THAT(kinds_of("llama"), ElementsAre(K::started, K::ready, K::exited, K::stopped));
}

TEST_F(Lifecycle, CrashLoopRestartsWithBackoffUntilTheStartLimit) {
    auto spec = example("crashy", {"--crash-after-ms", "20", "--exit-code", "3"});
    // A run longer than backoff_max resets the doubling; on a loaded machine
    // a 20 ms crash can take longer than the fixture's 80 ms.
    spec.restart.backoff_max = 10s;
    spec.restart.start_limit_burst = 3;
    spec.restart.start_limit_interval = 10min;
    supervisor_->apply(config({spec}));
    run_until_event("crashy", K::failed);

    EXPECT_THAT(kinds_of("crashy"), ElementsAre(K::started, K::ready, K::exited, K::restarting,  //
                                                K::started, K::ready, K::exited, K::restarting,  //
                                                K::started, K::ready, K::exited, K::failed));
    EXPECT_EQ(field(*last("crashy", K::exited), "EXIT_CODE"), "3");
    // Backoff doubles: 20ms, then 40ms.
    std::vector<std::string> delays;
    for (const auto& e : events_)
        if (e.kind == K::restarting) delays.push_back(field(e, "DELAY_MS"));
    EXPECT_THAT(delays, ElementsAre("20", "40"));
    Worker* w = supervisor_->find("crashy");
    EXPECT_EQ(w->state(), WorkerState::failed);
    EXPECT_EQ(w->last_exit(), "exited with code 3");

    w->start();  // an operator's start clears the breaker
    run_until_event("crashy", K::started, 4);
}

TEST_F(Lifecycle, StopEscalatesToCgroupKillAndLeavesNoOrphan) {
    auto spec = example("stubborn", {"--ignore-sigterm", "--double-fork"});
    spec.stop_timeout = 300ms;
    supervisor_->apply(config({spec}));
    run_until_event("stubborn", K::ready);
    Worker* w = supervisor_->find("stubborn");
    run_until([&] { return w->cgroup().procs().value_or({}).size() >= 2; });
    auto pids = *w->cgroup().procs();

    bool stopped = false;
    w->stop([&] { stopped = true; });
    run_until([&] { return stopped; });
    EXPECT_EQ(count("stubborn", K::stop_escalated), 1u);
    EXPECT_FALSE(w->cgroup().exists());
    run_until([&] {
        for (pid_t p : pids)
            if (!process_gone(p)) return false;
        return true;
    });
    EXPECT_EQ(field(*last("stubborn", K::exited), "EXIT_SIGNAL"), "SIGKILL");
}

// The same escalation on fake time: exactly at stop_timeout, not before.
TEST_F(LifecycleOnFakeTime, StopEscalatesAtItsStopTimeoutNotBefore) {
    auto spec = example("stubborn", {"--ignore-sigterm"});
    spec.notify = true;  // READY=1 comes after it ignores SIGTERM
    spec.stop_timeout = 30s;
    supervisor_->apply(config({spec}));
    run_until_event("stubborn", K::ready);
    Worker* w = supervisor_->find("stubborn");
    bool stopped = false;
    w->stop([&] { stopped = true; });
    advance(30s - 1ms);
    EXPECT_EQ(count("stubborn", K::stop_escalated), 0u);
    EXPECT_EQ(w->state(), WorkerState::stopping);
    advance(1ms);
    EXPECT_EQ(count("stubborn", K::stop_escalated), 1u);
    run_until([&] { return stopped; });
    EXPECT_FALSE(w->cgroup().exists());
    EXPECT_EQ(field(*last("stubborn", K::exited), "EXIT_SIGNAL"), "SIGKILL");
}

TEST_F(Lifecycle, AnOrphanIsKilledEvenWhenTheMainProcessExitsCleanly) {
    auto spec = example("forker", {"--double-fork", "--crash-after-ms", "200", "--exit-code", "0"});
    spec.restart.mode = RestartMode::on_failure;
    supervisor_->apply(config({spec}));
    Worker* w = supervisor_->find("forker");
    run_until([&] { return w->cgroup().procs().value_or({}).size() >= 2; });
    auto pids = *w->cgroup().procs();
    run_until_event("forker", K::exited);
    run_until([&] { return !w->cgroup().exists(); });
    for (pid_t p : pids) run_until([&] { return process_gone(p); });
    EXPECT_EQ(w->state(), WorkerState::stopped);  // clean exit, on-failure: no restart
}

TEST_F(Lifecycle, ReloadRestartsOnlyChangedWorkers) {
    auto a = example("a", {});
    auto b = example("b", {});
    b.notify = true;  // the successor must get READY=1 through a fresh notify socket
    supervisor_->apply(config({a, b}));
    run_until([&] { return count("a", K::ready) == 1 && count("b", K::ready) == 1; });
    pid_t a_pid = supervisor_->find("a")->main_pid();
    pid_t b_pid = supervisor_->find("b")->main_pid();

    b.environment["MODEL"] = "bigger";
    auto c = example("c", {});
    supervisor_->apply(config({a, b, c}));
    run_until([&] { return count("b", K::ready) == 2 && count("c", K::ready) == 1; });
    EXPECT_EQ(supervisor_->find("a")->main_pid(), a_pid);
    EXPECT_EQ(count("a", K::started), 1u);
    EXPECT_NE(supervisor_->find("b")->main_pid(), b_pid);
    EXPECT_EQ(supervisor_->find("b")->spec().environment.at("MODEL"), "bigger");

    supervisor_->apply(config({b, c}));
    run_until_event("a", K::stopped);
    run_until([&] { return supervisor_->find("a") == nullptr; });
    EXPECT_FALSE(tree_->worker("a").exists());
    EXPECT_EQ(count("b", K::started), 2u);
    EXPECT_EQ(count("c", K::started), 1u);
}

TEST_F(Lifecycle, NotifyFromOutsideTheWorkersCgroupIsRejected) {
    auto spec = example("slow", {"--load-ms", "600000"});
    spec.notify = true;
    supervisor_->apply(config({spec}));
    run_until_event("slow", K::started);

    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::string path = (ctx_->paths.runtime_dir / "notify/slow").string();
    std::strcpy(addr.sun_path, path.c_str());
    const char msg[] = "READY=1";
    ASSERT_EQ(sendto(fd, msg, sizeof msg - 1, 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr),
              static_cast<ssize_t>(sizeof msg - 1));
    close(fd);
    run_until_event("slow", K::notify_rejected);
    EXPECT_THAT(last("slow", K::notify_rejected)->message,
                HasSubstr("not a process of this worker"));
    EXPECT_EQ(supervisor_->find("slow")->state(), WorkerState::starting);
}

// A sender that ended (and was reaped) before its message was read cannot be
// told apart, as happens to an adopted worker's last WATCHDOG=1 when the
// daemon is not its parent: dropped quietly, not reported as hostile.
TEST_F(Lifecycle, NotifyFromASenderThatHasEndedIsDroppedWithoutAnAlarm) {
    auto spec = example("slow", {"--load-ms", "600000"});
    spec.notify = true;
    supervisor_->apply(config({spec}));
    run_until_event("slow", K::started);

    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::string path = (ctx_->paths.runtime_dir / "notify/slow").string();
    std::strcpy(addr.sun_path, path.c_str());
    auto send_ready = [&] {
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        const char msg[] = "READY=1";
        ssize_t n =
            sendto(fd, msg, sizeof msg - 1, 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
        close(fd);
        return n == static_cast<ssize_t>(sizeof msg - 1);
    };
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) _exit(send_ready() ? 0 : 1);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);  // reaped before the loop reads it
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ASSERT_TRUE(send_ready());  // then one from a live outsider, read after it
    run_until_event("slow", K::notify_rejected);
    EXPECT_EQ(count("slow", K::notify_rejected), 1u);
    EXPECT_THAT(last("slow", K::notify_rejected)->message,
                HasSubstr("from pid " + std::to_string(getpid()) + " "));
    EXPECT_EQ(supervisor_->find("slow")->state(), WorkerState::starting);
}

TEST_F(LifecycleOnFakeTime, WatchdogKillsAWorkerThatStopsSendingHeartbeats) {
    auto spec = example("spinner", {"--spin-after-ms", "300"});
    spec.notify = true;
    spec.watchdog = 1s;
    spec.restart.mode = RestartMode::never;
    supervisor_->apply(config({spec}));
    run_until_event("spinner", K::ready);
    advance(999ms);  // no heartbeat is handled meanwhile
    EXPECT_EQ(count("spinner", K::policy_action), 0u);
    advance(1ms);
    run_until_event("spinner", K::exited);
    EXPECT_THAT(kinds_of("spinner"),
                ElementsAre(K::started, K::ready, K::policy_action, K::exited));
    EXPECT_EQ(field(*last("spinner", K::policy_action), "RULE"), "watchdog");
}

// No `watchdog:`: a worker that sends WATCHDOG=1 on its own (every 100ms
// here) is held to it once it has sent three; when it spins, the learned
// watchdog (at least 10s) ends the run. With `watchdog: 0s` it runs on.
TEST_F(LifecycleOnFakeTime, AWorkerThatSendsHeartbeatsUnaskedIsHeldToThem) {
    auto spec = example("beater", {"--heartbeat-ms", "100", "--spin-after-ms", "1500"});
    spec.restart.mode = RestartMode::never;
    ASSERT_TRUE(spec.learn_watchdog);
    supervisor_->apply(config({spec}));
    run_until_event("beater", K::watchdog_learned);
    advance(std::chrono::milliseconds(9999));  // no heartbeat is handled meanwhile
    EXPECT_EQ(count("beater", K::policy_action), 0u);
    advance(std::chrono::milliseconds(1));
    run_until_event("beater", K::exited);
    EXPECT_THAT(kinds_of("beater"), ElementsAre(K::started, K::ready, K::watchdog_learned,
                                                K::policy_action, K::exited));
    const Event* learned = last("beater", K::watchdog_learned);
    EXPECT_EQ(field(*learned, "WATCHDOG_MS"), "10000");  // 5 x ~100ms is under the minimum
    EXPECT_THAT(learned->message, HasSubstr("`watchdog: 0s` turns this off"));
    const Event* kill = last("beater", K::policy_action);
    EXPECT_EQ(field(*kill, "RULE"), "learned-watchdog");
    EXPECT_THAT(kill->message, HasSubstr("no WATCHDOG=1 for 10s (the pace it had shown)"));
}

TEST_F(Lifecycle, WatchdogZeroTurnsTheLearnedOneOff) {
    // Ten heartbeats, then its own exit: never armed, so nothing can end it.
    auto spec = example("beater", {"--heartbeat-ms", "100", "--crash-after-ms", "1000"});
    spec.restart.mode = RestartMode::never;
    spec.learn_watchdog = false;  // `watchdog: 0s`
    supervisor_->apply(config({spec}));
    run_until_event("beater", K::exited);
    EXPECT_EQ(count("beater", K::watchdog_learned), 0u);
    EXPECT_EQ(count("beater", K::policy_action), 0u);
    EXPECT_EQ(field(*last("beater", K::exited), "EXIT_CODE"), "1");  // its own crash
}

TEST_F(Lifecycle, LeftoverCgroupsOfAnEarlierRunAreReaped) {
    CgroupDir stale = tree_->worker("stale");
    ASSERT_TRUE(stale.create().ok());
    pid_t child = fork();
    if (child == 0) {
        (void)stale.move_process(getpid());
        for (;;) pause();
    }
    run_until([&] { return stale.procs().value_or({}).size() == 1; });
    supervisor_->adopt_leftovers(config({}));
    EXPECT_FALSE(stale.exists());
    EXPECT_EQ(count("stale", K::leftover_reaped), 1u);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

}  // namespace
}  // namespace infervisor::testing

namespace infervisor::testing {
namespace {

TEST_F(Lifecycle, WorkDirIsProtectedWhileConfiguredAndRemovedOnRequest) {
    auto keep = example("keep", {});
    auto drop = example("drop", {});
    drop.workdir.remove_on_removal = true;
    supervisor_->apply(config({keep, drop}));
    run_until([&] { return count("keep", K::ready) == 1 && count("drop", K::ready) == 1; });
    auto state = ctx_->paths.state_dir;
    auto exclusions = ctx_->paths.tmpfiles_dir / "infervisor-workdirs.conf";
    EXPECT_THAT(slurp(exclusions), HasSubstr("x " + (state / "workers/keep").string() + "\n"));
    EXPECT_THAT(slurp(exclusions), HasSubstr("x " + (state / "workers/drop").string() + "\n"));
    struct stat st {};
    ASSERT_EQ(::stat((state / "workers/keep").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
    std::ofstream(state / "workers/keep/model.bin") << "weights";

    supervisor_->apply(config({}));
    run_until([&] {
        return supervisor_->find("keep") == nullptr && supervisor_->find("drop") == nullptr;
    });
    run_until([&] { return !std::filesystem::exists(state / "workers/drop"); });
    // Released once stopped: no longer excluded from cleanup; kept by default.
    run_until([&] {
        return !std::filesystem::exists(exclusions) ||
               slurp(exclusions).find("workers/keep") == std::string::npos;
    });
    EXPECT_EQ(slurp(state / "workers/keep/model.bin"), "weights");

    // A preview (remove-workdir's prompt) names the dir and deletes nothing;
    // the removal then does.
    auto ask = [&](Supervisor::RemovalMode mode) {
        std::optional<Result<Supervisor::WorkDirRemoval>> answer;
        supervisor_->remove_workdir(
            "keep", mode, [&](Result<Supervisor::WorkDirRemoval> r) { answer = std::move(r); });
        run_until([&] { return answer.has_value(); });
        return std::move(*answer);
    };
    auto preview = ask(Supervisor::RemovalMode::preview);
    ASSERT_TRUE(preview.ok()) << preview.error().message();
    EXPECT_EQ(preview->path, state / "workers/keep");
    EXPECT_TRUE(preview->existed);
    EXPECT_EQ(slurp(state / "workers/keep/model.bin"), "weights");
    EXPECT_EQ(count("keep", K::workdir_removed), 0u);
    auto removal = ask(Supervisor::RemovalMode::remove);
    ASSERT_TRUE(removal.ok()) << removal.error().message();
    EXPECT_FALSE(std::filesystem::exists(state / "workers/keep"));
    EXPECT_EQ(count("keep", K::workdir_removed), 1u);
    auto after = ask(Supervisor::RemovalMode::preview);
    ASSERT_TRUE(after.ok());
    EXPECT_FALSE(after->existed);
}

// A renamed worker keeps its work dir: removing the old name's dir, on
// request or by remove_workdir_on_removal, must not delete what the new name
// uses right now.
TEST_F(Lifecycle, ARenamedWorkersDirIsNeverRemovedUnderTheNewName) {
    auto shared = ctx_->paths.state_dir / "models/llama";
    auto old_name = example("llama", {});
    old_name.workdir.workdir = shared;
    old_name.workdir.remove_on_removal = true;
    supervisor_->apply(config({old_name}));
    run_until_event("llama", K::ready);
    std::ofstream(shared / "model.bin") << "weights";

    auto new_name = example("llama2", {});
    new_name.workdir.workdir = shared;
    supervisor_->apply(config({new_name}));
    run_until_event("llama2", K::ready);
    run_until([&] { return supervisor_->find("llama") == nullptr; });

    // The old worker is retired a moment after it stopped; ask until it is.
    std::optional<Result<Supervisor::WorkDirRemoval>> answer;
    for (int attempt = 0; attempt < 1000; ++attempt) {
        answer.reset();
        supervisor_->remove_workdir(
            "llama", Supervisor::RemovalMode::remove,
            [&](Result<Supervisor::WorkDirRemoval> r) { answer = std::move(r); });
        run_until([&] { return answer.has_value(); });
        if (answer->ok() || answer->error().message().find("still running") == std::string::npos)
            break;
        io_.run_one();
    }
    ASSERT_FALSE(answer->ok());
    EXPECT_THAT(answer->error().message(),
                HasSubstr("overlaps worker 'llama2' work dir " + shared.string()));
    EXPECT_EQ(slurp(shared / "model.bin"), "weights");
    EXPECT_EQ(count("llama", K::workdir_removed), 0u);
}

}  // namespace
}  // namespace infervisor::testing

namespace infervisor::testing {
namespace {

TEST_F(Lifecycle, AnExplicitStopCancelsAPendingRestart) {
    supervisor_->apply(config({example("r", {})}));
    run_until_event("r", K::ready);
    Worker* w = supervisor_->find("r");
    w->restart();
    bool stopped = false;
    w->stop([&] { stopped = true; });
    run_until([&] { return stopped; });
    io_.poll();
    EXPECT_EQ(w->state(), WorkerState::stopped);
    EXPECT_EQ(count("r", K::started), 1u);
}

TEST_F(Lifecycle, AStopDuringAPolicyStopCompletesAndWins) {
    supervisor_->apply(config({example("p", {})}));
    run_until_event("p", K::ready);
    Worker* w = supervisor_->find("p");
    ASSERT_TRUE(w->stop_by_policy(Then::restart).ok());
    bool stopped = false;
    w->stop([&] { stopped = true; });
    run_until([&] { return stopped; });
    io_.poll();
    EXPECT_EQ(w->state(), WorkerState::stopped);
    EXPECT_EQ(count("p", K::started), 1u);
}

TEST_F(Lifecycle, StartDuringStopStartsAgainAfterwards) {
    supervisor_->apply(config({example("s", {})}));
    run_until_event("s", K::ready);
    Worker* w = supervisor_->find("s");
    w->stop();
    w->start();
    run_until_event("s", K::started, 2);
}

}  // namespace
}  // namespace infervisor::testing
