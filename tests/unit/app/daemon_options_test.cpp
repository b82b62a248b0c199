// infervisord's command line: what it takes, and the exit status of a
// usage error (2, as infervisord(8) says).
#include "app/daemon_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace infervisor {
namespace {

std::variant<DaemonOptions, int> parse(std::vector<std::string> args) {
    args.insert(args.begin(), "infervisord");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    return parse_daemon_options(static_cast<int>(argv.size()), argv.data());
}

TEST(DaemonOptions, TakesItsOptions) {
    auto parsed = parse({"-c", "/etc/x.yaml", "--log-level", "debug", "--check-config"});
    ASSERT_TRUE(std::holds_alternative<DaemonOptions>(parsed));
    const auto& o = std::get<DaemonOptions>(parsed);
    EXPECT_EQ(o.config_file, "/etc/x.yaml");
    EXPECT_EQ(o.log_level, "debug");
    EXPECT_TRUE(o.check_config);
}

TEST(DaemonOptions, AUsageErrorExitsTwo) {
    for (std::vector<std::string> bad : std::vector<std::vector<std::string>>{
             {"--bogus"}, {"--log-level", "verbose"}, {"-c"}, {"extra"}}) {
        auto parsed = parse(bad);
        ASSERT_TRUE(std::holds_alternative<int>(parsed)) << bad[0];
        EXPECT_EQ(std::get<int>(parsed), 2) << bad[0];
    }
}

TEST(DaemonOptions, HelpAndVersionExitZero) {
    for (const char* flag : {"--help", "--version"}) {
        auto parsed = parse({flag});
        ASSERT_TRUE(std::holds_alternative<int>(parsed)) << flag;
        EXPECT_EQ(std::get<int>(parsed), 0) << flag;
    }
}

}  // namespace
}  // namespace infervisor
