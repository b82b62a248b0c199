// view_of: a real worker as it looks from outside, the one WorkerView that
// the control socket and the metrics both show.
#include "supervise/worker_view_of.h"

#include <gmock/gmock.h>

#include "supervisor_fixture.h"

namespace infervisor::testing {
namespace {

using K = EventKind;
using namespace std::chrono_literals;

using WorkerViewOf = SupervisorFixture;

TEST_F(WorkerViewOf, ARunningWorkerShowsItsRunItsLimitsAndWhatItSaid) {
    auto spec = example("viewed", {"--load-ms", "20"});
    spec.notify = true;
    spec.memory.high = 200ull << 20;
    spec.is_protected = true;
    supervisor_->apply(config({spec}));
    run_until_event("viewed", K::ready);
    Worker* w = supervisor_->find("viewed");
    ASSERT_NE(w, nullptr);

    const TimePoint now = clock_.now();
    WorkerView v = view_of(*w, now);
    EXPECT_EQ(v.name, "viewed");
    EXPECT_EQ(v.state, "running");
    EXPECT_EQ(v.state_reason, "");
    EXPECT_EQ(v.main_pid, w->main_pid());
    ASSERT_TRUE(v.uptime_usec.has_value());
    ASSERT_TRUE(v.state_age_usec.has_value());
    EXPECT_EQ(v.restarts, 0u);
    EXPECT_EQ(v.memory_high, 200ull << 20);
    EXPECT_EQ(v.memory_max, spec.memory.max);
    EXPECT_EQ(v.swap_max, spec.memory.swap_max);
    EXPECT_THAT(v.status_text, ::testing::StartsWith("serv"));  // serving, served N requests
    EXPECT_EQ(v.status_text, w->status_text());
    EXPECT_EQ(v.last_exit, "");
    EXPECT_TRUE(v.is_protected);
    EXPECT_TRUE(v.probes.empty());
    EXPECT_EQ(v.phase, "");  // no policy round has judged it
    EXPECT_EQ(v.checkpoint, std::nullopt);

    // Ages count to the `now` asked for.
    WorkerView later = view_of(*w, now + 5s);
    EXPECT_EQ(*later.uptime_usec, *v.uptime_usec + 5'000'000);
    EXPECT_EQ(*later.state_age_usec, *v.state_age_usec + 5'000'000);

    // Without the cgroup reads (the metrics' view) only the use is missing.
    WorkerView unread = view_of(*w, now, ViewReads::none);
    EXPECT_EQ(unread.memory_current, std::nullopt);
    EXPECT_EQ(unread.memory_peak, std::nullopt);
    EXPECT_EQ(unread.swap_current, std::nullopt);
    EXPECT_EQ(unread.memory_pressure_some_avg10, std::nullopt);
    v.memory_current = v.memory_peak = v.swap_current = std::nullopt;
    v.memory_pressure_some_avg10 = std::nullopt;
    EXPECT_EQ(unread, v);
}

TEST_F(WorkerViewOf, AWorkerWithoutAProcessShowsNoRunButHowItLastEnded) {
    auto spec = example("ended", {"--crash-after-ms", "20", "--exit-code", "3"});
    spec.restart.mode = RestartMode::never;
    supervisor_->apply(config({spec}));
    run_until_event("ended", K::exited);
    Worker* w = supervisor_->find("ended");
    ASSERT_NE(w, nullptr);
    run_until([&] { return w->state() == WorkerState::stopped; });

    WorkerView v = view_of(*w, clock_.now());
    EXPECT_EQ(v.state, "stopped");
    EXPECT_EQ(v.main_pid, std::nullopt);
    EXPECT_EQ(v.uptime_usec, std::nullopt);
    EXPECT_EQ(v.memory_current, std::nullopt);
    EXPECT_EQ(v.memory_pressure_some_avg10, std::nullopt);
    EXPECT_EQ(v.phase, "");
    EXPECT_EQ(v.last_exit, "exited with code 3");
    EXPECT_TRUE(v.state_age_usec.has_value());
}

}  // namespace
}  // namespace infervisor::testing
