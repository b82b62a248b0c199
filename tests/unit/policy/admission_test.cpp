// Admission on numbers: what the host can give is MemAvailable less what
// running workers reserved and do not use yet.
#include "policy/admission.h"

#include <gtest/gtest.h>

#include "support/byte_units.h"
#include "support/measurement.h"

namespace infervisor {
namespace {

TEST(Admission, FitsWhenTheReserveIsWithinMemAvailable) {
    auto v = check_admission(1 * GiB, 3 * GiB, {});
    EXPECT_TRUE(v.fits);
    EXPECT_EQ(v.can_give, 3 * GiB);
    EXPECT_FALSE(check_admission(4 * GiB, 3 * GiB, {}).fits);
    EXPECT_TRUE(check_admission(3 * GiB, 3 * GiB, {}).fits);  // exactly
}

TEST(Admission, TheUnusedPartOfRunningWorkersReservesIsNotOnOffer) {
    // 'llama' reserved 2G and uses 512M so far (its model still loading):
    // 1.5G of MemAvailable is promised to it.
    std::vector<ReservedWorker> running = {{"llama", 2 * GiB, 512 * MiB},
                                           {"whisper", 256 * MiB, 300 * MiB}};  // over: 0
    auto v = check_admission(1 * GiB, 2 * GiB, running);
    EXPECT_EQ(v.reserved_unused, 1536 * MiB);
    EXPECT_EQ(v.can_give, 512 * MiB);
    EXPECT_FALSE(v.fits);
    EXPECT_EQ(v.reason,
              "needs 1G; the host can give 512M (MemAvailable 2G less 1.5G reserved by "
              "running workers)");
    EXPECT_EQ(measurement(v, "NEEDS_BYTES"), std::to_string(1 * GiB));
    EXPECT_EQ(measurement(v, "HOST_MEM_AVAILABLE_BYTES"), std::to_string(2 * GiB));
    EXPECT_EQ(measurement(v, "RESERVED_UNUSED_BYTES"), std::to_string(1536 * MiB));
    EXPECT_EQ(measurement(v, "CAN_GIVE_BYTES"), std::to_string(512 * MiB));
    EXPECT_EQ(measurement(v, "RUNNING_RESERVED_WORKERS"), "2");
}

TEST(Admission, MoreReservedThanAvailableGivesNothingRatherThanWrappingAround) {
    auto v = check_admission(1, 1 * GiB, {{"big", 4 * GiB, std::nullopt}});
    EXPECT_EQ(v.reserved_unused, 4 * GiB);  // unknown usage: all of it unused
    EXPECT_EQ(v.can_give, 0u);
    EXPECT_FALSE(v.fits);
}

TEST(Admission, UnknownMemAvailableAdmits) {
    auto v = check_admission(64 * GiB, std::nullopt, {});
    EXPECT_TRUE(v.fits);
    EXPECT_FALSE(v.can_give);
    EXPECT_EQ(measurement(v, "HOST_MEM_AVAILABLE_BYTES"), "<absent>");
}

}  // namespace
}  // namespace infervisor
