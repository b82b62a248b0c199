// The checkpoint sweep (issue 26 #9): every WorkerCheckpoints::kSweepInterval
// on the worker's clock, the kept checkpoints are measured afresh and those
// beyond max_age, beyond keep or no longer within the quota are deleted and
// journaled (checkpoint-retired), whether the worker runs or not. Real
// checkpoint stores on a real file system; fake time for the sweep's timer.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <fstream>

#include "supervise/worker_checkpoints.h"
#include "support/fake_clock.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct Emitted {
    EventKind kind;
    std::string message;
    WorkerCheckpoints::Fields fields;

    std::string field(const std::string& name) const {
        for (const auto& [k, v] : fields)
            if (k == name) return v;
        return {};
    }
};

class CheckpointSweep : public ::testing::Test {
  protected:
    void SetUp() override {
        if (::geteuid() != 0) GTEST_SKIP() << "needs root (the store is root's)";
        paths_.state_dir = dir_.path() / "state";
    }
    fs::path store_dir() const { return paths_.state_dir / "checkpoints/llama"; }
    fs::path numbered(uint64_t sequence) const {
        return store_dir() / CheckpointStore::sequence_name(sequence);
    }
    // A checkpoint as an earlier daemon left it: published `age` ago, with
    // `bytes` of state.
    void left_checkpoint(size_t bytes, std::chrono::seconds age) {
        auto store = CheckpointStore::open(paths_.state_dir / "checkpoints", "llama");
        ASSERT_TRUE(store) << store.error().message();
        ASSERT_TRUE(store->fresh_staging(0, 0));
        std::ofstream(store->staging_path() / "state") << std::string(bytes, 'x');
        ASSERT_TRUE(store->take_staging());
        auto published = store->publish();
        ASSERT_TRUE(published);
        auto fd = store->dup_dir();
        ASSERT_TRUE(fd);
        ASSERT_TRUE(CheckpointStore::write_info(fd->get(), published->sequence, {bytes, {}}));
        fs::path info =
            store_dir() / (CheckpointStore::sequence_name(published->sequence) + ".info");
        timespec times[2] = {{::time(nullptr) - age.count(), 0},
                             {::time(nullptr) - age.count(), 0}};
        ASSERT_EQ(::utimensat(AT_FDCWD, info.c_str(), times, 0), 0);
    }
    std::unique_ptr<WorkerCheckpoints> checkpoints(const CheckpointSpec& spec) {
        auto wc = std::make_unique<WorkerCheckpoints>(
            io_, clock_, paths_, "llama", [this](EventKind kind, std::string message, auto fields) {
                events_.push_back({kind, std::move(message), std::move(fields)});
            });
        wc->set_spec(spec);
        return wc;
    }
    // Runs the loop until `n` events were journaled (the sweep's results come
    // back from its background thread).
    void run_until_events(size_t n) {
        io_.restart();  // a poll() that ran out of work stopped it
        auto guard = boost::asio::make_work_guard(io_);
        while (events_.size() < n) io_.run_one();
    }

    testing::TempDir dir_;
    Paths paths_;
    boost::asio::io_context io_;
    FakeClock clock_;
    std::vector<Emitted> events_;
};

TEST_F(CheckpointSweep, CheckpointsBeyondMaxAgeAreRetiredWithoutANewCheckpoint) {
    left_checkpoint(4096, 3h);
    left_checkpoint(4096, 1min);
    CheckpointSpec spec;
    spec.max_age = 2h;
    auto wc = checkpoints(spec);

    // Nothing before the sweep is due.
    clock_.advance(WorkerCheckpoints::kSweepInterval - 1s);
    io_.poll();
    EXPECT_TRUE(events_.empty());
    EXPECT_TRUE(fs::is_directory(numbered(1)));

    clock_.advance(1s);
    run_until_events(1);
    ASSERT_EQ(events_.size(), 1u);
    const Emitted& retired = events_[0];
    EXPECT_EQ(retired.kind, EventKind::checkpoint_retired);
    EXPECT_EQ(retired.field("CHECKPOINT_SEQUENCE"), "1");
    EXPECT_EQ(retired.field("CHECKPOINT"), numbered(1).string());
    EXPECT_EQ(retired.field("REASON"), "max_age");
    EXPECT_GE(std::stoll(retired.field("CHECKPOINT_AGE_SECONDS")), 3 * 3600);
    EXPECT_NE(retired.message.find("older than checkpoint.max_age (2h)"), std::string::npos)
        << retired.message;
    EXPECT_NE(retired.message.find("last good checkpoint: " + numbered(2).string()),
              std::string::npos)
        << retired.message;
    EXPECT_FALSE(fs::exists(numbered(1)));
    EXPECT_TRUE(fs::is_directory(numbered(2)));  // within max_age: kept
}

// A checkpoint that grew after it was judged (a descriptor its worker held
// across the seal, where leases could not tell) is caught by the next sweep:
// it no longer fits in the quota with the newer one, and goes.
TEST_F(CheckpointSweep, ACheckpointThatGrewBeyondTheQuotaIsRetired) {
    left_checkpoint(64 * 1024, 1min);
    left_checkpoint(64 * 1024, 1min);
    {
        std::ofstream grown(numbered(1) / "state", std::ios::app);
        grown << std::string(2 << 20, 'y');
    }
    CheckpointSpec spec;
    spec.quota = CheckpointQuota{0, 1 << 20};
    spec.keep = 5;
    auto wc = checkpoints(spec);
    clock_.advance(WorkerCheckpoints::kSweepInterval);
    run_until_events(1);
    const Emitted& retired = events_[0];
    EXPECT_EQ(retired.kind, EventKind::checkpoint_retired);
    EXPECT_EQ(retired.field("CHECKPOINT_SEQUENCE"), "1");
    EXPECT_EQ(retired.field("REASON"), "quota");
    EXPECT_EQ(retired.field("QUOTA_BYTES"), std::to_string(1 << 20));
    EXPECT_GE(std::stoull(retired.field("CHECKPOINT_BYTES")), 2u << 20);
    EXPECT_FALSE(fs::exists(numbered(1)));
    EXPECT_TRUE(fs::is_directory(numbered(2)));
}

}  // namespace
}  // namespace infervisor
