// A Supervisor on the real kernel of this machine: workers are real processes
// in real cgroup2 directories (created below the test's own cgroup), with the
// example worker as the program. Only the limit files are recorded instead of
// written, because our development hosts' cgroup2 has no memory controller;
// the VM suite checks the limits themselves.
//
// Time: real (SteadyClock) by default. A fixture built with fake time runs
// every Worker, AdmissionQueue and PolicyRunner timer on fake_clock_, which
// moves only when the test advances it: the processes still run in real
// time, but start timeouts, backoffs, watchdogs, stop timeouts and rechecks
// happen when the test lets their time pass (advance()). Only when
// run_until() finds the loop idle does fake time move by itself, to the next
// timer if that is due within kIdlePoll: the short polls of a run's end (an
// emptying cgroup) go on, while the timeouts a test is about (seconds) wait
// for the test.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "config/worker_spec.h"
#include "journal/event_bus.h"
#include "supervise/supervisor.h"
#include "support/fake_clock.h"
#include "support/temp_dir.h"

namespace infervisor::testing {

class SupervisorFixture : public ::testing::Test {
  protected:
    explicit SupervisorFixture(bool fake_time = false) : fake_time_(fake_time) {}
    void SetUp() override;
    void TearDown() override;

    // A worker running the example worker with `args`, restarting fast.
    WorkerSpec example(const std::string& name, std::vector<std::string> args) const;
    Config config(std::vector<WorkerSpec> workers) const;

    // Runs the event loop until `done` holds. The bound is a hang guard for a
    // broken test, not a performance assertion.
    void run_until(const std::function<bool()>& done);
    static int hang_guard_seconds();  // $INFERVISOR_TEST_HANG_GUARD, default 180
    void run_until_event(const std::string& worker, EventKind kind, size_t count = 1);

    size_t count(const std::string& worker, EventKind kind) const;
    std::vector<EventKind> kinds_of(const std::string& worker) const;
    const Event* last(const std::string& worker, EventKind kind) const;
    std::string field(const Event& e, const std::string& key) const;

    // Moves fake time forward by `d`, firing the timers due meanwhile
    // (fake-time fixtures only).
    void advance(Duration d);
    static constexpr Duration kIdlePoll{200};

    const bool fake_time_;
    boost::asio::io_context io_;
    SteadyClock steady_clock_{io_};
    FakeClock fake_clock_;
    const Clock& clock_ = fake_time_ ? static_cast<const Clock&>(fake_clock_) : steady_clock_;
    EventBus bus_;
    std::vector<Event> events_;
    std::map<std::string, CgroupLimits> limits_written_;
    std::unique_ptr<TempDir> dir_;
    std::unique_ptr<CgroupTree> tree_;
    std::unique_ptr<WorkDirManager> workdirs_;
    std::unique_ptr<WorkerContext> ctx_;
    std::unique_ptr<Supervisor> supervisor_;
    std::filesystem::path cgroup_root_;
    size_t unlisted_moves_at_start_ = 0;  // worker_state.h: TearDown() expects no more
};

}  // namespace infervisor::testing
