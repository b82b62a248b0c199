// PolicyRunner on real processes: decisions of the pure engine are carried
// out on the worker (or only journalled in dry-run mode).
#include "supervise/policy_runner.h"

#include <gmock/gmock.h>
#include <yaml-cpp/yaml.h>

#include "policy/rule_config.h"
#include "supervisor_fixture.h"

namespace infervisor::testing {
namespace {

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
    void start(const Config& c) {
        runner_ = std::make_unique<PolicyRunner>(*ctx_, *supervisor_);
        runner_->configure(c);
        supervisor_->apply(c);
        runner_->start();
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

    supervisor_->find("runaway")->start();  // an operator's start
    run_until_event("runaway", K::started, 2);
}

TEST_F(PolicyRunnerTest, ThenRestartRestartsEvenWithRestartPolicyNever) {
    auto spec = example("looper", {});
    spec.restart.mode = RestartMode::never;
    start(with_rule(spec, "[{name: too-long, when: 'runtime > 300ms', action: kill, then: restart}]"));
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

TEST_F(PolicyRunnerTest, CheckpointActionStopsCleanlyWithTheStopSignal) {
    start(with_rule(example("tidy", {}),
                    "[{name: too-long, when: 'runtime > 300ms', action: checkpoint, then: park}]"));
    run_until([&] { return supervisor_->find("tidy")->state() == WorkerState::parked; });
    EXPECT_EQ(field(*last("tidy", K::exited), "EXIT_CODE"), "0");  // exited on SIGTERM
    EXPECT_EQ(count("tidy", K::stop_escalated), 0u);
}

}  // namespace
}  // namespace infervisor::testing
