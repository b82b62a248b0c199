// A lock someone else holds on a worker's directory delays its start and is
// retried; it never counts as the worker's failure (issue 10, defect 4: an
// unprivileged user holding LOCK_EX on an extra dir parked the worker).
#include <gmock/gmock.h>

#include "supervisor_fixture.h"
#include "support/flock_holder.h"

namespace infervisor::testing {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using K = EventKind;

class LockWait : public SupervisorFixture {
  protected:
    LockWait() : SupervisorFixture(true) {}  // the retries' delays on fake time

    // A worker with one extra dir, locked by another process before it starts.
    WorkerSpec with_extra_dir(const std::string& name) {
        auto spec = example(name, {});
        spec.restart.start_limit_burst = 1;  // one counted failure would park it
        extra_ = dir_->mkdir("extra-" + name);
        spec.workdir.extra_dirs.push_back({extra_, 0700, true});
        return spec;
    }
    std::filesystem::path extra_;
};

TEST_F(LockWait, AForeignLockDelaysTheStartWhichRunsOnceItIsGone) {
    auto spec = with_extra_dir("patient");
    FlockHolder holder(extra_);
    supervisor_->apply(config({spec}));
    run_until_event("patient", K::start_delayed);
    advance(std::chrono::milliseconds(999));
    EXPECT_EQ(count("patient", K::start_delayed), 1u);  // not retried before its delay
    advance(std::chrono::milliseconds(1));
    EXPECT_EQ(count("patient", K::start_delayed), 2u);  // retried, still waiting

    Worker* w = supervisor_->find("patient");
    EXPECT_EQ(w->state(), WorkerState::backoff);
    const Event* delayed = last("patient", K::start_delayed);
    EXPECT_THAT(delayed->message, HasSubstr(extra_.string()));
    EXPECT_THAT(delayed->message, HasSubstr("pid " + std::to_string(holder.pid())));
    EXPECT_THAT(delayed->message, HasSubstr("not counted as a failed start"));
    EXPECT_EQ(field(*delayed, "ATTEMPT"), "2");
    EXPECT_EQ(field(*delayed, "DELAY_MS"), "2000");  // doubled from 1s

    holder.release();
    advance(std::chrono::seconds(2));
    run_until_event("patient", K::ready);
    EXPECT_EQ(w->state(), WorkerState::running);
    EXPECT_THAT(kinds_of("patient"), Not(Contains(K::start_failed)));
    EXPECT_THAT(kinds_of("patient"), Not(Contains(K::failed)));
}

TEST_F(LockWait, AStopWhileWaitingStopsIt) {
    auto spec = with_extra_dir("waiting");
    FlockHolder holder(extra_);
    supervisor_->apply(config({spec}));
    run_until_event("waiting", K::start_delayed);
    Worker* w = supervisor_->find("waiting");
    w->stop();
    EXPECT_EQ(w->state(), WorkerState::stopped);
    holder.release();
    EXPECT_THAT(kinds_of("waiting"), Not(Contains(K::started)));
}

}  // namespace
}  // namespace infervisor::testing
