// A drain (infervisorctl drain, Supervisor::drain) on real processes: every
// worker that is up comes down by its own method (a worker whose
// checkpoints work is checkpointed first), nothing starts while drained (a
// start, a restart after an exit), the drain is recorded for a daemon
// restart, and undrain starts again the workers that were up. The record's
// format is read back trusting nothing.
#include <gmock/gmock.h>

#include "base/file_io.h"
#include "supervise/drain_record.h"
#include "supervisor_fixture.h"

namespace infervisor::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using K = EventKind;
using namespace std::chrono_literals;

class Drain : public SupervisorFixture {
  protected:
    std::vector<Supervisor::DrainStep> drain() {
        std::optional<std::vector<Supervisor::DrainStep>> steps;
        supervisor_->drain([&](std::vector<Supervisor::DrainStep> s) { steps = std::move(s); });
        run_until([&] { return steps.has_value(); });
        return *steps;
    }
    static std::vector<std::string> hows(const std::vector<Supervisor::DrainStep>& steps) {
        std::vector<std::string> out;
        for (const auto& s : steps) out.push_back(s.worker + ": " + s.how);
        return out;
    }
};

TEST_F(Drain, EveryWorkerComesDownNothingStartsAndUndrainBringsBackTheOnesThatWereUp) {
    auto stays_stopped = example("spare", {});
    supervisor_->apply(config({example("a", {}), example("b", {}), stays_stopped}));
    run_until_event("a", K::ready);
    run_until_event("b", K::ready);
    run_until_event("spare", K::ready);
    supervisor_->find("spare")->stop();
    run_until([&] { return supervisor_->find("spare")->state() == WorkerState::stopped; });

    auto steps = drain();
    std::sort(steps.begin(), steps.end(),
              [](const auto& x, const auto& y) { return x.worker < y.worker; });
    EXPECT_THAT(hows(steps), ElementsAre("a: stopped", "b: stopped"));
    EXPECT_TRUE(supervisor_->drained());
    EXPECT_EQ(supervisor_->find("a")->state(), WorkerState::stopped);
    EXPECT_EQ(supervisor_->find("b")->state(), WorkerState::stopped);
    auto record = read_drain_record(ctx_->paths.runtime_dir);
    ASSERT_TRUE(record.has_value());
    ASSERT_TRUE(*record);
    EXPECT_THAT(**record, ElementsAre("a", "b"));

    // A start while drained launches nothing.
    supervisor_->find("a")->start();
    EXPECT_EQ(supervisor_->find("a")->state(), WorkerState::stopped);
    EXPECT_EQ(count("a", K::started), 1u);

    EXPECT_THAT(supervisor_->undrain(), ElementsAre("a", "b"));
    EXPECT_FALSE(supervisor_->drained());
    EXPECT_FALSE(read_drain_record(ctx_->paths.runtime_dir).has_value());
    run_until_event("a", K::ready, 2);
    run_until_event("b", K::ready, 2);
    EXPECT_EQ(supervisor_->find("spare")->state(), WorkerState::stopped) << "it was not up";
    EXPECT_TRUE(supervisor_->undrain().empty()) << "not drained: nothing to start";
}

// A worker in its crash loop when the drain comes (exited, a restart due) is
// not restarted: the pending restart is dropped, and none follows.
TEST_F(Drain, AWorkerInItsCrashLoopIsNotRestartedWhileDrained) {
    supervisor_->apply(
        config({example("crasher", {"--crash-after-ms", "100", "--exit-code", "3"})}));
    run_until_event("crasher", K::exited);
    auto steps = drain();
    ASSERT_EQ(steps.size(), 1u);
    const size_t starts = count("crasher", K::started);
    // Longer than its restart backoff: a restart would have come by now.
    auto until = std::chrono::steady_clock::now() + 2s;
    run_until([&] { return std::chrono::steady_clock::now() > until; });
    EXPECT_EQ(count("crasher", K::started), starts);
    EXPECT_EQ(supervisor_->find("crasher")->state(), WorkerState::stopped);
}

// A worker whose checkpoints are known to work (periodic ones here) is
// checkpointed before it is stopped; its next start restores from it.
TEST_F(Drain, AWorkerWhoseCheckpointsWorkIsCheckpointedThenStopped) {
    auto spec = example("count", {"--serve-interval-ms", "20"});
    spec.notify = true;
    spec.checkpoint.timeout = 20s;
    spec.checkpoint.interval = 1h;
    supervisor_->apply(config({spec}));
    run_until_event("count", K::ready);
    auto steps = drain();
    EXPECT_THAT(hows(steps), ElementsAre("count: checkpointed, then stopped"));
    const Event* written = last("count", K::checkpoint_written);
    ASSERT_NE(written, nullptr);
    EXPECT_EQ(field(*written, "TRIGGER"), "infervisorctl drain");
    EXPECT_EQ(field(*last("count", K::exited), "EXIT_CODE"), "0") << "a clean stop";
    supervisor_->undrain();
    run_until_event("count", K::checkpoint_restoring);
}

// A worker added by a reload while drained stays stopped until undrain,
// which starts only what was up.
TEST_F(Drain, AWorkerAddedWhileDrainedStaysStopped) {
    supervisor_->apply(config({example("a", {})}));
    run_until_event("a", K::ready);
    drain();
    supervisor_->apply(config({example("a", {}), example("new", {})}));
    ASSERT_NE(supervisor_->find("new"), nullptr);
    EXPECT_EQ(supervisor_->find("new")->state(), WorkerState::stopped);
    EXPECT_THAT(supervisor_->undrain(), ElementsAre("a"));
    EXPECT_EQ(supervisor_->find("new")->state(), WorkerState::stopped);
}

TEST(DrainRecord, IsReadBackAsWrittenAndAnythingElseIsRefused) {
    EXPECT_EQ(format_drain_record({"a", "llama-2"}), "infervisor-drained 1\nup a\nup llama-2\n");
    auto names = parse_drain_record("infervisor-drained 1\nup a\nup llama-2\n");
    ASSERT_TRUE(names);
    EXPECT_THAT(*names, ElementsAre("a", "llama-2"));
    ASSERT_TRUE(parse_drain_record("infervisor-drained 1\n"));
    EXPECT_TRUE(parse_drain_record("infervisor-drained 1\n")->empty());
    auto refused = [](std::string_view text) {
        auto r = parse_drain_record(text);
        return r ? std::string("accepted") : r.error().message();
    };
    EXPECT_EQ(refused(""), "empty");
    EXPECT_EQ(refused("infervisor-drained 2\n"), "not a drain record of this version");
    EXPECT_EQ(refused("infervisor-drained 1\nup a"), "its last line is not ended");
    EXPECT_EQ(refused("infervisor-drained 1\nup ../etc\n"), "line 2 is not 'up NAME'");
    EXPECT_EQ(refused("infervisor-drained 1\ndown a\n"), "line 2 is not 'up NAME'");
    EXPECT_EQ(refused("infervisor-drained 1\nup \n"), "line 2 is not 'up NAME'");
    EXPECT_THAT(refused(std::string(kMaxDrainRecordSize + 1, 'x')), HasSubstr("larger"));
}

}  // namespace
}  // namespace infervisor::testing
