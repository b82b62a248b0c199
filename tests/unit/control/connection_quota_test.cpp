#include "control/connection_quota.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace infervisor {
namespace {

using Slot = ConnectionQuota::Slot;

std::optional<ConnectionRefusal> refusal(const std::variant<Slot, ConnectionRefusal>& admitted) {
    if (auto* r = std::get_if<ConnectionRefusal>(&admitted)) return *r;
    return std::nullopt;
}

// Admits `n` connections of `uid` into `held`; false if one was refused.
bool admit_n(ConnectionQuota& quota, uid_t uid, int n, std::vector<Slot>& held) {
    for (int i = 0; i < n; ++i) {
        auto admitted = quota.admit(uid);
        if (refusal(admitted)) return false;
        held.push_back(std::move(std::get<Slot>(admitted)));
    }
    return true;
}

TEST(ConnectionQuota, OneUidCannotTakeMoreThanItsShare) {
    ConnectionQuota quota({.max_connections = 10, .max_per_uid = 3, .root_reserve = 0});
    std::vector<Slot> held;
    ASSERT_TRUE(admit_n(quota, 1000, 3, held));
    auto over = refusal(quota.admit(1000));
    ASSERT_TRUE(over);
    EXPECT_EQ(over->scope, "uid");
    EXPECT_EQ(over->limit, 3u);
    EXPECT_TRUE(admit_n(quota, 1001, 3, held));  // other users are not affected
    EXPECT_EQ(quota.held_by(1000), 3u);
    EXPECT_EQ(quota.total(), 6u);
}

TEST(ConnectionQuota, ReleasingASlotLetsTheUidConnectAgain) {
    ConnectionQuota quota({.max_connections = 10, .max_per_uid = 2, .root_reserve = 0});
    std::vector<Slot> held;
    ASSERT_TRUE(admit_n(quota, 1000, 2, held));
    EXPECT_TRUE(refusal(quota.admit(1000)));
    held.pop_back();
    EXPECT_EQ(quota.held_by(1000), 1u);
    EXPECT_TRUE(admit_n(quota, 1000, 1, held));
    held.clear();
    EXPECT_EQ(quota.held_by(1000), 0u);
    EXPECT_EQ(quota.total(), 0u);
}

TEST(ConnectionQuota, RootIsExemptFromThePerUidLimit) {
    ConnectionQuota quota({.max_connections = 10, .max_per_uid = 2, .root_reserve = 0});
    std::vector<Slot> held;
    EXPECT_TRUE(admit_n(quota, 0, 10, held));
    auto full = refusal(quota.admit(0));
    ASSERT_TRUE(full);
    EXPECT_EQ(full->scope, "total");
    EXPECT_EQ(full->limit, 10u);
}

TEST(ConnectionQuota, TheReserveIsKeptForRoot) {
    ConnectionQuota quota({.max_connections = 6, .max_per_uid = 2, .root_reserve = 2});
    std::vector<Slot> held;
    ASSERT_TRUE(admit_n(quota, 1000, 2, held));
    ASSERT_TRUE(admit_n(quota, 1001, 2, held));
    auto reserved = refusal(quota.admit(1002));  // 4 = 6 - 2 unprivileged
    ASSERT_TRUE(reserved);
    EXPECT_EQ(reserved->scope, "total");
    EXPECT_EQ(reserved->limit, 4u);
    EXPECT_TRUE(admit_n(quota, 0, 2, held));
    EXPECT_EQ(refusal(quota.admit(0))->limit, 6u);
    held.clear();
    EXPECT_TRUE(admit_n(quota, 1002, 2, held));
}

TEST(ConnectionQuota, RootConnectionsDoNotUseUpTheUnprivilegedShare) {
    ConnectionQuota quota({.max_connections = 6, .max_per_uid = 3, .root_reserve = 2});
    std::vector<Slot> held;
    ASSERT_TRUE(admit_n(quota, 0, 2, held));
    EXPECT_TRUE(admit_n(quota, 1000, 3, held));
    // 5 open: one place left, and unprivileged clients hold 3 of their 4.
    EXPECT_TRUE(admit_n(quota, 1001, 1, held));
    EXPECT_EQ(refusal(quota.admit(0))->scope, "total");
}

TEST(ConnectionQuota, AReserveLargerThanTheTotalLeavesRootEverything) {
    ConnectionQuota quota({.max_connections = 2, .max_per_uid = 2, .root_reserve = 5});
    EXPECT_EQ(quota.limits().root_reserve, 2u);
    EXPECT_EQ(refusal(quota.admit(1000))->limit, 0u);
    std::vector<Slot> held;
    EXPECT_TRUE(admit_n(quota, 0, 2, held));
}

TEST(ConnectionQuota, AMovedSlotIsCountedOnce) {
    ConnectionQuota quota({.max_connections = 4, .max_per_uid = 4, .root_reserve = 0});
    auto admitted = quota.admit(1000);
    Slot first = std::move(std::get<Slot>(admitted));
    Slot second = std::move(first);
    EXPECT_EQ(quota.held_by(1000), 1u);
    auto other = quota.admit(1001);
    second = std::move(std::get<Slot>(other));  // releases 1000's slot
    EXPECT_EQ(quota.held_by(1000), 0u);
    EXPECT_EQ(quota.held_by(1001), 1u);
    EXPECT_EQ(second.uid(), 1001u);
    EXPECT_EQ(quota.total(), 1u);
}

}  // namespace
}  // namespace infervisor
