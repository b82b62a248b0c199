#include "base/file_io.h"

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace infervisor {
namespace {

TEST(FileIo, ReadsAndWritesExistingFiles) {
    testing::TempDir dir;
    auto f = dir.write("memory.max", "max\n");
    EXPECT_EQ(*read_file(f), "max\n");
    ASSERT_TRUE(write_file(f, "1024").ok());
    EXPECT_EQ(*read_file(f), "1024");
}

TEST(FileIo, WriteNeverCreatesAFile) {
    testing::TempDir dir;
    auto r = write_file(dir.path() / "memory.mx", "1");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ENOENT);
    EXPECT_NE(r.error().message().find("memory.mx"), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "memory.mx"));
}

TEST(FileIo, FindsKeyedValues) {
    const char* events = "low 0\nhigh 12\nmax 3\noom 1\noom_kill 1\noom_group_kill 1\n";
    EXPECT_EQ(*find_keyed_value(events, "oom"), 1);
    EXPECT_EQ(*find_keyed_value(events, "high"), 12);
    EXPECT_EQ(*find_keyed_value(events, "oom_group_kill"), 1);
    EXPECT_FALSE(find_keyed_value(events, "om").ok());
    EXPECT_FALSE(find_keyed_value("oom x\n", "oom").ok());
}

}  // namespace
}  // namespace infervisor
