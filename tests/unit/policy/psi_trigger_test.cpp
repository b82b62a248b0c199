#include "cgroup/psi_trigger.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "busy_cgroup.h"

namespace infervisor {
namespace {

using namespace std::chrono_literals;
using testing::BusyCgroup;

PsiTriggerSpec spec(PsiLine line, Duration stall, Duration window) { return {line, stall, window}; }

TEST(PsiTriggerWindow, FormatsMicroseconds) {
    EXPECT_EQ(format_psi_trigger(spec(PsiLine::some, 150ms, 1s)), "some 150000 1000000");
    EXPECT_EQ(format_psi_trigger(spec(PsiLine::full, 2s, 10s)), "full 2000000 10000000");
}

TEST(PsiTriggerWindow, TriesTheRequestThenTheNearestTwoSecondMultiple) {
    auto c = psi_trigger_candidates(spec(PsiLine::some, 150ms, 1s));
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0], spec(PsiLine::some, 150ms, 1s));
    EXPECT_EQ(c[1], spec(PsiLine::some, 300ms, 2s)) << "the stall keeps its share of the window";
}

TEST(PsiTriggerWindow, ShortWindowsTry500msFirstForKernel61) {
    auto c = psi_trigger_candidates(spec(PsiLine::full, 50ms, 100ms));
    ASSERT_EQ(c.size(), 3u);
    EXPECT_EQ(c[0], spec(PsiLine::full, 50ms, 100ms));
    EXPECT_EQ(c[1], spec(PsiLine::full, 250ms, 500ms));
    EXPECT_EQ(c[2], spec(PsiLine::full, 1s, 2s));
}

TEST(PsiTriggerWindow, AcceptableRequestsAreNotDuplicated) {
    EXPECT_EQ(psi_trigger_candidates(spec(PsiLine::some, 500ms, 4s)).size(), 1u);
    auto c = psi_trigger_candidates(spec(PsiLine::some, 1s, 5s));
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[1].window, 6s) << "5 s rounds to the nearer multiple (ties go up)";
    EXPECT_EQ(c[1].stall, 1200ms);
    EXPECT_EQ(psi_trigger_candidates(spec(PsiLine::some, 1s, 3900ms))[1].window, 4s);
}

TEST(PsiTriggerWindow, ClampsToWhatAnyKernelAccepts) {
    auto c = psi_trigger_candidates(spec(PsiLine::some, 20s, 30s));
    EXPECT_EQ(c[0], spec(PsiLine::some, 10s, 10s))
        << "window at most 10 s, stall at most the window";
    EXPECT_EQ(c.size(), 1u);
    auto tiny = psi_trigger_candidates(spec(PsiLine::some, 0ms, 1s));
    EXPECT_EQ(tiny[0].stall, 1ms);
    for (const auto& candidate : tiny) EXPECT_GE(candidate.stall, 1ms);
}

TEST(PsiTrigger, FailsClearlyWithoutAPressureFile) {
    auto r = open_psi_trigger("/nonexistent/memory.pressure", spec(PsiLine::some, 150ms, 1s));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ENOENT);
    EXPECT_NE(r.error().message().find("/nonexistent/memory.pressure"), std::string::npos);
}

// The kernel accepts one of the candidates and the fd is pollable.
void expect_trigger_installs(const std::filesystem::path& file, PsiLine line) {
    if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " does not exist";
    auto requested = spec(line, 150ms, 1s);
    auto r = open_psi_trigger(file, requested);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_TRUE(r->fd.valid());
    EXPECT_EQ(r->requested, requested);
    auto candidates = psi_trigger_candidates(requested);
    EXPECT_NE(std::find(candidates.begin(), candidates.end(), r->chosen), candidates.end());
    std::cout << file.string() << ": installed '" << format_psi_trigger(r->chosen) << "'"
              << (r->rejected.empty() ? "" : "; refused " + r->rejected) << "\n";
    if (!(r->chosen == requested)) {
        EXPECT_NE(r->rejected.find("EINVAL"), std::string::npos);
    }
    pollfd p{r->fd.get(), POLLPRI, 0};
    ASSERT_GE(::poll(&p, 1, 0), 0);
    EXPECT_FALSE(p.revents & (POLLERR | POLLNVAL));
    // One trigger per open file: a second write is refused with EBUSY.
    EXPECT_LT(::write(r->fd.get(), "some 500000 2000000", 20), 0);
}

TEST(PsiTrigger, InstallsOnHostPressureFiles) {
    expect_trigger_installs("/proc/pressure/memory", PsiLine::some);
    expect_trigger_installs("/proc/pressure/io", PsiLine::full);
}

TEST(PsiTrigger, InstallsOnCgroup2PressureFiles) {
    expect_trigger_installs("/sys/fs/cgroup/unified/memory.pressure", PsiLine::some);
    expect_trigger_installs("/sys/fs/cgroup/unified/cpu.pressure", PsiLine::some);
    expect_trigger_installs("/sys/fs/cgroup/unified/io.pressure", PsiLine::full);
}

TEST_F(BusyCgroup, TriggerWakesWithPollpri) {
    // More busy processes than CPUs: the cgroup's cpu "some" stall is far
    // above the threshold, and the trigger must wake a poller with POLLPRI.
    auto trigger = open_psi_trigger(dir() / "cpu.pressure", spec(PsiLine::some, 100ms, 1s));
    ASSERT_TRUE(trigger.ok()) << trigger.error().message();
    spin_inside(busy_count());
    pollfd p{trigger->fd.get(), POLLPRI, 0};
    // Generous: an event, not a latency, is what is asserted.
    int n = ::poll(&p, 1, 60'000);
    ASSERT_EQ(n, 1) << "no PSI event within a minute";
    EXPECT_TRUE(p.revents & POLLPRI);
}

TEST_F(BusyCgroup, AChildCgroupHasAllThreePressureFiles) {
    // Even without the memory controller (this host's hybrid layout).
    for (const char* file : {"memory.pressure", "cpu.pressure", "io.pressure"}) {
        auto trigger = open_psi_trigger(dir() / file, spec(PsiLine::some, 150ms, 2s));
        EXPECT_TRUE(trigger.ok()) << file << ": " << trigger.error().message();
    }
}

}  // namespace
}  // namespace infervisor
