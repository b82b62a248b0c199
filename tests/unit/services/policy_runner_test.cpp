// PolicyRunner on real processes: decisions of the pure engine are carried
// out on the worker (or only journalled in dry-run mode).
#include "services/policy_runner.h"

#include <gmock/gmock.h>
#include <yaml-cpp/yaml.h>

#include "policy/rule_config.h"
#include "supervise/supervisor_fixture.h"

namespace infervisor::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using K = EventKind;
using namespace std::chrono_literals;

class PolicyRunnerTest : public SupervisorFixture {
  protected:
    Config with_rule(WorkerSpec spec, const char* rules_yaml) {
        ConfigErrors errors;
        spec.rules = parse_rules(YAML::Load(rules_yaml), errors);
        EXPECT_TRUE(errors.empty()) << errors.format();
        Config c = config({spec});
        c.daemon.sample_interval = 100ms;
        return c;
    }
    void start(const Config& c, std::optional<SignalWatchFiles> files = std::nullopt) {
        runner_ = std::make_unique<PolicyRunner>(*ctx_, *supervisor_);
        if (files) runner_->set_signal_files(*files);
        runner_->configure(c);
        supervisor_->apply(c);
        runner_->start();
    }
    // Runs the event loop for a while (to let pending notifications pass).
    void run_for(std::chrono::milliseconds d) {
        auto end = std::chrono::steady_clock::now() + d;
        run_until([&] { return std::chrono::steady_clock::now() > end; });
    }
    void TearDown() override {
        if (runner_) runner_->stop();
        SupervisorFixture::TearDown();
    }
    std::unique_ptr<PolicyRunner> runner_;
};

TEST_F(PolicyRunnerTest, ARuleKillsTheWorkerAndParksIt) {
    start(with_rule(example("runaway", {}),
                    "[{name: too-long, when: 'runtime > 300ms', action: kill, then: park}]"));
    run_until_event("runaway", K::exited);
    run_until([&] { return supervisor_->find("runaway")->state() == WorkerState::parked; });
    const Event* action = last("runaway", K::policy_action);
    ASSERT_NE(action, nullptr);
    EXPECT_EQ(field(*action, "RULE"), "too-long");
    EXPECT_EQ(field(*action, "ACTION"), "kill");
    EXPECT_EQ(field(*action, "RESULT"), "done");
    EXPECT_EQ(field(*last("runaway", K::exited), "EXIT_SIGNAL"), "SIGKILL");
    EXPECT_EQ(count("runaway", K::started), 1u);  // parked: no restart
    EXPECT_THAT(kinds_of("runaway"),
                ElementsAre(K::started, K::ready, K::policy_action, K::exited, K::parked));
    const Event* parked = last("runaway", K::parked);
    EXPECT_EQ(field(*parked, "RULE"), "too-long");
    EXPECT_EQ(field(*parked, "LAST_EXIT"), "killed by SIGKILL");
    EXPECT_THAT(parked->message, HasSubstr("infervisorctl start runaway"));

    supervisor_->find("runaway")->start();  // an operator's start
    run_until_event("runaway", K::started, 2);
}

TEST_F(PolicyRunnerTest, ThenRestartRestartsEvenWithRestartPolicyNever) {
    auto spec = example("looper", {});
    spec.restart.mode = RestartMode::never;
    start(with_rule(spec,
                    "[{name: too-long, when: 'runtime > 300ms', action: kill, then: restart}]"));
    run_until_event("looper", K::started, 2);
    EXPECT_GE(count("looper", K::restarting), 1u);
}

TEST_F(PolicyRunnerTest, DryRunDecidesAndJournalsButDoesNotAct) {
    auto c = with_rule(example("calm", {}),
                       "[{name: too-long, when: 'runtime > 300ms', action: kill, then: park}]");
    c.daemon.dry_run = true;
    start(c);
    run_until_event("calm", K::policy_action);
    const Event* action = last("calm", K::policy_action);
    EXPECT_EQ(field(*action, "DRY_RUN"), "1");
    EXPECT_EQ(field(*action, "RESULT"), "dry-run: not taken");
    EXPECT_THAT(action->message, HasSubstr("(dry run)"));
    EXPECT_EQ(count("calm", K::exited), 0u);
    EXPECT_EQ(supervisor_->find("calm")->state(), WorkerState::running);
}

TEST_F(PolicyRunnerTest, CheckpointActionCheckpointsThenStopsCleanlyWithTheStopSignal) {
    start(with_rule(example("tidy", {}),
                    "[{name: too-long, when: 'runtime > 300ms', action: checkpoint, then: park}]"));
    run_until([&] { return supervisor_->find("tidy")->state() == WorkerState::parked; });
    EXPECT_EQ(field(*last("tidy", K::checkpoint_written), "TRIGGER"), "rule 'too-long'");
    EXPECT_EQ(field(*last("tidy", K::exited), "EXIT_CODE"), "0");  // exited on SIGTERM
    EXPECT_EQ(count("tidy", K::stop_escalated), 0u);
    std::vector<K> order;
    for (K k : kinds_of("tidy"))
        if (k == K::policy_action || k == K::checkpoint_written || k == K::exited)
            order.push_back(k);
    EXPECT_EQ(order, (std::vector<K>{K::policy_action, K::checkpoint_written, K::exited}));
}

TEST_F(PolicyRunnerTest, AKernelNotificationEvaluatesWithoutWaitingForTheTick) {
    auto c =
        with_rule(example("watched", {}), "[{name: never, when: 'runtime > 1d', action: log}]");
    c.daemon.sample_interval = 1h;  // the tick will not come during this test
    // This host has no memory controller: cgroup.events stands in for
    // memory.events (both are notified through kernfs_notify()).
    start(c, SignalWatchFiles{"memory.pressure", "cgroup.events"});
    run_until_event("watched", K::ready);
    run_for(300ms);  // notifications of the start itself
    size_t before = runner_->evaluations();

    ASSERT_TRUE(supervisor_->find("watched")->freeze().ok());  // cgroup.events: frozen 1
    run_until([&] { return runner_->evaluations() > before; });
    ASSERT_TRUE(supervisor_->find("watched")->cgroup().set_frozen(false).ok());
}

TEST_F(PolicyRunnerTest, WakeUpsAreCoalescedIntoOneQueuedEvaluation) {
    auto c = with_rule(example("calm", {}), "[{name: never, when: 'runtime > 1d', action: log}]");
    c.daemon.sample_interval = 1h;
    start(c);
    run_until_event("calm", K::ready);
    size_t before = runner_->evaluations();
    for (int i = 0; i < 5; ++i) runner_->request_evaluation("test");
    run_until([&] { return runner_->evaluations() > before; });
    run_for(2 * PolicyRunner::kMinWakeGap);
    EXPECT_EQ(runner_->evaluations(), before + 1);

    // Right after an evaluation a wake-up is delayed, not dropped.
    runner_->request_evaluation("test");
    run_until([&] { return runner_->evaluations() > before + 1; });
}

TEST_F(PolicyRunnerTest, StoppedRunnerDoesNotEvaluateOnWakeUps) {
    auto c = with_rule(example("calm", {}), "[{name: never, when: 'runtime > 1d', action: log}]");
    c.daemon.sample_interval = 1h;
    start(c);
    run_until_event("calm", K::ready);
    runner_->request_evaluation("test");
    runner_->stop();
    size_t before = runner_->evaluations();
    run_for(2 * PolicyRunner::kMinWakeGap);
    EXPECT_EQ(runner_->evaluations(), before);
}

}  // namespace
}  // namespace infervisor::testing
