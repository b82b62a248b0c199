// SignalDisposition: the masks of /proc/PID/status, parsed; and this
// process's own, changed with sigaction and sigprocmask.
#include "process/signal_disposition.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

namespace infervisor {
namespace {

// SIGUSR1 is 10: bit 9 (0x200); SIGUSR2 is 12: bit 11 (0x800).
constexpr const char* kStatus =
    "Name:\tserver\nState:\tS (sleeping)\nSigQ:\t0/63432\nSigPnd:\t0000000000000000\n"
    "ShdPnd:\t0000000000000000\nSigBlk:\t0000000000000800\nSigIgn:\t0000000000001000\n"
    "SigCgt:\t0000000000000200\nCapInh:\t0000000000000000\n";

TEST(SignalDisposition, ReadsTheMasksOfProcStatus) {
    auto usr1 = parse_signal_disposition(kStatus, SIGUSR1);
    ASSERT_TRUE(usr1.ok()) << usr1.error().message();
    EXPECT_TRUE(usr1->caught);
    EXPECT_FALSE(usr1->would_end_it);
    auto usr2 = parse_signal_disposition(kStatus, SIGUSR2);  // blocked: a signalfd reader
    EXPECT_TRUE(usr2->blocked);
    EXPECT_FALSE(usr2->would_end_it);
    auto pipe = parse_signal_disposition(kStatus, SIGPIPE);  // 13: ignored
    EXPECT_TRUE(pipe->ignored);
    EXPECT_FALSE(pipe->would_end_it);
    auto hup = parse_signal_disposition(kStatus, SIGHUP);  // default: ends it
    EXPECT_TRUE(hup->would_end_it);
    auto winch = parse_signal_disposition(kStatus, SIGWINCH);  // default: ignored
    EXPECT_FALSE(winch->would_end_it);
}

TEST(SignalDisposition, AMissingOrMalformedMaskIsAnError) {
    EXPECT_FALSE(parse_signal_disposition("Name:\tx\nSigBlk:\t0\nSigIgn:\t0\n", SIGUSR1).ok());
    EXPECT_FALSE(
        parse_signal_disposition("Name:\tx\nSigBlk:\t0\nSigIgn:\tzz\nSigCgt:\t0\n", SIGUSR1).ok());
    EXPECT_FALSE(parse_signal_disposition(kStatus, 0).ok());
    EXPECT_FALSE(parse_signal_disposition(kStatus, 65).ok());
}

void on_signal(int) {}

TEST(SignalDisposition, FollowsWhatAProcessDoesWithTheSignal) {
    struct sigaction saved {};
    ::sigaction(SIGUSR1, nullptr, &saved);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(SIGUSR1, &dfl, nullptr);
    EXPECT_TRUE(read_signal_disposition("/proc", ::getpid(), SIGUSR1)->would_end_it);
    struct sigaction handler {};
    handler.sa_handler = on_signal;
    ::sigaction(SIGUSR1, &handler, nullptr);
    EXPECT_TRUE(read_signal_disposition("/proc", ::getpid(), SIGUSR1)->caught);
    ::sigaction(SIGUSR1, &saved, nullptr);
    EXPECT_FALSE(read_signal_disposition("/proc", 0, SIGUSR1).ok());
}

}  // namespace
}  // namespace infervisor
