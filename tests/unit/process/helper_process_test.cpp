// run_helper (process/helper_process.h): work in a short-lived child with a
// memory limit, a deadline, no inherited fds and, when asked, another
// identity. Issue 26, defects 6 and 7.
#include "process/helper_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>

namespace infervisor {
namespace {

using Outcome = HelperResult::Outcome;

std::string fixture() { return INFERVISOR_HELPER_FIXTURE; }

HelperRequest request(std::vector<std::string> args) {
    HelperRequest r;
    r.argv = {fixture()};
    r.argv.insert(r.argv.end(), args.begin(), args.end());
    return r;
}

TEST(HelperProcess, ItsInputGoesInAndItsOutputComesBack) {
    auto r = request({"echo"});
    // Larger than a pipe's buffer both ways: writing and reading interleave.
    for (int i = 0; i < 300000; ++i) r.input += "line " + std::to_string(i) + "\n";
    auto result = run_helper(r);
    ASSERT_EQ(result.outcome, Outcome::succeeded) << result.describe(r);
    EXPECT_EQ(result.output.size(), r.input.size());
    EXPECT_TRUE(result.output == r.input);  // not printed: 3 MB
}

TEST(HelperProcess, AnAllocationPastItsMemoryLimitIsACleanError) {
    auto r = request({"allocate", "512"});
    r.memory_limit = std::uint64_t{64} << 20;
    auto result = run_helper(r);
    EXPECT_EQ(result.outcome, Outcome::out_of_memory) << result.describe(r);
    EXPECT_EQ(result.describe(r), "ran out of memory (its limit is 64M)");
    // The same allocation without the limit succeeds: it was the limit.
    auto unlimited = request({"allocate", "96"});
    unlimited.memory_limit = 0;
    EXPECT_EQ(run_helper(unlimited).outcome, Outcome::succeeded);
}

TEST(HelperProcess, PastItsDeadlineItIsKilledAndReaped) {
    auto r = request({"hang"});
    r.deadline = std::chrono::milliseconds(200);
    auto result = run_helper(r);
    EXPECT_EQ(result.outcome, Outcome::timed_out);
    ASSERT_TRUE(result.status.has_value());  // reaped
    EXPECT_EQ(*result.status, ExitStatus::killed_by(SIGKILL));
    EXPECT_EQ(result.describe(r), "was killed after its deadline of 200ms");
}

TEST(HelperProcess, InheritsNoFileDescriptors) {
    // Neither an fd without O_CLOEXEC nor the other pipes' ends.
    int leaky = ::open("/dev/null", O_RDONLY);
    ASSERT_GE(leaky, 0);
    auto r = request({"fds"});
    auto result = run_helper(r);
    ::close(leaky);
    ASSERT_EQ(result.outcome, Outcome::succeeded) << result.describe(r);
    EXPECT_EQ(result.output, "0\n1\n2\n");
}

TEST(HelperProcess, RunsWithTheCallersUidGidAndGroupsOnly) {
    if (::geteuid() != 0) GTEST_SKIP() << "changing credentials needs root";
    auto r = request({"ids"});
    r.identity = HelperIdentity{65534, 65533, {65531, 65532}};
    auto result = run_helper(r);
    ASSERT_EQ(result.outcome, Outcome::succeeded) << result.describe(r);
    // The kernel keeps the groups sorted.
    EXPECT_EQ(result.output, "65534 65534 65534 65533 65533 65533\n65531\n65532\n");
}

TEST(HelperProcess, OutputPastItsCapKillsIt) {
    auto r = request({"flood"});
    r.max_output = 1 << 20;
    auto result = run_helper(r);
    EXPECT_EQ(result.outcome, Outcome::output_too_large);
    ASSERT_TRUE(result.status.has_value());
    EXPECT_EQ(*result.status, ExitStatus::killed_by(SIGKILL));
}

TEST(HelperProcess, AHelperThatReadsNoInputCostsTheCallerNoSigpipe) {
    auto r = request({"ignore-input"});
    r.input.assign(8 << 20, 'z');
    auto result = run_helper(r);  // would end this test binary with SIGPIPE
    EXPECT_EQ(result.outcome, Outcome::succeeded) << result.describe(r);
}

TEST(HelperProcess, AFailureSaysWhatTheHelperSaid) {
    auto r = request({"complain"});
    auto result = run_helper(r);
    EXPECT_EQ(result.outcome, Outcome::failed);
    EXPECT_EQ(result.describe(r), "exited with code 3: something broke");
}

TEST(HelperProcess, AProgramThatCannotStartIsNotStarted) {
    HelperRequest r;
    r.argv = {"/nonexistent/helper"};
    auto result = run_helper(r);
    EXPECT_EQ(result.outcome, Outcome::not_started);
    EXPECT_NE(result.describe(r).find("execve"), std::string::npos) << result.describe(r);
}

}  // namespace
}  // namespace infervisor
