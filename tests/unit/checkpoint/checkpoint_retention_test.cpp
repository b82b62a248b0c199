// The retention rule (keep, max_age, quota) of checkpoint_retention.h: which
// checkpoints stay once a new one is measured (issue 26 #9).
#include "checkpoint/checkpoint_retention.h"

#include <gtest/gtest.h>

namespace infervisor {
namespace {

using namespace std::chrono_literals;

MeasuredCheckpoint cp(uint64_t sequence, uint64_t bytes,
                      std::optional<Duration> age = std::nullopt) {
    return {sequence, bytes, age};
}

TEST(CheckpointRetention, QuotaOfAShareOrOfBytes) {
    EXPECT_EQ(quota_bytes({25, 0}, 1000), 250u);
    EXPECT_EQ(quota_bytes({100, 0}, 1001), 1001u);
    EXPECT_EQ(quota_bytes({0, 4096}, 1000), 4096u);  // a size ignores the file system
    // No overflow for the largest file system.
    EXPECT_EQ(quota_bytes({100, 0}, UINT64_MAX), UINT64_MAX);
    EXPECT_EQ(quota_bytes({50, 0}, UINT64_MAX), UINT64_MAX / 2);
}

TEST(CheckpointRetention, ANewOneOverTheQuotaIsRefusedAndEveryOlderOneKept) {
    auto plan = plan_retention({cp(1, 30), cp(2, 30)}, cp(3, 101), {100, 2, 0s});
    EXPECT_TRUE(plan.refused);
    EXPECT_TRUE(plan.retire.empty());
    EXPECT_EQ(plan.kept_bytes, 60u);
    EXPECT_NE(plan.why.find("checkpoint 3"), std::string::npos) << plan.why;
    EXPECT_NE(plan.why.find("quota"), std::string::npos) << plan.why;
    // Exactly the quota fits.
    EXPECT_FALSE(plan_retention({}, cp(1, 100), {100, 2, 0s}).refused);
}

TEST(CheckpointRetention, KeepCountsTheNewOne) {
    auto plan = plan_retention({cp(1, 1), cp(2, 1), cp(3, 1)}, cp(4, 1), {100, 2, 0s});
    EXPECT_FALSE(plan.refused);
    EXPECT_EQ(plan.retire, (std::vector<uint64_t>{1, 2}));
    EXPECT_EQ(plan.kept_bytes, 2u);
}

TEST(CheckpointRetention, OlderOnesMakeRoomButNeverTheNewest) {
    // 4 + 3 + 2 > 8: checkpoint 1 and 2 go (2 does not fit beside 3 and 4,
    // and nothing older than a checkpoint that went is kept).
    auto plan = plan_retention({cp(1, 1), cp(2, 2), cp(3, 3)}, cp(4, 4), {8, 10, 0s});
    EXPECT_FALSE(plan.refused);
    EXPECT_EQ(plan.retire, (std::vector<uint64_t>{1, 2}));
    EXPECT_EQ(plan.kept_bytes, 7u);
    // A new one that fits only alone: all older go, the new one stays.
    auto alone = plan_retention({cp(1, 5), cp(2, 5)}, cp(3, 8), {8, 10, 0s});
    EXPECT_FALSE(alone.refused);
    EXPECT_EQ(alone.retire, (std::vector<uint64_t>{1, 2}));
    EXPECT_EQ(alone.kept_bytes, 8u);
}

TEST(CheckpointRetention, MaxAgeRetiresOldOnesAndUnknownAgesStay) {
    auto plan =
        plan_retention({cp(1, 1, 3h), cp(2, 1, 2h), cp(3, 1, 30min)}, cp(4, 1), {100, 10, 1h});
    EXPECT_EQ(plan.retire, (std::vector<uint64_t>{1, 2}));
    // No max_age: only keep and the quota count.
    EXPECT_TRUE(plan_retention({cp(1, 1, 300h)}, cp(2, 1), {100, 10, 0s}).retire.empty());
    // An age that is not known never retires.
    EXPECT_TRUE(plan_retention({cp(1, 1)}, cp(2, 1), {100, 10, 1h}).retire.empty());
}

TEST(CheckpointRetention, SizesThatWouldOverflowDoNotFit) {
    auto plan = plan_retention({cp(1, UINT64_MAX)}, cp(2, 1), {UINT64_MAX, 10, 0s});
    EXPECT_FALSE(plan.refused);
    EXPECT_EQ(plan.retire, (std::vector<uint64_t>{1}));
}

// The sweep between checkpoints (plan_sweep): the same limits on fresh
// measurements, the newest included.
std::vector<std::pair<uint64_t, std::string>> swept(const std::vector<MeasuredCheckpoint>& all,
                                                    const RetentionLimits& limits) {
    std::vector<std::pair<uint64_t, std::string>> out;
    for (const auto& r : plan_sweep(all, limits)) out.emplace_back(r.sequence, r.reason);
    return out;
}
using Swept = std::vector<std::pair<uint64_t, std::string>>;

TEST(CheckpointSweep, NothingGoesWhileAllAreWithinTheLimits) {
    EXPECT_EQ(swept({cp(1, 10, 1h), cp(2, 10, 1min)}, {100, 2, 2h}), Swept{});
    EXPECT_EQ(swept({}, {100, 2, 2h}), Swept{});
    EXPECT_EQ(swept({cp(1, 10)}, {100, 1, 0s}), Swept{});  // no age limit, age unknown
}

TEST(CheckpointSweep, CheckpointsBeyondMaxAgeGoTheNewestToo) {
    EXPECT_EQ(swept({cp(1, 10, 3h), cp(2, 10, 1h)}, {100, 5, 2h}), (Swept{{1, "max_age"}}));
    EXPECT_EQ(swept({cp(1, 10, 5h), cp(2, 10, 3h)}, {100, 5, 2h}),
              (Swept{{1, "max_age"}, {2, "max_age"}}));
    // An unknown age is never too old.
    EXPECT_EQ(swept({cp(1, 10), cp(2, 10, 1min)}, {100, 5, 2h}), Swept{});
}

TEST(CheckpointSweep, OnesThatGrewBeyondTheQuotaGoOldestFirst) {
    // The older one grew: the newest stays, the older no longer fits.
    EXPECT_EQ(swept({cp(1, 95), cp(2, 10)}, {100, 5, 0s}), (Swept{{1, "quota"}}));
    // The newest alone is over the quota now: it goes, and so does every
    // older one (they are behind it).
    EXPECT_EQ(swept({cp(1, 10), cp(2, 101)}, {100, 5, 0s}), (Swept{{1, "quota"}, {2, "quota"}}));
    // One that could not be measured never fits.
    EXPECT_EQ(swept({cp(1, 10), cp(2, UINT64_MAX)}, {100, 5, 0s}),
              (Swept{{1, "quota"}, {2, "quota"}}));
    EXPECT_EQ(swept({cp(1, UINT64_MAX), cp(2, 10)}, {100, 5, 0s}), (Swept{{1, "quota"}}));
}

TEST(CheckpointSweep, KeepStillHoldsAndEachSaysWhyItWent) {
    EXPECT_EQ(swept({cp(1, 1, 1min), cp(2, 1, 1min), cp(3, 1, 1min)}, {100, 2, 0s}),
              (Swept{{1, "keep"}}));
    // Beyond keep, and the oldest beyond max_age as well: it says max_age.
    EXPECT_EQ(swept({cp(1, 1, 3h), cp(2, 1, 1min), cp(3, 1, 1min), cp(4, 1, 1min)}, {100, 2, 2h}),
              (Swept{{1, "max_age"}, {2, "keep"}}));
}

}  // namespace
}  // namespace infervisor
