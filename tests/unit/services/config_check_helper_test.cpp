// check_config_in_helper (services/config_check_helper.h): the text of
// `infervisorctl config check` is checked in a helper, the real
// infervisord in helper mode, with the caller's rights. Issue 26, defects 6
// (memory that stays with the daemon) and 7 (a root stat() oracle).
#include "services/config_check_helper.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "config/config_loader.h"
#include "support/hostile_config.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

using testing::TempDir;

ConfigCheckHelper built_daemon() {
    ConfigCheckHelper helper;
    helper.program = INFERVISORD;
    return helper;
}

// A main file's text, without drop-ins.
ConfigTexts alone(std::string text, std::string name) { return {{name, text}, {}}; }

const HelperIdentity kRoot{0, 0, {}};
const HelperIdentity kNobody{65534, 65534, {}};

std::string worker_with_credentials(const std::vector<std::string>& sources) {
    std::string text =
        "workers:\n"
        "  - name: w\n"
        "    command: [/bin/true]\n"
        "    memory: {max: 1G}\n"
        "    credentials:\n";
    for (std::size_t i = 0; i < sources.size(); ++i)
        text += "      c" + std::to_string(i) + ": " + sources[i] + "\n";
    return text;
}

TEST(ConfigCheckHelper, TheVerdictIsTheOneTheDaemonWouldReach) {
    std::string text =
        "workers:\n"
        "  - name: w\n"
        "    command: [bin/true]\n"
        "    memory: {max: 1G, high: 2G}\n"
        "    restart: {polcy: always}\n";
    auto here = load_config_text(text, "mine.yaml");
    auto there = check_config_in_helper(alone(text, "mine.yaml"), kRoot, built_daemon());
    ASSERT_EQ(there.not_checked, "");
    ASSERT_FALSE(here.errors.empty());
    EXPECT_EQ(there.errors.lines(), here.errors.lines());

    auto valid = check_config_in_helper(alone(worker_with_credentials({}), "ok.yaml"), kRoot,
                                        built_daemon());
    EXPECT_EQ(valid.not_checked, "");
    EXPECT_TRUE(valid.errors.empty()) << valid.errors.format();
}

// Issue 30: a gpu.devices naming a card the daemon's host lacks is a
// warning at its line, with the host's cards; without the daemon's GPUs
// (a host whose GPUs are not read) nothing is said.
TEST(ConfigCheckHelper, AGpuTheDaemonsHostLacksIsAWarning) {
    std::string text =
        "workers:\n"
        "  - name: w\n"
        "    command: [/bin/true]\n"
        "    memory: {max: 1G}\n"
        "    gpu: {devices: [0, 2]}\n";
    GpuDevice h100;
    h100.vendor = "nvidia";
    h100.name = "NVIDIA H100";
    h100.uuid = "GPU-1111";
    h100.pci_bus_id = "0000:03:00.0";
    auto there = check_config_in_helper(alone(text, "g.yaml"), kNobody, built_daemon(),
                                        std::vector<GpuDevice>{h100});
    ASSERT_EQ(there.not_checked, "");
    EXPECT_TRUE(there.errors.empty()) << there.errors.format();
    ASSERT_EQ(there.errors.warning_lines().size(), 1u);
    EXPECT_EQ(there.errors.warning_lines()[0],
              "g.yaml:5:5: worker 'w': gpu device '2' does not exist on this host (its GPUs: 0 "
              "NVIDIA H100 (GPU-1111, 0000:03:00.0)); starting it will fail");
    auto unknown = check_config_in_helper(alone(text, "g.yaml"), kNobody, built_daemon());
    EXPECT_TRUE(unknown.errors.warning_lines().empty());
}

// Issue 27, point 2: the drop-ins are checked with the main file.
// Issue 27, point 12: a command that does not exist is a warning, there as here.
TEST(ConfigCheckHelper, WarningsComeBackWithTheVerdict) {
    std::string text =
        "workers:\n"
        "  - name: w\n"
        "    command: [/nonexistent/llama-server]\n"
        "    memory: {max: 1G}\n";
    auto here = load_config_text(text, "mine.yaml");
    auto there = check_config_in_helper(alone(text, "mine.yaml"), kNobody, built_daemon());
    ASSERT_EQ(there.not_checked, "");
    EXPECT_TRUE(there.errors.empty()) << there.errors.format();
    ASSERT_EQ(here.errors.warning_lines().size(), 1u);
    EXPECT_EQ(there.errors.warning_lines(), here.errors.warning_lines());
}

TEST(ConfigCheckHelper, TheDropinsAreCheckedWithTheMainFile) {
    ConfigTexts texts{
        {"main.yaml", "workers:\n  - {name: a, command: [/bin/a], memory: {max: 1G}}\n"},
        {{"d/x.yaml", "log_level: debug\n"},
         {"d/y.yaml", "workers:\n  - {name: a, command: [/bin/a], memory: {max: 1G}}\n"}}};
    auto here = load_config_texts(texts);
    auto there = check_config_in_helper(texts, kRoot, built_daemon());
    ASSERT_EQ(there.not_checked, "");
    ASSERT_EQ(there.errors.all().size(), 2u) << there.errors.format();
    EXPECT_EQ(there.errors.lines(), here.errors.lines());
    EXPECT_EQ(there.errors.all()[0].file, "d/x.yaml");
    EXPECT_EQ(there.errors.all()[1].file, "d/y.yaml");
}

TEST(ConfigCheckHelper, ManyErrorsKeepTheirCount) {
    std::string text = "workers:\n";  // one error each, 150 in all
    for (int i = 0; i < 150; ++i)
        text += "  - {name: w" + std::to_string(i) + ", command: [relative], memory: {max: 1G}}\n";
    auto here = load_config_text(text, "many.yaml");
    ASSERT_GT(here.errors.dropped(), 0u);
    auto there = check_config_in_helper(alone(text, "many.yaml"), kRoot, built_daemon());
    ASSERT_EQ(there.not_checked, "");
    EXPECT_EQ(there.errors.count(), here.errors.count());
    EXPECT_EQ(there.errors.lines(), here.errors.lines());
}

TEST(ConfigCheckHelper, AHostileTextPastTheHelpersMemoryLimitIsRefusedCleanly) {
    auto helper = built_daemon();
    // Measured: the helper checks a small text in under 20 MiB of address
    // space and needs about 90 MiB for 50,000 extra dirs.
    helper.memory_limit = std::uint64_t{48} << 20;
    // A small text fits; 50,000 extra dirs (~1 MiB) do not.
    auto small = check_config_in_helper(alone(testing::config_with_extra_dirs(10), "small.yaml"),
                                        kRoot, helper);
    EXPECT_EQ(small.not_checked, "");
    auto big = check_config_in_helper(alone(testing::config_with_extra_dirs(50000), "big.yaml"),
                                      kRoot, helper);
    EXPECT_EQ(big.not_checked, "the check ran out of memory (its limit is 48M)");
    EXPECT_TRUE(big.errors.empty());
}

TEST(ConfigCheckHelper, PastItsDeadlineTheCheckIsRefused) {
    auto helper = built_daemon();
    helper.deadline = std::chrono::milliseconds(1);
    auto result = check_config_in_helper(
        alone(testing::config_with_unknown_groups(5000), "slow.yaml"), kRoot, helper);
    EXPECT_EQ(result.not_checked, "the check was killed after its deadline of 1ms");
}

// Defect 7: as root the check told any user whether a path in a private
// directory was missing, not a regular file, or fine. With the caller's
// rights it tells them what they could find out themselves: nothing here.
TEST(ConfigCheckHelper, CredentialPathsAreLookedAtWithTheCallersRights) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (a private dir and a uid to drop to)";
    TempDir dir;  // 0700, root's
    ASSERT_EQ(::chmod(dir.path().c_str(), 0700), 0);
    auto present = dir.write("present", "secret");
    auto subdir = dir.mkdir("subdir");
    std::string text =
        worker_with_credentials({(dir.path() / "missing").string(), subdir.string(),
                                 present.string(), "/nonexistent-infervisor-test/token"});

    auto as_root = check_config_in_helper(alone(text, "c.yaml"), kRoot, built_daemon());
    ASSERT_EQ(as_root.not_checked, "");
    std::string root_said = as_root.errors.format();
    EXPECT_NE(root_said.find("missing: No such file or directory"), std::string::npos) << root_said;
    EXPECT_NE(root_said.find("subdir is not a regular file"), std::string::npos) << root_said;

    auto as_nobody = check_config_in_helper(alone(text, "c.yaml"), kNobody, built_daemon());
    ASSERT_EQ(as_nobody.not_checked, "");
    std::string nobody_said = as_nobody.errors.format();
    EXPECT_EQ(nobody_said.find(dir.path().string()), std::string::npos) << nobody_said;
    // What nobody may see is still checked.
    EXPECT_NE(nobody_said.find("/nonexistent-infervisor-test/token: No such file or directory"),
              std::string::npos)
        << nobody_said;
}

}  // namespace
}  // namespace infervisor
