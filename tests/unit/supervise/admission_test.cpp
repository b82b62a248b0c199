// Admission with real processes: workers with a memory.reserve start only
// when it fits in what the host can give (policy/admission.h). MemAvailable
// comes from a meminfo the test writes (the daemon reads {procfs}/meminfo),
// so the host's own memory does not decide; this host has no memory
// controller, so every running worker's reserve counts as unused. The
// workers do not notify (their READY=1 would be checked against the real
// /proc). The VM checks it with real memory (tests/vm/scenarios/192-*.sh).
#include <gmock/gmock.h>

#include <fstream>

#include "services/metrics_collector.h"
#include "services/policy_runner.h"
#include "supervisor_fixture.h"
#include "support/byte_units.h"

namespace infervisor::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using K = EventKind;
using namespace std::chrono_literals;

class Admission : public SupervisorFixture {
  protected:
    explicit Admission(bool fake_time = false) : SupervisorFixture(fake_time) {}
    void SetUp() override {
        SupervisorFixture::SetUp();
        if (IsSkipped()) return;
        ctx_->paths.procfs = dir_->mkdir("proc");
        set_available(4 * GiB);
    }
    void set_available(uint64_t bytes) {
        std::ofstream(ctx_->paths.procfs / "meminfo")
            << "MemTotal:       16777216 kB\nMemFree:         1000 kB\nMemAvailable: "
            << bytes / 1024 << " kB\n";
    }
    WorkerSpec reserving(const std::string& name, uint64_t reserve, int64_t priority = 0) const {
        auto spec = example(name, {"--serve-interval-ms", "50"});
        spec.memory.reserve = reserve;
        spec.priority = priority;
        return spec;
    }
    WorkerState state(const std::string& name) { return supervisor_->find(name)->state(); }
};

TEST_F(Admission, AWorkerThatDoesNotFitWaitsAndStartsWhenAnotherStops) {
    supervisor_->apply(config({reserving("a", 3 * GiB), reserving("b", 2 * GiB)}));
    run_until_event("b", K::waiting);
    EXPECT_EQ(state("a"), WorkerState::running);
    EXPECT_EQ(state("b"), WorkerState::waiting);
    EXPECT_EQ(count("b", K::started), 0u);
    const Event* waiting = last("b", K::waiting);
    EXPECT_EQ(field(*waiting, "NEEDS_BYTES"), std::to_string(2 * GiB));
    EXPECT_EQ(field(*waiting, "HOST_MEM_AVAILABLE_BYTES"), std::to_string(4 * GiB));
    EXPECT_EQ(field(*waiting, "RESERVED_UNUSED_BYTES"), std::to_string(3 * GiB));
    EXPECT_EQ(field(*waiting, "CAN_GIVE_BYTES"), std::to_string(1 * GiB));
    EXPECT_THAT(supervisor_->find("b")->state_reason(),
                HasSubstr("needs 2G; the host can give 1G"));

    bool stopped = false;
    supervisor_->find("a")->stop([&] { stopped = true; });
    run_until([&] { return stopped; });
    run_until_event("b", K::started);
    EXPECT_EQ(kinds_of("b"), (std::vector<K>{K::waiting, K::admitted, K::started, K::ready}));
    EXPECT_NE(field(*last("b", K::admitted), "WAITED_MS"), "");
    EXPECT_EQ(state("b"), WorkerState::running);
}

// The waiting and admitted events feed the metrics (issue 13's "metrics for
// them where metrics exist").
TEST_F(Admission, WaitsAndAdmissionsAreCountedInTheMetrics) {
    PolicyRunner policy(*ctx_, *supervisor_);
    MetricsCollector collector(*ctx_, *supervisor_, policy);
    Config c = config({reserving("a", 3 * GiB), reserving("b", 2 * GiB)});
    supervisor_->apply(c);
    policy.configure(c);
    collector.configure(c);
    collector.start();
    run_until_event("b", K::waiting);
    std::string waiting = *collector.text();
    EXPECT_THAT(waiting, HasSubstr("infervisor_worker_admission_waits_total{worker=\"b\"} 1\n"));
    EXPECT_THAT(waiting,
                HasSubstr("infervisor_worker_admissions_total{worker=\"b\",how=\"fit\"} 0\n"));
    EXPECT_THAT(waiting, Not(HasSubstr("infervisor_worker_admission_waits_total{worker=\"a\"")));

    bool stopped = false;
    supervisor_->find("a")->stop([&] { stopped = true; });
    run_until([&] { return stopped; });
    run_until_event("b", K::started);
    std::string admitted = *collector.text();
    EXPECT_THAT(admitted,
                HasSubstr("infervisor_worker_admissions_total{worker=\"b\",how=\"fit\"} 1\n"));
    EXPECT_THAT(admitted, HasSubstr("infervisor_worker_admissions_total{worker=\"b\",how="
                                    "\"overcommit\"} 0\n"));
    EXPECT_THAT(admitted,
                HasSubstr("infervisor_worker_admission_wait_seconds_count{worker=\"b\"} 1\n"));
    policy.stop();
}

// On fake time: the recheck comes when the test lets kRecheck pass.
class AdmissionOnFakeTime : public Admission {
  protected:
    AdmissionOnFakeTime() : Admission(true) {}
};

TEST_F(AdmissionOnFakeTime, RoomThatAppearsFromElsewhereIsFoundByTheRecheck) {
    set_available(1 * GiB);
    supervisor_->apply(config({reserving("late", 2 * GiB)}));
    run_until_event("late", K::waiting);
    set_available(3 * GiB);  // something else on the host ended
    advance(AdmissionQueue::kRecheck - 1ms);
    EXPECT_EQ(count("late", K::started), 0u);  // not looked for before its time
    advance(1ms);
    run_until_event("late", K::started);
    EXPECT_EQ(count("late", K::admitted), 1u);
}

TEST_F(Admission, HighestPriorityFirstAndEachCountsTheOnesBeforeIt) {
    supervisor_->apply(
        config({reserving("a", 3 * GiB), reserving("b", 3 * GiB, 0), reserving("c", 2 * GiB, 5)}));
    run_until_event("b", K::waiting);
    run_until_event("c", K::waiting);
    supervisor_->find("a")->stop();
    run_until_event("c", K::started);
    // c (priority 5) went first; then only 2G is left for b's 3G.
    EXPECT_EQ(state("b"), WorkerState::waiting);
    EXPECT_THAT(supervisor_->find("b")->state_reason(), HasSubstr("the host can give 2G"));
    EXPECT_EQ(count("b", K::waiting), 1u);  // still the same wait: journaled once
}

TEST_F(Admission, OvercommitStartsAnywayAndSaysSo) {
    set_available(1 * GiB);
    auto spec = reserving("bold", 2 * GiB);
    spec.overcommit = true;
    supervisor_->apply(config({spec}));
    run_until_event("bold", K::started);
    EXPECT_EQ(count("bold", K::waiting), 0u);
    EXPECT_EQ(field(*last("bold", K::admitted), "OVERCOMMIT"), "1");
}

TEST_F(Admission, AWaitingWorkerStopsAtOnceAndAWorkerWithoutReserveNeverWaits) {
    set_available(1 * GiB);
    supervisor_->apply(config({reserving("patient", 2 * GiB), example("free", {})}));
    run_until_event("patient", K::waiting);
    run_until_event("free", K::started);
    bool stopped = false;
    supervisor_->find("patient")->stop([&] { stopped = true; });
    EXPECT_TRUE(stopped);
    EXPECT_EQ(state("patient"), WorkerState::stopped);
    EXPECT_EQ(count("patient", K::started), 0u);
}

}  // namespace
}  // namespace infervisor::testing
