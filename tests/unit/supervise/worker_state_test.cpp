// The lifecycle's table (worker_state.h) against itself and against the man
// page a reader checks it with (infervisord(8), STATES).
#include "supervise/worker_state.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "support/temp_dir.h"

namespace infervisor {
namespace {

std::vector<WorkerState> all_states() {
    std::vector<WorkerState> out;
    for (int i = 0; i <= static_cast<int>(kLastWorkerState); ++i)
        out.push_back(static_cast<WorkerState>(i));
    return out;
}

std::vector<WorkerMove> all_moves() {
    std::vector<WorkerMove> out;
    for (int i = 0; i <= static_cast<int>(kLastWorkerMove); ++i)
        out.push_back(static_cast<WorkerMove>(i));
    return out;
}

TEST(WorkerLifecycle, EveryStateIsEnteredAndLeftAndEveryMoveIsUsed) {
    for (WorkerState s : all_states()) {
        bool entered = false, left = false;
        for (WorkerMove m : all_moves())
            for (WorkerState other : all_states()) {
                entered = entered || move_allowed(m, other, s);
                left = left || move_allowed(m, s, other);
            }
        EXPECT_TRUE(entered) << state_name(s);
        EXPECT_TRUE(left) << state_name(s);
    }
    for (WorkerMove m : all_moves()) {
        bool used = false;
        for (WorkerState from : all_states())
            for (WorkerState to : all_states()) used = used || move_allowed(m, from, to);
        EXPECT_TRUE(used) << move_name(m);
        EXPECT_NE(move_name(m), "unknown");
    }
}

TEST(WorkerLifecycle, TheMovesSayWhatTheyMean) {
    using S = WorkerState;
    using M = WorkerMove;
    EXPECT_TRUE(move_allowed(M::ready, S::starting, S::running));
    EXPECT_FALSE(move_allowed(M::ready, S::suspended, S::running));  // that is a thaw
    EXPECT_TRUE(move_allowed(M::thaw, S::suspended, S::starting));
    EXPECT_FALSE(move_allowed(M::suspend, S::stopping, S::suspended));
    // A run never ends in waiting: only a launch that does not fit waits.
    for (WorkerState from : all_states()) EXPECT_FALSE(move_allowed(M::end_run, from, S::waiting));
    EXPECT_FALSE(move_allowed(M::wait_for_room, S::running, S::waiting));
    // Adoption starts from a new daemon's fresh worker only.
    EXPECT_TRUE(move_allowed(M::adopt, S::stopped, S::suspended));
    EXPECT_FALSE(move_allowed(M::adopt, S::running, S::suspended));
    EXPECT_TRUE(move_allowed(M::stop, S::backoff, S::stopped));
    EXPECT_FALSE(move_allowed(M::stop, S::failed, S::stopping));
}

TEST(WorkerLifecycle, TheManPageListsEveryStateAndEveryMove) {
    const char* root = std::getenv("INFERVISOR_SOURCE_ROOT");
    ASSERT_NE(root, nullptr);
    std::string page = testing::slurp(std::filesystem::path(root) / "man/infervisord.8.in");
    size_t begin = page.find("\n.SH STATES\n");
    ASSERT_NE(begin, std::string::npos) << "infervisord(8) has no STATES section";
    size_t end = page.find("\n.SH ", begin + 1);
    std::string states = page.substr(begin, end - begin);
    for (WorkerState s : all_states())
        EXPECT_NE(states.find("\n.B " + std::string(state_name(s)) + "\n"), std::string::npos)
            << state_name(s) << " is not described in infervisord(8), STATES";
    for (std::string_view shown : kShownOnlyStateNames)
        EXPECT_NE(states.find(".B " + std::string(shown) + "\n"), std::string::npos) << shown;
    for (WorkerMove m : all_moves()) {
        std::string name(move_name(m));
        std::string roff;  // "end-run" is written end\-run
        for (char c : name) roff += c == '-' ? std::string("\\-") : std::string(1, c);
        EXPECT_NE(states.find(".B " + roff + "\n"), std::string::npos)
            << name << " is not listed in infervisord(8), STATES";
    }
}

}  // namespace
}  // namespace infervisor
