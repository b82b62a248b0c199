// Suspend and resume on real processes in real cgroups: the example worker
// counts served requests (STATUS=served K) every 20 ms. Suspended, it is
// frozen (cgroup.events says so) and counts nothing, its watchdog does not
// kill it; resumed, it counts on from where it was, in the same run. This
// host's cgroup2 has no memory controller, so the reclaim finds nothing to
// write (method "none"); pushing memory to swap is checked in the VM
// (tests/vm/scenarios/19*-suspend-*.sh).
#include <gmock/gmock.h>

#include "policy/rule_config.h"
#include "services/policy_runner.h"
#include "supervise/worker_suspension.h"
#include "supervisor_fixture.h"
#include "support/fake_clock.h"
#include "support/temp_dir.h"

namespace infervisor::testing {
namespace {

using ::testing::HasSubstr;
using K = EventKind;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

class Suspension : public SupervisorFixture {
  protected:
    WorkerSpec counter(const std::string& name) const {
        auto spec = example(name, {"--serve-interval-ms", "20"});
        spec.notify = true;
        // The worker heartbeats every 100 ms: only a paused watchdog spares
        // it while it is frozen.
        spec.watchdog = 200ms;
        return spec;
    }
    long served(const std::string& name) {
        std::string status = supervisor_->find(name)->status_text();
        long n = 0;
        std::sscanf(status.c_str(), "served %ld", &n);
        return n;
    }
    void run_for(std::chrono::milliseconds d) {
        auto end = std::chrono::steady_clock::now() + d;
        run_until([&] { return std::chrono::steady_clock::now() > end; });
    }
    bool frozen(const std::string& name) {
        auto f = supervisor_->find(name)->cgroup().frozen();
        return f && *f;
    }
};

TEST_F(Suspension, ASuspendedWorkerIsFrozenKeepsItsRunAndCountsOnWhenResumed) {
    // 500 ms, not 200: after the thaw its memory pages back in before its
    // first heartbeat, which on a loaded machine once took longer than 200 ms.
    WorkerSpec spec = counter("count");
    spec.watchdog = 500ms;
    supervisor_->apply(config({spec}));
    run_until_event("count", K::ready);
    run_until([&] { return served("count") >= 5; });
    Worker* w = supervisor_->find("count");
    pid_t pid = w->main_pid();

    std::optional<WorkerSuspension::Outcome> answer;
    ASSERT_TRUE(w->suspend("test", [&](const auto& o) { answer = o; }).ok());
    EXPECT_EQ(w->state(), WorkerState::suspended);
    EXPECT_EQ(w->state_reason(), "test");
    run_until_event("count", K::suspended);
    ASSERT_TRUE(answer);
    EXPECT_TRUE(answer->ok) << answer->detail;
    EXPECT_TRUE(frozen("count"));

    const Event* suspended = last("count", K::suspended);
    EXPECT_EQ(field(*suspended, "TRIGGER"), "test");
    EXPECT_EQ(field(*suspended, "FROZEN"), "1");
    EXPECT_NE(field(*suspended, "RECLAIM_METHOD"), "");
    EXPECT_NE(field(*suspended, "BYTES_RECLAIMED"), "");
    EXPECT_NE(field(*suspended, "SECONDS"), "");

    // Frozen: it serves nothing, and five watchdog intervals pass unpunished.
    long at_suspend = served("count");
    run_for(2500ms);
    EXPECT_EQ(served("count"), at_suspend);
    EXPECT_EQ(w->state(), WorkerState::suspended);
    EXPECT_EQ(count("count", K::policy_action), 0u);  // no watchdog kill

    ASSERT_TRUE(w->resume("test-resume").ok());
    EXPECT_EQ(w->state(), WorkerState::running);
    EXPECT_EQ(w->state_reason(), "");
    EXPECT_FALSE(frozen("count"));
    const Event* resumed = last("count", K::resumed);
    ASSERT_NE(resumed, nullptr);
    EXPECT_EQ(field(*resumed, "TRIGGER"), "test-resume");
    EXPECT_EQ(field(*resumed, "SUSPENDED_BY"), "test");
    EXPECT_NE(field(*resumed, "SUSPENDED_SECONDS"), "");

    run_until([&] { return served("count") > at_suspend + 5; });
    EXPECT_EQ(w->main_pid(), pid);  // the same run, counting on
    EXPECT_EQ(count("count", K::exited), 0u);
    EXPECT_EQ(count("count", K::started), 1u);
}

// Exec probes run inside the worker's cgroup, which a suspension freezes: a
// probe spawned into it would stop before its execve. So a suspension ends
// the probes as it freezes, none is started while it lasts, and the resume
// starts them again.
TEST_F(Suspension, ExecProbesStopWhileSuspendedAndStartAgainOnResume) {
    TempDir out;
    const std::string attempts = (out.path() / "attempts").string();
    WorkerSpec spec = counter("probed");
    spec.watchdog = 500ms;
    ProbeSpec probe;
    probe.kind = ProbeKind::exec;
    probe.command = {"/bin/sh", "-c", "echo x >> " + attempts};
    probe.interval = 200ms;
    probe.timeout = 150ms;
    spec.probes.liveness = probe;
    supervisor_->apply(config({spec}));
    run_until_event("probed", K::ready);
    auto count_attempts = [&] {
        std::string text = fs::exists(attempts) ? slurp(attempts) : "";
        return std::count(text.begin(), text.end(), '\n');
    };
    run_until([&] { return count_attempts() >= 2; });
    Worker* w = supervisor_->find("probed");
    ASSERT_TRUE(w->suspend("test").ok());
    run_until_event("probed", K::suspended);
    EXPECT_TRUE(frozen("probed"));
    CgroupDir probe_cgroup = CgroupTree(cgroup_root_).worker_probe("probed", "liveness");
    run_until([&] { return !probe_cgroup.exists(); });
    long at_suspend = count_attempts();
    run_for(1500ms);  // seven probe intervals
    EXPECT_EQ(count_attempts(), at_suspend);
    EXPECT_FALSE(probe_cgroup.exists());
    EXPECT_EQ(w->state(), WorkerState::suspended);
    ASSERT_TRUE(w->resume("test-resume").ok());
    run_until([&] { return count_attempts() >= at_suspend + 2; });
    EXPECT_EQ(w->state(), WorkerState::running);
}

TEST_F(Suspension, ResumeIsRefusedUnlessSuspendedAndSuspendUnlessRunning) {
    auto spec = counter("once");
    supervisor_->apply(config({spec}));
    run_until_event("once", K::ready);
    Worker* w = supervisor_->find("once");
    EXPECT_THAT(w->resume("x").error().what, HasSubstr("not suspended"));
    ASSERT_TRUE(w->suspend("first").ok());
    EXPECT_THAT(w->suspend("second").error().what, HasSubstr("already suspended"));
    EXPECT_THAT(w->checkpoint_now().error().what, HasSubstr("resume it first"));
    run_until_event("once", K::suspended);
    EXPECT_EQ(last("once", K::suspended)->message.find("second"), std::string::npos);
    bool stopped = false;
    w->stop([&] { stopped = true; });
    run_until([&] { return stopped; });
    EXPECT_THAT(w->suspend("late").error().what, HasSubstr("not running"));
}

TEST_F(Suspension, AStopThawsASuspendedWorkerSoThatItExitsOnItsStopSignal) {
    supervisor_->apply(config({counter("leaving")}));
    run_until_event("leaving", K::ready);
    Worker* w = supervisor_->find("leaving");
    ASSERT_TRUE(w->suspend("test").ok());
    run_until_event("leaving", K::suspended);
    bool stopped = false;
    w->stop([&] { stopped = true; });
    run_until([&] { return stopped; });
    EXPECT_EQ(w->state(), WorkerState::stopped);
    EXPECT_EQ(field(*last("leaving", K::exited), "EXIT_CODE"), "0");  // its SIGTERM handler ran
    EXPECT_EQ(count("leaving", K::stop_escalated), 0u);
}

TEST_F(Suspension, AResumeAskedForWhileSuspendingHappensOnceTheSuspensionIsDone) {
    supervisor_->apply(config({counter("quick")}));
    run_until_event("quick", K::ready);
    Worker* w = supervisor_->find("quick");
    ASSERT_TRUE(w->suspend("test").ok());
    bool resumed = false;
    ASSERT_TRUE(w->resume("hurry", [&](const auto& o) { resumed = o.ok; }).ok());
    EXPECT_EQ(w->state(), WorkerState::suspended);  // not before the reclaim has ended
    run_until([&] { return resumed; });
    EXPECT_EQ(w->state(), WorkerState::running);
    std::vector<K> order;
    for (K k : kinds_of("quick"))
        if (k == K::suspended || k == K::resumed) order.push_back(k);
    EXPECT_EQ(order, (std::vector<K>{K::suspended, K::resumed}));
}

TEST_F(Suspension, AStartOfASuspendedWorkerResumesIt) {
    supervisor_->apply(config({counter("started")}));
    run_until_event("started", K::ready);
    Worker* w = supervisor_->find("started");
    ASSERT_TRUE(w->suspend("test").ok());
    run_until_event("started", K::suspended);
    w->start();
    EXPECT_EQ(w->state(), WorkerState::running);
    EXPECT_EQ(field(*last("started", K::resumed), "TRIGGER"), "start");
    EXPECT_EQ(count("started", K::started), 1u);
}

TEST_F(Suspension, ARuleWithActionSuspendSuspendsTheWorker) {
    ConfigErrors errors;
    WorkerSpec spec = counter("ruled");
    spec.rules = parse_rules(
        YAML::Load("[{name: long-run, when: 'runtime > 200ms', action: suspend}]"), errors);
    ASSERT_TRUE(errors.empty()) << errors.format();
    Config c = config({spec});
    c.daemon.sample_interval = 50ms;
    PolicyRunner runner(*ctx_, *supervisor_);
    runner.configure(c);
    supervisor_->apply(c);
    runner.start();
    run_until_event("ruled", K::suspended);
    runner.stop();
    const Event* action = last("ruled", K::policy_action);
    ASSERT_NE(action, nullptr);
    EXPECT_EQ(field(*action, "ACTION"), "suspend");
    EXPECT_EQ(field(*action, "RESULT"), "done");
    EXPECT_EQ(field(*last("ruled", K::suspended), "TRIGGER"), "rule 'long-run'");
    EXPECT_EQ(supervisor_->find("ruled")->state_reason(), "rule 'long-run'");
}

}  // namespace
}  // namespace infervisor::testing

namespace infervisor::testing {
namespace {

// A host rule that always holds suspends the lowest priority worker; a
// resume_when that always holds brings it back once its `for` has passed
// after the suspension. Order and outcome only.
TEST_F(Suspension, AHostRuleSuspendsTheLowPriorityWorkerAndResumeWhenBringsItBack) {
    ConfigErrors errors;
    WorkerSpec low = counter("low");
    WorkerSpec high = counter("high");
    high.priority = 10;
    Config c = config({low, high});
    c.host_rules = parse_host_rules(
        YAML::Load("[{name: squeeze, when: 'host.mem.available > 1', action: suspend}]"), errors);
    ASSERT_TRUE(errors.empty()) << errors.format();
    auto when = parse_condition("host.mem.available > 1 for 300ms", RuleScope::host);
    ASSERT_TRUE(when.ok()) << when.error().what;
    c.daemon.resume_when = *when;
    c.daemon.host_settle = 0ms;
    c.daemon.sample_interval = 50ms;
    PolicyRunner runner(*ctx_, *supervisor_);
    runner.configure(c);
    supervisor_->apply(c);
    run_until_event("low", K::ready);
    run_until_event("high", K::ready);
    runner.start();
    run_until_event("low", K::resumed);
    runner.stop();

    std::vector<std::string> order;
    for (const auto& e : events_)
        if (e.worker == "low" &&
            (e.kind == K::suspended || e.kind == K::resumed || e.kind == K::policy_action))
            order.push_back(std::string(event_name(e.kind)) + ":" + field(e, "RULE") +
                            field(e, "TRIGGER"));
    EXPECT_EQ(order,
              (std::vector<std::string>{"policy-action:squeeze", "suspended:rule 'squeeze'",
                                        "policy-action:resume_when",
                                        "resumed:resume_when 'host.mem.available > 1 for 300ms'"}));
    const Event* decision = last("low", K::policy_action);
    EXPECT_EQ(field(*decision, "ACTION"), "resume");
    EXPECT_EQ(field(*decision, "RESULT"), "done");
    EXPECT_NE(field(*decision, "HOST_MEM_AVAILABLE_BYTES"), "");
    EXPECT_EQ(field(*decision, "PRIORITY"), "0");
    EXPECT_EQ(count("high", K::suspended), 0u);
    EXPECT_EQ(supervisor_->find("low")->state(), WorkerState::running);
}

// An in-place re-execution: the new daemon's PolicyRunner finds a worker that
// a host rule parked under the old one (the worker's state keeps the rule's
// name) and resume_when starts it again.
TEST_F(Suspension, AWorkerAHostRuleParkedBeforeTheDaemonStartedWaitsForResumeWhen) {
    ConfigErrors errors;
    WorkerSpec low = counter("low");
    WorkerSpec high = counter("high");
    high.priority = 10;
    // Nothing here is frozen: no 200 ms watchdog to miss on a loaded machine.
    low.watchdog = high.watchdog = Duration::zero();
    Config c = config({low, high});
    c.host_rules = parse_host_rules(
        YAML::Load("[{name: squeeze, when: 'host.mem.available > 1', action: kill, then: park}]"),
        errors);
    ASSERT_TRUE(errors.empty()) << errors.format();
    c.daemon.host_settle = 10min;  // one victim
    c.daemon.sample_interval = 50ms;
    supervisor_->apply(c);
    run_until_event("low", K::ready);
    run_until_event("high", K::ready);
    {
        PolicyRunner before(*ctx_, *supervisor_);  // no resume_when
        before.configure(c);
        before.start();
        run_until_event("low", K::parked);
        before.stop();
    }
    ASSERT_EQ(supervisor_->find("low")->state(), WorkerState::parked);
    EXPECT_EQ(supervisor_->find("low")->policy_rule(), "squeeze");

    // The same rule (by name; its condition no longer holds) and resume_when.
    c.host_rules = parse_host_rules(
        YAML::Load("[{name: squeeze, when: 'host.mem.available < 1', action: kill, then: park}]"),
        errors);
    auto when = parse_condition("host.mem.available > 1 for 300ms", RuleScope::host);
    ASSERT_TRUE(when.ok()) << when.error().what;
    c.daemon.resume_when = *when;
    PolicyRunner after(*ctx_, *supervisor_);
    after.configure(c);
    after.start();
    run_until([&] { return count("low", K::started) == 2; });
    after.stop();

    const Event* decision = last("low", K::policy_action);
    ASSERT_NE(decision, nullptr);
    EXPECT_EQ(field(*decision, "RULE"), "resume_when");
    EXPECT_EQ(field(*decision, "RESULT"), "done");
    EXPECT_EQ(count("high", K::exited), 0u);
}

// Issue 26, defect 10: a freeze that never completes (a task that never
// reaches the freezer) used to be reclaimed "anyway" and reported as
// suspended, with swap.max lifted and no watchdog or probes while its tasks
// ran. On a fake cgroup whose cgroup.events never says `frozen 1`.
TEST(WorkerSuspensionAlone, AFreezeThatNeverCompletesIsGivenUpAndTheLimitsComeBack) {
    TempDir fs;
    // Writes do not truncate (cgroupfs needs none): values are compared by
    // their first bytes.
    fs.write("w/memory.high", "max");
    fs.write("w/memory.swap.max", "0");
    fs.write("w/cgroup.freeze", "0");
    fs.write("w/cgroup.events", "populated 1\nfrozen 0\n");
    CgroupDir dir(fs.path() / "w");
    boost::asio::io_context io;
    FakeClock clock;
    std::vector<std::pair<EventKind, WorkerSuspension::Fields>> events;
    int thawed = 0;
    WorkerSuspension suspension(
        io, clock, "w",
        [&](EventKind kind, std::string, WorkerSuspension::Fields fields) {
            events.emplace_back(kind, std::move(fields));
        },
        [&] { ++thawed; });
    std::optional<WorkerSuspension::Outcome> outcome;
    ASSERT_TRUE(
        suspension
            .suspend(dir, "rule 'x'", [&](const WorkerSuspension::Outcome& o) { outcome = o; })
            .ok());
    EXPECT_EQ(slurp(fs.path() / "w/memory.swap.max"), "max");
    EXPECT_EQ(slurp(fs.path() / "w/cgroup.freeze"), "1");
    clock.advance(WorkerSuspension::kFreezeWait + std::chrono::seconds(1));
    while (!outcome && io.run_one_for(std::chrono::seconds(5))) {
    }
    ASSERT_TRUE(outcome.has_value());
    EXPECT_FALSE(outcome->ok);
    EXPECT_THAT(outcome->detail, HasSubstr("not frozen within 10s"));
    EXPECT_FALSE(suspension.active());
    EXPECT_EQ(thawed, 1);  // the Worker is told: back to running, watched
    EXPECT_EQ(slurp(fs.path() / "w/memory.swap.max").substr(0, 1), "0");
    EXPECT_EQ(slurp(fs.path() / "w/cgroup.freeze"), "0");
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].first, EventKind::resumed);
    bool failed_field = false;
    for (const auto& [key, value] : events[0].second)
        if (key == "SUSPEND_FAILED") failed_field = value.find("not frozen") != std::string::npos;
    EXPECT_TRUE(failed_field);
}

}  // namespace
}  // namespace infervisor::testing
