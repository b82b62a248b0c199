#include "cgroup/psi.h"

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace infervisor {
namespace {

TEST(PsiReader, ParsesSomeAndFull) {
    auto r = parse_psi(
        "some avg10=1.50 avg60=0.25 avg300=0.00 total=11378845\n"
        "full avg10=0.75 avg60=0.10 avg300=0.01 total=2626610\n");
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_DOUBLE_EQ(r->some.avg10, 1.5);
    EXPECT_DOUBLE_EQ(r->some.avg60, 0.25);
    EXPECT_EQ(r->some.total_us, 11378845u);
    ASSERT_TRUE(r->full.has_value());
    EXPECT_DOUBLE_EQ(r->full->avg10, 0.75);
    EXPECT_DOUBLE_EQ(r->full->avg300, 0.01);
}

TEST(PsiReader, FullLineMayBeAbsent) {
    auto r = parse_psi("some avg10=12.00 avg60=3.00 avg300=1.00 total=5\n");
    ASSERT_TRUE(r.ok());
    EXPECT_DOUBLE_EQ(r->some.avg10, 12.0);
    EXPECT_FALSE(r->full.has_value());
}

TEST(PsiReader, RejectsMalformedText) {
    EXPECT_FALSE(parse_psi("").ok());
    EXPECT_FALSE(parse_psi("full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n").ok());
    auto missing = parse_psi("some avg10=0.00 avg60=0.00 total=0\n");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().what.find("avg300"), std::string::npos);
    EXPECT_FALSE(parse_psi("some avg10=x avg60=0.00 avg300=0.00 total=0\n").ok());
}

TEST(PsiReader, ReadsAFileAndNamesItInErrors) {
    testing::TempDir dir;
    auto good = dir.write("memory.pressure", "some avg10=4.00 avg60=2.00 avg300=1.00 total=9\n");
    EXPECT_DOUBLE_EQ(read_psi(good)->some.avg10, 4.0);
    auto bad = dir.write("cpu.pressure", "garbage\n");
    auto r = read_psi(bad);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().what.find("cpu.pressure"), std::string::npos);
    EXPECT_EQ(read_psi(dir.path() / "io.pressure").error().code, ENOENT);
}

TEST(PsiReader, ReadsThisHostsPressureFiles) {
    if (!std::filesystem::exists("/proc/pressure/memory")) GTEST_SKIP() << "no PSI on this kernel";
    for (const char* file : {"/proc/pressure/memory", "/proc/pressure/cpu", "/proc/pressure/io"}) {
        auto r = read_psi(file);
        ASSERT_TRUE(r.ok()) << r.error().message();
        EXPECT_GE(r->some.avg10, 0.0);
        EXPECT_LE(r->some.avg10, 100.0);
    }
}

}  // namespace
}  // namespace infervisor
