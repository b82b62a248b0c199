#include "journal/event.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "journal/event_bus.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

// Every kind: up to kLastEventKind.
std::vector<EventKind> all_kinds() {
    std::vector<EventKind> out;
    for (int k = 0; k <= static_cast<int>(kLastEventKind); ++k)
        out.push_back(static_cast<EventKind>(k));
    return out;
}

TEST(Event, EveryKindHasAUniqueNameAndMessageIdInTheCatalog) {
    const char* src = std::getenv("INFERVISOR_SOURCE_ROOT");
    ASSERT_NE(src, nullptr);
    std::string catalog = testing::slurp(std::string(src) + "/etc/catalog/infervisor.catalog");
    std::set<std::string_view> names, ids;
    for (EventKind k : all_kinds()) {
        EXPECT_TRUE(names.insert(event_name(k)).second) << event_name(k);
        EXPECT_TRUE(ids.insert(event_message_id(k)).second) << event_name(k);
        EXPECT_EQ(event_message_id(k).size(), 32u);
        EXPECT_NE(catalog.find("-- " + std::string(event_message_id(k))), std::string::npos)
            << "no catalog entry for " << event_name(k);
    }
}

TEST(EventBus, DeliversToEverySinkAndStampsTime) {
    EventBus bus;
    std::vector<std::string> got;
    auto a = bus.subscribe([&](const Event& e) { got.push_back("a:" + e.worker); });
    bus.subscribe([&](const Event& e) {
        got.push_back("b:" + e.worker);
        EXPECT_GT(e.realtime_usec, 0u);
    });
    bus.emit(Event{EventKind::started, "x", "m"});
    bus.unsubscribe(a);
    bus.emit(Event{EventKind::stopped, "y", "m"});
    EXPECT_EQ(got, (std::vector<std::string>{"a:x", "b:x", "b:y"}));
}

TEST(EventBus, ASinkMayUnsubscribeItselfWhileCalled) {
    EventBus bus;
    int calls = 0;
    EventBus::SinkId id = 0;
    id = bus.subscribe([&](const Event&) {
        ++calls;
        bus.unsubscribe(id);
    });
    bus.emit(Event{EventKind::started, "x", "m"});
    bus.emit(Event{EventKind::started, "x", "m"});
    EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace infervisor
