#include "control/event_ring.h"

#include <gtest/gtest.h>

namespace infervisor {
namespace {

ControlEvent event(uint64_t t, std::string worker) {
    return {t, std::move(worker), "started", "started", {}};
}

std::vector<uint64_t> times(const std::vector<ControlEvent>& events) {
    std::vector<uint64_t> out;
    for (const auto& e : events) out.push_back(e.time_usec);
    return out;
}

TEST(EventRing, KeepsTheNewestUpToItsCapacity) {
    EventRing ring(3);
    for (uint64_t t = 1; t <= 5; ++t) ring.record(event(t, "a"));
    EXPECT_EQ(times(ring.select({})), (std::vector<uint64_t>{3, 4, 5}));
    EXPECT_EQ(times(ring.select({.limit = 2})), (std::vector<uint64_t>{4, 5}));
    EXPECT_TRUE(ring.select({.limit = 0}).empty());
}

TEST(EventRing, TheLimitCountsOnlyMatchingEvents) {
    EventRing ring;
    ring.record(event(1, "a"));
    ring.record(event(2, "b"));
    ring.record(event(3, "a"));
    ring.record(event(4, ""));
    ring.record(event(5, "b"));
    EXPECT_EQ(times(ring.select({.limit = 2, .workers = {"a"}})), (std::vector<uint64_t>{1, 3}));
    EXPECT_EQ(times(ring.select({.workers = {"a", "b"}, .since_usec = 2})),
              (std::vector<uint64_t>{2, 3, 5}));
    EXPECT_EQ(times(ring.select({.since_usec = 4})), (std::vector<uint64_t>{4, 5}));
}

}  // namespace
}  // namespace infervisor
