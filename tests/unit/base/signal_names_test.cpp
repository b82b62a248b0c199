#include "base/signal_names.h"

#include <gtest/gtest.h>

#include <csignal>

namespace infervisor {
namespace {

TEST(ParseSignal, AcceptsEveryWayPeopleWriteIt) {
    EXPECT_EQ(parse_signal("SIGTERM"), SIGTERM);
    EXPECT_EQ(parse_signal("TERM"), SIGTERM);
    EXPECT_EQ(parse_signal("term"), SIGTERM);
    EXPECT_EQ(parse_signal("sigusr1"), SIGUSR1);
    EXPECT_EQ(parse_signal("15"), SIGTERM);
    EXPECT_EQ(parse_signal("SIGWINCH"), SIGWINCH);
    EXPECT_EQ(parse_signal("SIGPWR"), SIGPWR);
}

TEST(ParseSignal, AcceptsTheAliasesKillKnows) {
    EXPECT_EQ(parse_signal("SIGIO"), SIGIO);
    EXPECT_EQ(parse_signal("POLL"), SIGIO);
    EXPECT_EQ(parse_signal("IOT"), SIGABRT);
    EXPECT_EQ(parse_signal("CLD"), SIGCHLD);
}

TEST(ParseSignal, RejectsWhatIsNoSignal) {
    for (const char* bad : {"", "SIG", "SIGNOPE", "0", "-1", "999", "TERM ", "15x"})
        EXPECT_FALSE(parse_signal(bad).has_value()) << bad;
}

TEST(SignalName, NamesSignalsAsKillDoes) {
    EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
    EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
    EXPECT_EQ(signal_name(SIGIO), "SIGIO");
    EXPECT_EQ(signal_name(SIGRTMIN + 1), "SIG" + std::to_string(SIGRTMIN + 1));
}

TEST(SignalName, RoundTripsThroughParse) {
    for (int sig = 1; sig < SIGRTMIN; ++sig) {
        if (sig == 32 || sig == 33) continue;  // glibc's internal signals, no names
        EXPECT_EQ(parse_signal(signal_name(sig)), sig) << signal_name(sig);
    }
}

}  // namespace
}  // namespace infervisor
