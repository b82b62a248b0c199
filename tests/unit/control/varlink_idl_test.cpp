// The interface description against the code: the `state` and event `kind`
// enums list exactly the names the daemon sends.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>

#include "control/status_json.h"
#include "control/varlink_interfaces.h"
#include "journal/event.h"
#include "supervise/worker_state.h"

namespace infervisor {
namespace {

// The values of the enum declared as "FIELD: (a, b, c)" in the IDL.
std::set<std::string> enum_values(std::string_view field) {
    std::string_view idl = supervisor_interface_description();
    std::string opening = std::string(field) + ": (";
    auto start = idl.find(opening);
    if (start == std::string_view::npos) return {};
    start += opening.size();
    auto end = idl.find(')', start);
    std::set<std::string> values;
    std::string current;
    for (char c : idl.substr(start, end - start)) {
        if (c == ',') {
            values.insert(current);
            current.clear();
        } else if (c != ' ' && c != '\n') {
            current += c;
        }
    }
    values.insert(current);
    return values;
}

TEST(VarlinkIdl, TheInterfaceNameIsLowercaseAsVarlinkParsersRequire) {
    std::string_view idl = supervisor_interface_description();
    EXPECT_NE(idl.find("interface " + std::string(kSupervisorInterface) + "\n"),
              std::string_view::npos);
    for (char c : kSupervisorInterface) EXPECT_FALSE(c >= 'A' && c <= 'Z') << kSupervisorInterface;
}

TEST(VarlinkIdl, EveryEventKindIsInTheKindEnum) {
    auto values = enum_values("kind");
    std::set<std::string> kinds;
    // every kind, up to kLastEventKind.
    for (int k = 0; k <= static_cast<int>(kLastEventKind); ++k)
        kinds.insert(kind_to_varlink(std::string(event_name(static_cast<EventKind>(k)))));
    for (const auto& kind : kinds)
        EXPECT_TRUE(values.count(kind))
            << "event kind '" << kind << "' is missing from the `kind` enum of "
            << "daemon/lib/control/io.infervisor.supervisor.varlink: add it there";
    for (const auto& value : values)
        EXPECT_TRUE(kinds.count(value))
            << "the `kind` enum lists '" << value << "', which is no event kind (journal/event.h)";
}

TEST(VarlinkIdl, EveryWorkerStateIsInTheStateEnum) {
    auto values = enum_values("state");
    std::set<std::string> states;
    for (int s = 0; s <= static_cast<int>(kLastWorkerState); ++s)
        states.insert(std::string(state_name(static_cast<WorkerState>(s))));
    for (std::string_view shown : kShownOnlyStateNames) states.insert(std::string(shown));
    EXPECT_EQ(values, states) << "the `state` enum of io.infervisor.supervisor.varlink and "
                                 "supervise/worker_state.h differ";
}

TEST(VarlinkIdl, KindsTravelAsEnumValuesAndComeBackAsJournalNames) {
    ControlEvent event{1, "llama", "oom-killed", "killed", {}};
    auto wire = to_json(event);
    EXPECT_EQ(wire["kind"], "oom_killed");
    EXPECT_EQ(event_from_json(wire).kind, "oom-killed");
}

}  // namespace
}  // namespace infervisor
