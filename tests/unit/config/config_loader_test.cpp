#include "config/config_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace infervisor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ConfigLoader, ReadsMainFileThenDropinsInNameOrder) {
    testing::TempDir dir;
    dir.write("infervisor.yaml", "defaults:\n  memory: {max: 1G}\n");
    dir.write("workers.d/20-b.yaml", "workers:\n  - {name: b, command: [/bin/b]}\n");
    dir.write("workers.d/10-a.yaml", "workers:\n  - {name: a, command: [/bin/a]}\n");
    dir.write("workers.d/README", "not yaml");
    dir.write("workers.d/.hidden.yaml", "garbage: [");
    auto loaded = load_config({dir.path() / "infervisor.yaml", {}});
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    ASSERT_EQ(loaded.config.workers.size(), 2u);
    EXPECT_EQ(loaded.config.workers[0].name, "a");
    EXPECT_EQ(loaded.config.workers[1].name, "b");
    EXPECT_EQ(*loaded.config.workers[1].memory.max, 1ull << 30);  // defaults reach drop-ins
    EXPECT_EQ(loaded.config.files.size(), 3u);
}

TEST(ConfigLoader, DropinsMayOnlyDefineWorkers) {
    testing::TempDir dir;
    dir.write("infervisor.yaml", "");
    dir.write("workers.d/a.yaml", "log_level: debug\n");
    auto loaded = load_config({dir.path() / "infervisor.yaml", {}});
    auto file = (dir.path() / "workers.d/a.yaml").string();
    EXPECT_THAT(loaded.errors.format(),
                HasSubstr(file + ":1:1: unknown key 'log_level' in a workers file"));
}

TEST(ConfigLoader, DuplicatesAcrossFilesNameBothPlaces) {
    testing::TempDir dir;
    dir.write("main.yaml", "workers:\n  - {name: a, command: [/bin/a], memory: {max: 1G}}\n");
    dir.write("w/x.yaml", "\nworkers:\n  - {name: a, command: [/bin/a], memory: {max: 1G}}\n");
    auto loaded = load_config({dir.path() / "main.yaml", dir.path() / "w"});
    ASSERT_EQ(loaded.errors.all().size(), 1u);
    EXPECT_EQ(loaded.errors.all()[0].format(),
              (dir.path() / "w/x.yaml").string() +
                  ":3:5: duplicate worker name 'a' (first defined at " +
                  (dir.path() / "main.yaml").string() + ":2:5)");
}

TEST(ConfigLoader, MissingMainFileIsAnError) {
    testing::TempDir dir;
    auto loaded = load_config({dir.path() / "nope.yaml", {}});
    EXPECT_FALSE(loaded.ok());
    EXPECT_THAT(loaded.errors.format(), HasSubstr("nope.yaml: cannot read: open"));
    EXPECT_THAT(loaded.errors.format(), HasSubstr("No such file or directory"));
}

TEST(ConfigLoader, ShippedConfigAndExampleWorkersAreValid) {
    // etc/infervisor.yaml is what a package installs; the demo workers
    // (configured into the build dir) are what the README's demo runs, and
    // torch-worker.yaml the example on python3-torch.
    const char* src = std::getenv("INFERVISOR_SOURCE_ROOT");
    const char* build = std::getenv("INFERVISOR_BUILD_ROOT");
    ASSERT_NE(src, nullptr);
    ASSERT_NE(build, nullptr);
    auto loaded = load_config(
        {std::filesystem::path(src) / "etc/infervisor.yaml", std::filesystem::path(build) / "etc"});
    EXPECT_TRUE(loaded.ok()) << loaded.errors.format();
    ASSERT_EQ(loaded.config.workers.size(), 3u);
    EXPECT_EQ(loaded.config.workers[0].name, "chat");
    EXPECT_EQ(loaded.config.workers[1].name, "leaky");
    EXPECT_EQ(loaded.config.workers[2].name, "torch-chat");
}

}  // namespace
}  // namespace infervisor
