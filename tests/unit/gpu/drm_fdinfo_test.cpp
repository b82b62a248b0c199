// DRM fdinfo: the parser on strings, then the reader against fake /proc and
// /sys trees built in a temp dir around fixture files copied from the kernel's
// documented output (fixtures/drm/README says where each comes from).
#include "gpu/drm_fdinfo.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "support/temp_dir.h"

namespace infervisor {
namespace {

namespace fs = std::filesystem;
using testing::slurp;
using testing::TempDir;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * 1024;

fs::path fixture_dir() {
    if (const char* src = std::getenv("INFERVISOR_SOURCE_ROOT"); src && *src)
        return fs::path(src) / "tests/unit/gpu/fixtures/drm";
    return fs::path(__FILE__).parent_path() / "fixtures/drm";
}

std::string fixture(const std::string& name) {
    std::string text = slurp(fixture_dir() / name);
    EXPECT_FALSE(text.empty()) << "missing fixture " << (fixture_dir() / name);
    return text;
}

// A fake host: cards under sys/, processes under proc/.
class DrmHost {
  public:
    DrmHost() : roots_{dir_.path() / "proc", dir_.path() / "sys"} {
        dir_.mkdir("proc");
        dir_.mkdir("sys/class/drm");
    }

    const DrmRoots& roots() const { return roots_; }
    const TempDir& dir() const { return dir_; }

    // sys/class/drm/cardN/device -> ../../../devices/pci0000:00/<pci>, whose
    // driver -> ../../../bus/pci/drivers/<driver>, as sysfs lays them out;
    // plus the renderD and connector entries that must be skipped.
    fs::path add_card(unsigned n, const std::string& pci, const std::string& driver) {
        fs::path device = dir_.mkdir("sys/devices/pci0000:00/" + pci);
        dir_.mkdir("sys/bus/pci/drivers/" + driver);
        fs::create_directory_symlink("../../../bus/pci/drivers/" + driver, device / "driver");
        std::string card = "card" + std::to_string(n);
        fs::path card_dir = dir_.mkdir("sys/class/drm/" + card);
        fs::create_directory_symlink("../../../devices/pci0000:00/" + pci, card_dir / "device");
        dir_.mkdir("sys/class/drm/" + card + "-DP-1");
        fs::path render = dir_.mkdir("sys/class/drm/renderD" + std::to_string(128 + n));
        fs::create_directory_symlink("../../../devices/pci0000:00/" + pci, render / "device");
        return device;
    }

    // proc/PID/fd/FD -> target (never followed) and proc/PID/fdinfo/FD.
    void add_fd(pid_t pid, int fd, const std::string& target, const std::string& fdinfo) {
        fs::path proc = dir_.mkdir("proc/" + std::to_string(pid));
        fs::create_directories(proc / "fd");
        fs::create_symlink(target, proc / "fd" / std::to_string(fd));
        dir_.write(proc / "fdinfo" / std::to_string(fd), fdinfo);
    }

  private:
    TempDir dir_;
    DrmRoots roots_;
};

std::string with_pdev(std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    return text;
}

std::string amdgpu_client(uint64_t id, const std::string& vram, const std::string& engines = "") {
    return "pos:\t0\ndrm-driver:\tamdgpu\ndrm-client-id:\t" + std::to_string(id) +
           "\ndrm-pdev:\t0000:03:00.0\ndrm-memory-vram:\t" + vram +
           "\ndrm-memory-gtt: \t4096 KiB\n" + engines;
}

// ---- parser ----

TEST(DrmFdinfoParse, AmdgpuModernPrefersResidentAndCountsVramOnly) {
    DrmClientInfo info = parse_drm_fdinfo(fixture("amdgpu_modern.fdinfo"));
    EXPECT_EQ(info.driver, "amdgpu");
    EXPECT_EQ(info.pdev, "0000:04:00.0");
    EXPECT_EQ(info.client_id, 30u);
    // drm-resident-vram, and not again as its drm-memory-vram alias; gtt and
    // cpu are host RAM.
    EXPECT_EQ(info.device_memory, 544428 * kKiB);
    EXPECT_EQ(info.engine_ns.at("gfx"), 39456116802u);
}

TEST(DrmFdinfoParse, AmdgpuLegacyDrmMemoryVram) {
    DrmClientInfo info = parse_drm_fdinfo(fixture("amdgpu_legacy.fdinfo"));
    EXPECT_EQ(info.client_id, 31u);
    EXPECT_EQ(info.device_memory, 65536 * kKiB);
    EXPECT_EQ(info.engine_ns.size(), 3u);
}

TEST(DrmFdinfoParse, I915CountsLocalNotSystemNorStolen) {
    DrmClientInfo info = parse_drm_fdinfo(fixture("i915_dg2.fdinfo"));
    EXPECT_EQ(info.driver, "i915");
    EXPECT_EQ(info.device_memory, 1536 * kKiB);  // resident-local0, not total-local0 (2 MiB)
    EXPECT_EQ(info.engine_capacity.at("video"), 2u);
    EXPECT_EQ(info.engine_ns.count("capacity-video"), 0u);
    EXPECT_EQ(info.engine_ns.size(), 4u);
}

TEST(DrmFdinfoParse, XeVram0AndCycles) {
    DrmClientInfo info = parse_drm_fdinfo(fixture("xe_bmg.fdinfo"));
    EXPECT_EQ(info.driver, "xe");
    EXPECT_EQ(info.client_id, 3u);
    EXPECT_EQ(info.device_memory, 23992 * kKiB);
    EXPECT_EQ(info.cycles.at("rcs"), 28257900u);
    EXPECT_EQ(info.total_cycles.at("rcs"), 7655183225u);
    EXPECT_EQ(info.engine_capacity.at("ccs"), 4u);
    EXPECT_TRUE(info.engine_ns.empty());
}

TEST(DrmFdinfoParse, TotalWhenNoResident) {
    DrmClientInfo info =
        parse_drm_fdinfo("drm-driver:\txe\ndrm-total-vram0:\t3 MiB\ndrm-total-vram1:\t512\n");
    EXPECT_EQ(info.device_memory, 3 * kMiB + 512);
}

TEST(DrmFdinfoParse, Sizes) {
    EXPECT_EQ(parse_drm_size("0"), 0u);
    EXPECT_EQ(parse_drm_size("4096"), 4096u);
    EXPECT_EQ(parse_drm_size("12 KiB"), 12 * kKiB);
    EXPECT_EQ(parse_drm_size("\t7 MiB \n"), 7 * kMiB);
    EXPECT_EQ(parse_drm_size("18446744073709551615"), 18446744073709551615u);
    EXPECT_FALSE(parse_drm_size("18446744073709551616"));   // over 2^64-1
    EXPECT_FALSE(parse_drm_size("18014398509481984 KiB"));  // 2^54 KiB overflows
    EXPECT_FALSE(parse_drm_size("17592186044416 MiB"));     // 2^44 MiB overflows
    EXPECT_FALSE(parse_drm_size("1 GiB"));                  // not a documented unit
    EXPECT_FALSE(parse_drm_size("-1"));
    EXPECT_FALSE(parse_drm_size("+1"));
    EXPECT_FALSE(parse_drm_size("1.5 MiB"));
    EXPECT_FALSE(parse_drm_size("0x10"));
    EXPECT_FALSE(parse_drm_size(""));
    EXPECT_FALSE(parse_drm_size("1 KiB extra"));
}

TEST(DrmFdinfoParse, MalformedAndHugeLinesIgnored) {
    DrmClientInfo info = parse_drm_fdinfo(
        "drm-driver:\tamdgpu\n"
        "drm-client-id:\tnot-a-number\n"
        "drm-pdev:\t../../etc\n"
        "drm-memory-vram:\t99999999999999999999999 KiB\n"
        "drm memory-vram:\t5 KiB\n"        // whitespace in the key
        "drm-resident-vram\t5 KiB\n"       // no colon
        "drm-resident-vram:\t5 parsecs\n"  // unknown unit
        "drm-total-vram:\t7 KiB\n"
        "drm-engine-gfx:\t12 fortnights\n"
        "drm-engine-capacity-gfx:\t0\n"  // zero capacity is not allowed
        "\n:::\n");
    EXPECT_FALSE(info.client_id);
    EXPECT_EQ(info.pdev, "");
    EXPECT_EQ(info.device_memory, 7 * kKiB);  // only the one well-formed size
    EXPECT_TRUE(info.engine_ns.empty());
    EXPECT_TRUE(info.engine_capacity.empty());
}

TEST(DrmFdinfoParse, RegionSumSaturates) {
    DrmClientInfo info =
        parse_drm_fdinfo("drm-resident-vram0:\t18446744073709551615\ndrm-resident-vram1:\t10\n");
    EXPECT_EQ(info.device_memory, 18446744073709551615u);
}

// ---- devices ----

TEST(DrmDevices, CardsOnlyPciAndNotNvidia) {
    DrmHost host;
    fs::path amd = host.add_card(1, "0000:03:00.0", "amdgpu");
    host.dir().write(amd / "mem_info_vram_total", "17163091968\n");
    host.dir().write(amd / "mem_info_vram_used", "1073741824\n");
    host.dir().write(amd / "gpu_busy_percent", "42\n");
    host.add_card(0, "0000:00:02.0", "i915");
    host.add_card(2, "0000:65:00.0", "nvidia");
    host.add_card(3, "0000:B3:00.0", "xe");
    fs::path virt = host.dir().mkdir("sys/class/drm/card9");  // not a PCI device
    fs::create_directory_symlink("../../../devices/platform/vkms", virt / "device");

    std::vector<std::string> errors;
    auto devices = list_drm_devices(host.roots(), errors);
    EXPECT_TRUE(errors.empty());
    ASSERT_EQ(devices.size(), 3u);
    EXPECT_EQ(devices[0].index, 0u);
    EXPECT_EQ(devices[0].vendor, "intel");
    EXPECT_EQ(devices[0].pci_bus_id, "0000:00:02.0");
    EXPECT_FALSE(devices[0].memory_total);
    EXPECT_EQ(devices[1].vendor, "amd");
    EXPECT_EQ(devices[1].memory_total, 17163091968u);
    EXPECT_EQ(devices[1].memory_used, 1073741824u);
    EXPECT_EQ(devices[1].utilization, 42.0);
    EXPECT_EQ(devices[2].vendor, "intel");
    EXPECT_EQ(devices[2].pci_bus_id, "0000:b3:00.0");
    EXPECT_TRUE(has_drm_gpus(host.roots()));
}

// amdgpu's unique_id is ROCm's UUID of the card; absent (GFX8 and older) or
// malformed is none, a failed read is one that could not be read now.
TEST(DrmDevices, AmdgpuUniqueIdIsRocmsUuid) {
    DrmHost host;
    host.dir().write(host.add_card(0, "0000:03:00.0", "amdgpu") / "unique_id",
                     "0123456789abcdef\n");
    host.add_card(1, "0000:04:00.0", "amdgpu");
    host.dir().write(host.add_card(2, "0000:05:00.0", "amdgpu") / "unique_id", "\n");
    host.dir().mkdir("sys/devices/pci0000:00/0000:06:00.0/unique_id");  // read fails: EISDIR
    host.add_card(3, "0000:06:00.0", "amdgpu");
    host.dir().write(host.add_card(4, "0000:00:02.0", "i915") / "unique_id", "0123456789abcdef\n");

    std::vector<std::string> errors;
    auto devices = list_drm_devices(host.roots(), errors);
    ASSERT_EQ(devices.size(), 5u);
    EXPECT_EQ(devices[0].uuid, "GPU-0123456789abcdef");
    EXPECT_FALSE(devices[0].uuid_unreadable);
    EXPECT_EQ(devices[1].uuid, "");
    EXPECT_FALSE(devices[1].uuid_unreadable);
    EXPECT_EQ(devices[2].uuid, "");
    EXPECT_FALSE(devices[2].uuid_unreadable);
    EXPECT_EQ(devices[3].uuid, "");
    EXPECT_TRUE(devices[3].uuid_unreadable);
    EXPECT_EQ(devices[4].uuid, "");  // only amdgpu's is read
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(errors[0].find("card3/device/unique_id"), std::string::npos) << errors[0];
}

TEST(DrmDevices, NoCardsIsQuickAndEmpty) {
    DrmHost host;
    EXPECT_FALSE(has_drm_gpus(host.roots()));
    host.add_card(0, "0000:65:00.0", "nvidia");
    EXPECT_FALSE(has_drm_gpus(host.roots()));
    // Display cards (a BMC's, a VM's) are no GPUs for workers: not read.
    host.add_card(1, "0000:02:00.0", "ast");
    host.add_card(2, "0000:00:02.0", "virtio-pci");
    host.add_card(3, "0000:00:03.0", "bochs-drm");
    EXPECT_FALSE(has_drm_gpus(host.roots()));
    DrmHost no_sysfs_drm;
    fs::remove(no_sysfs_drm.roots().sysfs / "class/drm");
    EXPECT_FALSE(has_drm_gpus(no_sysfs_drm.roots()));
    auto snapshot = read_drm_usage(no_sysfs_drm.roots(), {1});
    EXPECT_TRUE(snapshot.devices.empty());
    EXPECT_TRUE(snapshot.errors.empty());
}

// ---- processes ----

TEST(DrmUsage, OneProcessPerDriver) {
    DrmHost host;
    host.add_card(0, "0000:04:00.0", "amdgpu");
    host.add_card(1, "0000:03:00.0", "xe");
    host.add_fd(100, 5, "/dev/dri/renderD128", fixture("amdgpu_modern.fdinfo"));
    host.add_fd(100, 6, "/dev/dri/renderD129", fixture("xe_bmg.fdinfo"));
    host.add_fd(200, 3, "/dev/dri/card0", fixture("amdgpu_legacy.fdinfo"));

    auto snapshot = read_drm_usage(host.roots(), {100, 200});
    EXPECT_TRUE(snapshot.errors.empty());
    ASSERT_EQ(snapshot.devices.size(), 2u);
    ASSERT_EQ(snapshot.processes.size(), 3u);
    EXPECT_EQ(snapshot.processes[0].pid, 100);
    EXPECT_EQ(snapshot.processes[0].pci_bus_id, "0000:03:00.0");
    EXPECT_EQ(snapshot.processes[0].memory, 23992 * kKiB);
    EXPECT_FALSE(snapshot.processes[0].utilization);  // one read: nothing to compare
    EXPECT_EQ(snapshot.processes[1].pid, 100);
    EXPECT_EQ(snapshot.processes[1].pci_bus_id, "0000:04:00.0");
    EXPECT_EQ(snapshot.processes[1].memory, 544428 * kKiB);
    EXPECT_EQ(snapshot.processes[2].pid, 200);
    EXPECT_EQ(snapshot.processes[2].memory, 65536 * kKiB);
}

TEST(DrmUsage, I915LocalMemory) {
    DrmHost host;
    host.add_card(0, "0000:03:00.0", "i915");
    host.add_fd(7, 4, "/dev/dri/renderD128", fixture("i915_dg2.fdinfo"));
    auto snapshot = read_drm_usage(host.roots(), {7});
    ASSERT_EQ(snapshot.processes.size(), 1u);
    EXPECT_EQ(snapshot.processes[0].memory, 1536 * kKiB);
}

TEST(DrmUsage, SharedClientCountedOnceForTheFirstPid) {
    DrmHost host;
    host.add_card(0, "0000:03:00.0", "amdgpu");
    // Client 1 held by two fds of pid 10 (dup) and by pid 11 (fork or
    // SCM_RIGHTS); client 2 is pid 11's own.
    host.add_fd(10, 3, "/dev/dri/renderD128", amdgpu_client(1, "1024 KiB"));
    host.add_fd(10, 4, "/dev/dri/renderD128", amdgpu_client(1, "1024 KiB"));
    host.add_fd(11, 3, "/dev/dri/renderD128", amdgpu_client(1, "1024 KiB"));
    host.add_fd(11, 9, "/dev/dri/renderD128", amdgpu_client(2, "2 MiB"));

    auto snapshot = read_drm_usage(host.roots(), {11, 10});
    ASSERT_EQ(snapshot.processes.size(), 1u);
    EXPECT_EQ(snapshot.processes[0].pid, 11);
    EXPECT_EQ(snapshot.processes[0].memory, 1 * kMiB + 2 * kMiB);

    snapshot = read_drm_usage(host.roots(), {10, 11});
    ASSERT_EQ(snapshot.processes.size(), 2u);
    EXPECT_EQ(snapshot.processes[0].pid, 10);
    EXPECT_EQ(snapshot.processes[0].memory, 1 * kMiB);
    EXPECT_EQ(snapshot.processes[1].pid, 11);
    EXPECT_EQ(snapshot.processes[1].memory, 2 * kMiB);
}

TEST(DrmUsage, SameClientIdOnTwoDevicesIsTwoClients) {
    DrmHost host;
    host.add_card(0, "0000:03:00.0", "amdgpu");
    host.add_card(1, "0000:04:00.0", "amdgpu");
    std::string a = amdgpu_client(5, "1 MiB");
    host.add_fd(10, 3, "/dev/dri/renderD128", a);
    host.add_fd(10, 4, "/dev/dri/renderD129", with_pdev(a, "0000:03:00.0", "0000:04:00.0"));
    auto snapshot = read_drm_usage(host.roots(), {10});
    ASSERT_EQ(snapshot.processes.size(), 2u);
    EXPECT_EQ(snapshot.processes[0].memory, kMiB);
    EXPECT_EQ(snapshot.processes[1].memory, kMiB);
}

TEST(DrmUsage, OnlyDriFdsAreRead) {
    DrmHost host;
    host.add_card(0, "0000:03:00.0", "amdgpu");
    std::string trap = amdgpu_client(1, "1 MiB");  // would count if read
    host.add_fd(10, 0, "/dev/null", trap);
    host.add_fd(10, 1, "socket:[12345]", trap);
    host.add_fd(10, 2, "/tmp/dev/dri/renderD128", trap);
    host.add_fd(10, 3, "/dev/dri/renderD128x", trap);
    host.add_fd(10, 4, "/dev/dri/by-path/pci-0000:03:00.0-render", trap);
    host.add_fd(10, 5, "/dev/dri/renderD128", amdgpu_client(2, "3 KiB"));
    auto snapshot = read_drm_usage(host.roots(), {10});
    ASSERT_EQ(snapshot.processes.size(), 1u);
    EXPECT_EQ(snapshot.processes[0].memory, 3 * kKiB);
}

TEST(DrmUsage, ClientsOfUnlistedDevicesOrWrongDriverIgnored) {
    DrmHost host;
    host.add_card(0, "0000:03:00.0", "amdgpu");
    host.add_card(1, "0000:65:00.0", "nvidia");
    std::string a = amdgpu_client(1, "1 MiB");
    host.add_fd(10, 3, "/dev/dri/renderD129", with_pdev(a, "0000:03:00.0", "0000:65:00.0"));
    host.add_fd(10, 4, "/dev/dri/renderD128", with_pdev(a, "amdgpu", "i915"));
    host.add_fd(10, 5, "/dev/dri/renderD128",
                "drm-driver:\tamdgpu\ndrm-pdev:\t0000:03:00.0\n"
                "drm-memory-vram:\t1 MiB\n");  // no client id
    auto snapshot = read_drm_usage(host.roots(), {10});
    EXPECT_EQ(snapshot.devices.size(), 1u);
    EXPECT_TRUE(snapshot.processes.empty());
}

TEST(DrmUsage, VanishedPidAndFdSkippedSilently) {
    DrmHost host;
    host.add_card(0, "0000:03:00.0", "amdgpu");
    host.add_fd(10, 3, "/dev/dri/renderD128", amdgpu_client(1, "1 MiB"));
    host.add_fd(10, 4, "/dev/dri/renderD128", amdgpu_client(2, "1 MiB"));
    fs::remove(host.roots().procfs / "10/fdinfo/4");  // closed between readlink and read
    auto snapshot = read_drm_usage(host.roots(), {999, 10});
    EXPECT_TRUE(snapshot.errors.empty());
    ASSERT_EQ(snapshot.processes.size(), 1u);
    EXPECT_EQ(snapshot.processes[0].memory, kMiB);
}

TEST(DrmUsage, CapsOnFdsAndFdinfoSizeAndErrors) {
    DrmHost host;
    host.add_card(0, "0000:03:00.0", "amdgpu");
    for (int fd = 0; fd < 10; ++fd)
        host.add_fd(10, fd, "/dev/dri/renderD128", amdgpu_client(100 + fd, "1 KiB"));
    // A long fdinfo whose vram line falls past the read cap, and one whose
    // vram line is cut by it.
    std::string padding = "pos:\t0\n" + std::string(200, 'x') + "\n";
    host.add_fd(20, 3, "/dev/dri/renderD128", padding + amdgpu_client(1, "1 KiB"));
    DrmReadLimits limits;
    limits.max_drm_fds_per_pid = 4;
    limits.max_fdinfo_bytes = 150;
    limits.max_errors = 1;
    auto snapshot = read_drm_usage(host.roots(), {10, 20}, limits);
    ASSERT_EQ(snapshot.processes.size(), 1u);
    EXPECT_EQ(snapshot.processes[0].pid, 10);
    EXPECT_EQ(snapshot.processes[0].memory, 4 * kKiB);
    ASSERT_EQ(snapshot.errors.size(), 1u);
    EXPECT_NE(snapshot.errors[0].find("over 4 DRM fds"), std::string::npos) << snapshot.errors[0];

    limits = {};
    limits.max_fds_per_pid = 3;
    limits.max_errors = 0;
    snapshot = read_drm_usage(host.roots(), {10, 10}, limits);
    ASSERT_EQ(snapshot.processes.size(), 1u);
    EXPECT_EQ(snapshot.processes[0].memory, 3 * kKiB);
    ASSERT_EQ(snapshot.errors.size(), 1u);  // the count of those left out
    EXPECT_EQ(snapshot.errors[0], "drm fdinfo: 2 more errors not listed");
}

TEST(DrmUsage, PidPathNotADirectoryIsAnError) {
    DrmHost host;
    host.add_card(0, "0000:03:00.0", "amdgpu");
    host.dir().write("proc/10", "not a directory");
    auto snapshot = read_drm_usage(host.roots(), {10});
    EXPECT_TRUE(snapshot.processes.empty());
    ASSERT_EQ(snapshot.errors.size(), 1u);
    EXPECT_NE(snapshot.errors[0].find("proc/10: Not a directory"), std::string::npos)
        << snapshot.errors[0];
}

// ---- utilization ----

TEST(DrmUsage, EngineNsBusyShareSinceLastRead) {
    DrmHost host;
    host.add_card(0, "0000:03:00.0", "amdgpu");
    auto engines = [](uint64_t gfx, uint64_t compute) {
        return "drm-engine-gfx:\t" + std::to_string(gfx) + " ns\ndrm-engine-compute:\t" +
               std::to_string(compute) + " ns\n";
    };
    host.add_fd(10, 3, "/dev/dri/renderD128", amdgpu_client(1, "1 MiB", engines(1000, 0)));
    host.add_fd(10, 4, "/dev/dri/renderD128", amdgpu_client(2, "1 MiB", engines(0, 0)));
    DrmUsageReader reader(host.roots());
    TimePoint t0{std::chrono::seconds(100)};
    auto first = reader.read({10}, t0);
    ASSERT_EQ(first.processes.size(), 1u);
    EXPECT_FALSE(first.processes[0].utilization);

    // One second later: client 1 ran gfx 300 ms, client 2 gfx 200 ms and
    // compute 100 ms: gfx is the busiest engine at 50 %.
    host.dir().write(host.roots().procfs / "10/fdinfo/3",
                     amdgpu_client(1, "1 MiB", engines(1000 + 300'000'000, 0)));
    host.dir().write(host.roots().procfs / "10/fdinfo/4",
                     amdgpu_client(2, "1 MiB", engines(200'000'000, 100'000'000)));
    auto second = reader.read({10}, t0 + std::chrono::seconds(1));
    ASSERT_EQ(second.processes.size(), 1u);
    ASSERT_TRUE(second.processes[0].utilization);
    EXPECT_NEAR(*second.processes[0].utilization, 50.0, 1e-9);

    // A counter that steps back counts as idle, and the larger value stands.
    host.dir().write(host.roots().procfs / "10/fdinfo/4",
                     amdgpu_client(2, "1 MiB", engines(0, 100'000'000)));
    auto third = reader.read({10}, t0 + std::chrono::seconds(2));
    ASSERT_TRUE(third.processes[0].utilization);
    EXPECT_NEAR(*third.processes[0].utilization, 0.0, 1e-9);
    host.dir().write(host.roots().procfs / "10/fdinfo/4",
                     amdgpu_client(2, "1 MiB", engines(250'000'000, 100'000'000)));
    auto fourth = reader.read({10}, t0 + std::chrono::seconds(3));
    EXPECT_NEAR(*fourth.processes[0].utilization, 5.0, 1e-9);  // 50 ms over 200 ms
}

TEST(DrmUsage, XeCyclesOverTotalCyclesAndCapacity) {
    DrmHost host;
    host.add_card(0, "0000:03:00.0", "xe");
    auto xe = [](uint64_t rcs, uint64_t ccs, uint64_t total) {
        std::string t = std::to_string(total);
        return "drm-driver:\txe\ndrm-client-id:\t3\ndrm-pdev:\t0000:03:00.0\n"
               "drm-resident-vram0:\t1 MiB\ndrm-cycles-rcs:\t" +
               std::to_string(rcs) + "\ndrm-total-cycles-rcs:\t" + t + "\ndrm-cycles-ccs:\t" +
               std::to_string(ccs) + "\ndrm-total-cycles-ccs:\t" + t +
               "\ndrm-engine-capacity-ccs:\t4\n";
    };
    host.add_fd(10, 3, "/dev/dri/renderD128", xe(0, 0, 1000));
    DrmUsageReader reader(host.roots());
    TimePoint t0{std::chrono::seconds(1)};
    (void)reader.read({10}, t0);
    // rcs 250 of 1000 cycles: 25 %; ccs 2000 of 4 x 1000: 50 %.
    host.dir().write(host.roots().procfs / "10/fdinfo/3", xe(250, 2000, 2000));
    auto snapshot = reader.read({10}, t0 + std::chrono::seconds(1));
    ASSERT_EQ(snapshot.processes.size(), 1u);
    EXPECT_EQ(snapshot.processes[0].memory, kMiB);
    ASSERT_TRUE(snapshot.processes[0].utilization);
    EXPECT_NEAR(*snapshot.processes[0].utilization, 50.0, 1e-9);
}

}  // namespace
}  // namespace infervisor
