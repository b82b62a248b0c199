// The dmem controller on a temp-dir cgroupfs: the root's dmem.capacity and a
// worker cgroup's dmem.max as plain files.
#include "cgroup/dmem.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace infervisor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kAmdAndXe =
    "drm/0000:03:00.0/vram 17095983104\n"
    "drm/0000:03:00.0/gtt 8589934592\n"
    "drm/0000:0a:00.0/vram0 4294967296\n"
    "drm/0000:0a:00.0/stolen 67108864\n";

TEST(Dmem, ParsesRegionsAndSkipsMalformedLines) {
    auto regions = parse_dmem_regions(
        "drm/0000:03:00.0/vram0 8573157376\n\nbroken\ndrm/x/vram1 12abc\n"
        "drm/0000:04:00.0/vram0\t42\n");
    EXPECT_THAT(regions, ElementsAre(DmemRegion{"drm/0000:03:00.0/vram0", 8573157376},
                                     DmemRegion{"drm/0000:04:00.0/vram0", 42}));
}

TEST(Dmem, VramRegionsOfTheGivenCardsOrOfEveryCard) {
    auto regions = parse_dmem_regions(kAmdAndXe);
    EXPECT_THAT(vram_regions(regions, {"0000:0a:00.0"}), ElementsAre("drm/0000:0a:00.0/vram0"));
    EXPECT_THAT(vram_regions(regions, {}),
                ElementsAre("drm/0000:03:00.0/vram", "drm/0000:0a:00.0/vram0"));
    EXPECT_TRUE(vram_regions(regions, {"0000:99:00.0"}).empty());
    EXPECT_TRUE(vram_regions(parse_dmem_regions("other/0000:03:00.0/vram 1\n"), {}).empty());
}

struct DmemFixture : ::testing::Test {
    testing::TempDir fs;
    CgroupDir worker{fs.path() / "svc/workers/llama"};
    std::filesystem::path capacity = fs.path() / "dmem.capacity";
};

TEST_F(DmemFixture, WritesTheCapToTheVramOfTheWorkersCard) {
    fs.write("dmem.capacity", kAmdAndXe);
    fs.write("svc/workers/llama/dmem.max", "");
    auto cap = cap_device_memory(worker, capacity, {"0000:03:00.0"}, 40ull << 30);
    ASSERT_TRUE(cap.ok()) << cap.error().message();
    EXPECT_EQ(cap->outcome, DmemCap::Outcome::capped);
    EXPECT_THAT(cap->regions, ElementsAre("drm/0000:03:00.0/vram"));
    EXPECT_EQ(testing::slurp(worker.path() / "dmem.max"), "drm/0000:03:00.0/vram 42949672960");
}

TEST_F(DmemFixture, WithoutDevicesEveryVramRegionGetsTheWholeCap) {
    fs.write("dmem.capacity", kAmdAndXe);
    fs.write("svc/workers/llama/dmem.max", "");
    auto cap = cap_device_memory(worker, capacity, {}, 1000);
    ASSERT_TRUE(cap.ok()) << cap.error().message();
    EXPECT_EQ(cap->outcome, DmemCap::Outcome::capped);
    EXPECT_THAT(cap->regions, ElementsAre("drm/0000:03:00.0/vram", "drm/0000:0a:00.0/vram0"));
    // One write per region; the plain file keeps the last.
    EXPECT_EQ(testing::slurp(worker.path() / "dmem.max"), "drm/0000:0a:00.0/vram0 1000");
}

TEST_F(DmemFixture, WithoutTheControllerNothingIsWrittenOrRead) {
    fs.mkdir("svc/workers/llama");  // no dmem.max, and no dmem.capacity either
    auto cap = cap_device_memory(worker, capacity, {"0000:03:00.0"}, 1000);
    ASSERT_TRUE(cap.ok()) << cap.error().message();
    EXPECT_EQ(cap->outcome, DmemCap::Outcome::controller_absent);
    EXPECT_FALSE(std::filesystem::exists(worker.path() / "dmem.max"));
}

TEST_F(DmemFixture, NvidiaOnlyHasNoRegionAndNothingIsWritten) {
    fs.write("dmem.capacity", "");  // the proprietary driver registers none
    fs.write("svc/workers/llama/dmem.max", "untouched");
    auto cap = cap_device_memory(worker, capacity, {"0000:65:00.0"}, 1000);
    ASSERT_TRUE(cap.ok()) << cap.error().message();
    EXPECT_EQ(cap->outcome, DmemCap::Outcome::no_regions);
    EXPECT_EQ(testing::slurp(worker.path() / "dmem.max"), "untouched");
    // An NVIDIA card beside an AMD one: only the AMD card's region exists.
    fs.write("dmem.capacity", kAmdAndXe);
    cap = cap_device_memory(worker, capacity, {"0000:65:00.0"}, 1000);
    ASSERT_TRUE(cap.ok());
    EXPECT_EQ(cap->outcome, DmemCap::Outcome::no_regions);
}

TEST_F(DmemFixture, AFailedWriteIsAnErrorNamingTheRegionAndTheFile) {
    fs.write("dmem.capacity", kAmdAndXe);
    fs.mkdir("svc/workers/llama/dmem.max");  // a directory: open(O_WRONLY) fails as root too
    auto cap = cap_device_memory(worker, capacity, {"0000:0a:00.0"}, 1000);
    ASSERT_FALSE(cap.ok());
    EXPECT_THAT(cap.error().message(), HasSubstr("drm/0000:0a:00.0/vram0"));
    EXPECT_THAT(cap.error().message(), HasSubstr((worker.path() / "dmem.max").string()));
}

TEST_F(DmemFixture, AnUnreadableCapacityWithTheControllerPresentIsAnError) {
    fs.write("svc/workers/llama/dmem.max", "");
    auto cap = cap_device_memory(worker, capacity, {}, 1000);
    ASSERT_FALSE(cap.ok());
    EXPECT_THAT(cap.error().message(), HasSubstr(capacity.string()));
}

TEST_F(DmemFixture, ReadsCurrentPerRegion) {
    fs.write("svc/workers/llama/dmem.current", "drm/0000:03:00.0/vram 1006202880\n");
    auto current = read_dmem_current(worker);
    ASSERT_TRUE(current.ok());
    EXPECT_THAT(*current, ElementsAre(DmemRegion{"drm/0000:03:00.0/vram", 1006202880}));
    EXPECT_FALSE(read_dmem_current(CgroupDir(fs.path() / "none")).ok());
}

}  // namespace
}  // namespace infervisor
