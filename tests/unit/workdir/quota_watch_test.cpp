#include "workdir/quota_watch.h"

#include <gtest/gtest.h>

#include "workdir/deletion_log_limit.h"

namespace infervisor {
namespace {

TEST(QuotaWatch, WarnsOncePerCrossingWithHysteresis) {
    QuotaWatch q;
    EXPECT_FALSE(q.update(900, 1000));
    EXPECT_FALSE(q.update(1000, 1000));  // at the quota is not above it
    EXPECT_TRUE(q.update(1001, 1000));
    EXPECT_FALSE(q.update(1500, 1000));  // still the same crossing
    EXPECT_FALSE(q.update(950, 1000));   // below the quota, not below 90%
    EXPECT_FALSE(q.update(1100, 1000));
    EXPECT_FALSE(q.update(899, 1000));  // re-armed
    EXPECT_TRUE(q.update(1200, 1000));
}

TEST(QuotaWatch, NeverWarnsWithoutAQuotaAndReArmsWhenItChanges) {
    QuotaWatch q;
    EXPECT_FALSE(q.update(1ULL << 40, std::nullopt));
    EXPECT_TRUE(q.update(2000, 1000));
    EXPECT_TRUE(q.update(2000, 1500));
    EXPECT_FALSE(q.update(2000, 1500));
}

TEST(DeletionLogLimit, AdmitsABurstPerWindowAndCountsTheRest) {
    DeletionLogLimit limit(2, std::chrono::minutes(1));
    TimePoint t0{};
    EXPECT_TRUE(limit.admit("a", t0).log);
    EXPECT_TRUE(limit.admit("a", t0).log);
    EXPECT_FALSE(limit.admit("a", t0).log);
    EXPECT_FALSE(limit.admit("a", t0 + std::chrono::seconds(59)).log);
    EXPECT_TRUE(limit.admit("b", t0).log);  // per worker
    auto next = limit.admit("a", t0 + std::chrono::seconds(60));
    EXPECT_TRUE(next.log);
    EXPECT_EQ(next.suppressed_before, 2u);
    EXPECT_TRUE(limit.admit("a", t0 + std::chrono::seconds(61)).log);
    EXPECT_FALSE(limit.admit("a", t0 + std::chrono::seconds(62)).log);
    EXPECT_FALSE(limit.admit("a", t0 + std::chrono::seconds(63)).log);
    EXPECT_EQ(limit.take_suppressed("a"), 2u);
    EXPECT_EQ(limit.take_suppressed("a"), 0u);
}

}  // namespace
}  // namespace infervisor
