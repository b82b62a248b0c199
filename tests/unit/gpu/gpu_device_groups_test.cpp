// The groups of the AMD and Intel cards' device nodes, on a temp-dir sysfs
// and devfs (real character devices: mknod needs root).
#include "gpu/gpu_device_groups.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "support/temp_dir.h"

namespace infervisor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr gid_t kRender = 61901;
constexpr gid_t kKfd = 61902;

class GpuDeviceGroups : public ::testing::Test {
  protected:
    void SetUp() override {
        if (::geteuid() != 0) GTEST_SKIP() << "mknod and chown need root";
    }
    // cardN with its render node in sysfs, and the node in devfs owned by `gid`.
    void card(unsigned n, unsigned render, gid_t gid) {
        std::string node = "renderD" + std::to_string(render);
        fs_.mkdir("sys/class/drm/card" + std::to_string(n) + "/device/drm/" + node);
        device("dev/dri/" + node, gid);
    }
    void device(const std::string& rel, gid_t gid) {
        fs::path p = fs_.path() / rel;
        fs::create_directories(p.parent_path());
        ASSERT_EQ(::mknod(p.c_str(), S_IFCHR | 0660, makedev(226, 128)), 0);
        ASSERT_EQ(::chown(p.c_str(), 0, gid), 0);
    }
    Result<std::vector<gid_t>> groups(const std::vector<GpuDevice>& devices) const {
        return gpu_device_groups(devices, fs_.path() / "sys", fs_.path() / "dev");
    }
    static GpuDevice gpu(unsigned index, const std::string& vendor) {
        GpuDevice d;
        d.index = index;
        d.vendor = vendor;
        d.pci_bus_id = "0000:0" + std::to_string(index) + ":00.0";
        return d;
    }

    testing::TempDir fs_;
};

TEST_F(GpuDeviceGroups, AnIntelCardGivesItsRenderNodesGroup) {
    card(1, 128, kRender);
    auto g = groups({gpu(1, "intel")});
    ASSERT_TRUE(g.ok()) << g.error().message();
    EXPECT_THAT(*g, ElementsAre(kRender));
}

TEST_F(GpuDeviceGroups, AnAmdCardGivesItsRenderNodesGroupAndKfdsOnce) {
    card(1, 128, kRender);
    card(2, 129, kRender);
    device("dev/kfd", kKfd);
    auto g = groups({gpu(1, "amd"), gpu(2, "amd")});
    ASSERT_TRUE(g.ok()) << g.error().message();
    EXPECT_THAT(*g, ElementsAre(kRender, kKfd));
}

TEST_F(GpuDeviceGroups, NvidiaAndMissingNodesGiveNothing) {
    card(0, 128, kRender);                        // NVIDIA's cards are not looked at
    fs_.mkdir("sys/class/drm/card3/device/drm");  // no render node
    auto g = groups({gpu(0, "nvidia"), gpu(3, "intel"), gpu(4, "amd")});
    ASSERT_TRUE(g.ok()) << g.error().message();
    EXPECT_TRUE(g->empty());
}

TEST_F(GpuDeviceGroups, RootsGroupIsRefusedNamingTheNode) {
    card(1, 128, 0);
    auto g = groups({gpu(1, "intel")});
    ASSERT_FALSE(g.ok());
    EXPECT_THAT(g.error().message(), HasSubstr((fs_.path() / "dev/dri/renderD128").string()));
    EXPECT_THAT(g.error().message(), HasSubstr("gid 0"));
    EXPECT_THAT(g.error().message(), HasSubstr("card1"));
    // A node everyone may read and write needs no group: none is given.
    ASSERT_EQ(::chmod((fs_.path() / "dev/dri/renderD128").c_str(), 0666), 0);
    g = groups({gpu(1, "intel")});
    ASSERT_TRUE(g.ok()) << g.error().message();
    EXPECT_TRUE(g->empty());
}

TEST_F(GpuDeviceGroups, ASymlinkOrAFileIsNotFollowed) {
    fs_.mkdir("sys/class/drm/card1/device/drm/renderD128");
    fs_.write("elsewhere", "");
    ASSERT_EQ(::chown((fs_.path() / "elsewhere").c_str(), 0, kRender), 0);
    fs::create_directories(fs_.path() / "dev/dri");
    fs::create_symlink(fs_.path() / "elsewhere", fs_.path() / "dev/dri/renderD128");
    auto g = groups({gpu(1, "intel")});
    ASSERT_FALSE(g.ok());
    EXPECT_THAT(g.error().message(), HasSubstr("not a character device"));
    fs::remove(fs_.path() / "dev/dri/renderD128");
    fs_.write("dev/dri/renderD128", "");
    EXPECT_FALSE(groups({gpu(1, "intel")}).ok());
}

}  // namespace
}  // namespace infervisor
