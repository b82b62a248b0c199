// NvmlLibrary against the stand-in libnvidia-ml (fake_nvml.cpp, its path in
// INFERVISOR_FAKE_NVML), fed by fixtures written here; the fixture's format
// is described at the top of fake_nvml.cpp.
#include "gpu/nvml_library.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "support/temp_dir.h"

namespace infervisor {
namespace {

constexpr const char* kH100 =
    "device 0 name=NVIDIA_H100_80GB_HBM3 uuid=GPU-1111 pci=00000000:03:00.0 "
    "total=85899345920 used=2147483648 util=37\n";
constexpr const char* kA100 =
    "device 1 name=NVIDIA_A100 uuid=GPU-2222 pci=00000000:C1:00.0 total=42949672960 "
    "used=1073741824 util=5\n";

std::string fake_library() {
    const char* path = std::getenv("INFERVISOR_FAKE_NVML");
    return path ? path : "";
}

// The fake reads FAKE_NVML_FIXTURE: the one variable these tests set,
// pointing into each test's own directory.
class NvmlLibraryTest : public ::testing::Test {
  protected:
    void SetUp() override {
        if (fake_library().empty())
            FAIL() << "INFERVISOR_FAKE_NVML is not set (tests/unit/meson.build sets it)";
        ::setenv("FAKE_NVML_FIXTURE", fixture_path().c_str(), 1);
    }
    void TearDown() override { ::unsetenv("FAKE_NVML_FIXTURE"); }

    std::string fixture_path() const { return (dir_.path() / "fixture").string(); }
    void write_fixture(const std::string& text) { dir_.write("fixture", text); }

    std::unique_ptr<NvmlLibrary> open_fake(const NvmlOpenOptions& options = {}) {
        auto opened = NvmlLibrary::open(fake_library(), options);
        EXPECT_TRUE(opened.ok()) << (opened.ok() ? "" : opened.error().message());
        return opened.ok() ? std::move(opened).value() : nullptr;
    }

    testing::TempDir dir_;
};

const GpuProcessUse* find_process(const GpuSnapshot& snapshot, pid_t pid) {
    for (const auto& use : snapshot.processes)
        if (use.pid == pid) return &use;
    return nullptr;
}

std::optional<uint64_t> memory_of(const GpuSnapshot& snapshot, pid_t pid) {
    const GpuProcessUse* use = find_process(snapshot, pid);
    return use ? std::optional<uint64_t>(use->memory) : std::nullopt;
}

// The process's utilization; the test fails when the process is not listed.
std::optional<double> utilization_of(const GpuSnapshot& snapshot, pid_t pid) {
    const GpuProcessUse* use = find_process(snapshot, pid);
    EXPECT_TRUE(use) << "pid " << pid << " is not listed";
    return use ? use->utilization : std::nullopt;
}

TEST(NvmlLibraryOpen, AMissingLibrarySaysWhy) {
    auto opened = NvmlLibrary::open("libnvidia-ml-absent.so.1");
    ASSERT_FALSE(opened.ok());
    EXPECT_NE(opened.error().message().find("libnvidia-ml-absent.so.1"), std::string::npos);
    EXPECT_NE(opened.error().message().find("cannot open shared object file"), std::string::npos);
}

TEST_F(NvmlLibraryTest, AMissingRequiredEntryPointIsNamed) {
    write_fixture(kH100);
    auto opened =
        NvmlLibrary::open(fake_library(), {.absent_symbols = {"nvmlDeviceGetMemoryInfo"}});
    ASSERT_FALSE(opened.ok());
    EXPECT_EQ(opened.error().message(), "the NVML library has no nvmlDeviceGetMemoryInfo");
}

TEST_F(NvmlLibraryTest, AFailedInitSaysNvmlsWords) {
    write_fixture("init_fails 9\n");
    auto opened = NvmlLibrary::open(fake_library());
    ASSERT_FALSE(opened.ok());
    EXPECT_EQ(opened.error().message(), "nvmlInit_v2: Driver Not Loaded");
}

TEST_F(NvmlLibraryTest, DevicesAreRead) {
    write_fixture(std::string(kH100) + kA100);
    auto nvml = open_fake();
    ASSERT_TRUE(nvml);
    GpuSnapshot snapshot = nvml->read();
    EXPECT_TRUE(snapshot.errors.empty());
    ASSERT_EQ(snapshot.devices.size(), 2u);
    const GpuDevice& h100 = snapshot.devices[0];
    EXPECT_EQ(h100.index, 0u);
    EXPECT_EQ(h100.vendor, "nvidia");
    EXPECT_EQ(h100.name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(h100.uuid, "GPU-1111");
    EXPECT_EQ(h100.pci_bus_id, "0000:03:00.0");
    EXPECT_EQ(h100.memory_total, 85899345920u);
    EXPECT_EQ(h100.memory_used, 2147483648u);
    EXPECT_EQ(h100.utilization, 37.0);
    EXPECT_TRUE(h100.fault.empty());
    EXPECT_EQ(snapshot.devices[1].pci_bus_id, "0000:c1:00.0");
}

TEST_F(NvmlLibraryTest, ProcessesAreReadPerDevice) {
    write_fixture(std::string(kH100) + kA100 +
                  "process 0 pid=1234 kind=compute used=1073741824\n"
                  "process 1 pid=1234 kind=compute used=536870912\n"
                  "process 1 pid=777 kind=graphics used=4096\n");
    auto nvml = open_fake();
    ASSERT_TRUE(nvml);
    GpuSnapshot snapshot = nvml->read();
    ASSERT_EQ(snapshot.processes.size(), 3u);
    uint64_t on_h100 = 0, on_a100 = 0;
    for (const auto& use : snapshot.processes) {
        if (use.pid != 1234) continue;
        (use.pci_bus_id == "0000:03:00.0" ? on_h100 : on_a100) = use.memory;
    }
    EXPECT_EQ(on_h100, 1073741824u);
    EXPECT_EQ(on_a100, 536870912u);
    ASSERT_TRUE(find_process(snapshot, 777));
    EXPECT_EQ(memory_of(snapshot, 777), 4096u);
    EXPECT_EQ(find_process(snapshot, 777)->pci_bus_id, "0000:c1:00.0");
}

TEST_F(NvmlLibraryTest, APidInBothListsCountsOnceWithTheLargerFigure) {
    write_fixture(std::string(kH100) +
                  "process 0 pid=42 kind=compute used=3000\n"
                  "process 0 pid=42 kind=graphics used=5000\n");
    auto nvml = open_fake();
    ASSERT_TRUE(nvml);
    GpuSnapshot snapshot = nvml->read();
    ASSERT_EQ(snapshot.processes.size(), 1u);
    EXPECT_EQ(snapshot.processes[0].memory, 5000u);
}

TEST_F(NvmlLibraryTest, AFigureNotAvailableLeavesTheProcessOut) {
    write_fixture(std::string(kH100) +
                  "process 0 pid=10 kind=compute used=na\n"
                  "process 0 pid=11 kind=compute used=na\n"
                  "process 0 pid=11 kind=graphics used=8192\n");
    auto nvml = open_fake();
    ASSERT_TRUE(nvml);
    GpuSnapshot snapshot = nvml->read();
    EXPECT_FALSE(find_process(snapshot, 10));
    ASSERT_TRUE(find_process(snapshot, 11));
    EXPECT_EQ(memory_of(snapshot, 11), 8192u);
}

TEST_F(NvmlLibraryTest, TheBufferGrowsPastTheFirstGuess) {
    std::string fixture = kH100;
    for (int i = 0; i < 200; ++i)
        fixture += "process 0 pid=" + std::to_string(1000 + i) +
                   " kind=compute used=" + std::to_string(1 << 20) + "\n";
    write_fixture(fixture);
    auto nvml = open_fake();
    ASSERT_TRUE(nvml);
    GpuSnapshot snapshot = nvml->read();
    EXPECT_TRUE(snapshot.errors.empty());
    EXPECT_EQ(snapshot.processes.size(), 200u);
    EXPECT_TRUE(find_process(snapshot, 1199));
}

TEST_F(NvmlLibraryTest, AListPastTheBoundIsAnError) {
    std::string fixture = kH100;
    for (unsigned i = 0; i <= kMaxNvmlEntries; ++i)
        fixture += "process 0 pid=" + std::to_string(1000 + i) + " kind=compute used=1\n";
    write_fixture(fixture);
    auto nvml = open_fake();
    ASSERT_TRUE(nvml);
    GpuSnapshot snapshot = nvml->read();
    EXPECT_TRUE(snapshot.processes.empty());
    ASSERT_EQ(snapshot.errors.size(), 1u);
    EXPECT_EQ(snapshot.errors[0],
              "device 0: nvmlDeviceGetComputeRunningProcesses_v3: more than 4096 entries");
}

TEST_F(NvmlLibraryTest, OlderDriversEntryPointsAreUsed) {
    write_fixture(std::string(kH100) +
                  "process 0 pid=42 kind=compute used=3000\n"
                  "process 0 pid=43 kind=compute used=7000\n"
                  "process 0 pid=44 kind=graphics used=9000\n");
    for (const auto& absent : std::vector<std::vector<std::string>>{
             {"nvmlDeviceGetComputeRunningProcesses_v3",
              "nvmlDeviceGetGraphicsRunningProcesses_v3"},
             {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v3",
              "nvmlDeviceGetComputeRunningProcesses_v2",
              "nvmlDeviceGetGraphicsRunningProcesses_v2"}}) {
        auto nvml = open_fake({.absent_symbols = absent});
        ASSERT_TRUE(nvml);
        GpuSnapshot snapshot = nvml->read();
        ASSERT_EQ(snapshot.processes.size(), 3u) << absent.size();
        EXPECT_EQ(memory_of(snapshot, 43), 7000u) << absent.size();
        EXPECT_EQ(memory_of(snapshot, 44), 9000u) << absent.size();
    }
}

TEST_F(NvmlLibraryTest, ALostGpuIsAFaultAndTheOthersAreStillRead) {
    write_fixture(std::string(kH100) + kA100 + "lost 0\n" +
                  "process 1 pid=5 kind=compute used=100\n");
    auto nvml = open_fake();
    ASSERT_TRUE(nvml);
    GpuSnapshot snapshot = nvml->read();
    EXPECT_TRUE(snapshot.errors.empty());
    ASSERT_EQ(snapshot.devices.size(), 2u);
    EXPECT_EQ(snapshot.devices[0].fault, "GPU is lost (fallen off the bus)");
    EXPECT_FALSE(snapshot.devices[0].memory_total);
    EXPECT_TRUE(snapshot.devices[1].fault.empty());
    EXPECT_EQ(snapshot.devices[1].memory_total, 42949672960u);
    ASSERT_EQ(snapshot.processes.size(), 1u);
    EXPECT_EQ(snapshot.processes[0].pid, 5);
}

TEST_F(NvmlLibraryTest, OtherFailuresAreErrorsAndNotSupportedIsSilent) {
    write_fixture(std::string(kH100) + kA100 +
                  "fail 0 memory 999\n"
                  "fail 0 utilization 3\n"
                  "fail 1 handle 4\n");
    auto nvml = open_fake();
    ASSERT_TRUE(nvml);
    GpuSnapshot snapshot = nvml->read();
    ASSERT_EQ(snapshot.errors.size(), 2u);
    EXPECT_EQ(snapshot.errors[0], "device 0: nvmlDeviceGetMemoryInfo: Unknown Error");
    EXPECT_EQ(snapshot.errors[1],
              "device 1: nvmlDeviceGetHandleByIndex_v2: Insufficient Permissions");
    ASSERT_EQ(snapshot.devices.size(), 1u);
    EXPECT_FALSE(snapshot.devices[0].memory_total);
    EXPECT_FALSE(snapshot.devices[0].utilization);
    EXPECT_EQ(snapshot.devices[0].uuid, "GPU-1111");
}

TEST_F(NvmlLibraryTest, ProcessUtilizationIsTheNewestSampleSinceTheLastRead) {
    write_fixture(std::string(kH100) +
                  "process 0 pid=1 kind=compute used=100 sm=20 ts=1000\n"
                  "process 0 pid=2 kind=compute used=100\n");
    auto nvml = open_fake();
    ASSERT_TRUE(nvml);
    GpuSnapshot first = nvml->read();
    EXPECT_EQ(utilization_of(first, 1), 20.0);
    EXPECT_EQ(utilization_of(first, 2), 0.0);  // no sample: no use

    // Nothing newer than 1000: NVML_ERROR_NOT_FOUND, nobody used it: 0.
    GpuSnapshot again = nvml->read();
    EXPECT_TRUE(again.errors.empty());
    EXPECT_EQ(utilization_of(again, 1), 0.0);

    write_fixture(std::string(kH100) +
                  "process 0 pid=1 kind=compute used=100 sm=60 ts=2000\n"
                  "process 0 pid=2 kind=compute used=100 sm=150 ts=2000\n");
    GpuSnapshot later = nvml->read();
    EXPECT_EQ(utilization_of(later, 1), 60.0);
    EXPECT_EQ(utilization_of(later, 2), 0.0);  // over 100 %: dropped
}

TEST_F(NvmlLibraryTest, WithoutTheUtilizationEntryPointThereIsNoFigure) {
    write_fixture(std::string(kH100) + "process 0 pid=1 kind=compute used=100 sm=20\n");
    auto nvml = open_fake({.absent_symbols = {"nvmlDeviceGetProcessUtilization"}});
    ASSERT_TRUE(nvml);
    GpuSnapshot snapshot = nvml->read();
    ASSERT_EQ(snapshot.processes.size(), 1u);
    EXPECT_FALSE(snapshot.processes[0].utilization);
}

TEST_F(NvmlLibraryTest, ValuesChangeBetweenReads) {
    write_fixture(std::string(kH100) + "process 0 pid=9 kind=compute used=1000\n");
    auto nvml = open_fake();
    ASSERT_TRUE(nvml);
    EXPECT_EQ(nvml->read().processes.at(0).memory, 1000u);

    write_fixture(
        "device 0 name=NVIDIA_H100 uuid=GPU-1111 pci=00000000:03:00.0 total=85899345920 "
        "used=4294967296 util=90\n"
        "process 0 pid=9 kind=compute used=3000\n"
        "process 0 pid=10 kind=compute used=5\n");
    GpuSnapshot snapshot = nvml->read();
    EXPECT_EQ(snapshot.devices.at(0).memory_used, 4294967296u);
    EXPECT_EQ(snapshot.devices.at(0).utilization, 90.0);
    EXPECT_EQ(memory_of(snapshot, 9), 3000u);
    EXPECT_EQ(memory_of(snapshot, 10), 5u);
}

TEST_F(NvmlLibraryTest, MigDevicesAreReadAndSummedUnderTheParent) {
    write_fixture(
        "device 0 name=NVIDIA_A100 uuid=GPU-3333 pci=00000000:81:00.0 total=42949672960 "
        "used=1000 mig=2\n"
        "process 0 pid=7 kind=compute used=100 mig=0\n"
        "process 0 pid=7 kind=compute used=200 mig=1\n"
        "process 0 pid=8 kind=compute used=50 mig=1\n");
    auto nvml = open_fake();
    ASSERT_TRUE(nvml);
    GpuSnapshot snapshot = nvml->read();
    EXPECT_TRUE(snapshot.errors.empty());
    ASSERT_EQ(snapshot.devices.size(), 1u);
    EXPECT_FALSE(snapshot.devices[0].utilization);  // not supported in MIG mode
    ASSERT_EQ(snapshot.processes.size(), 2u);
    EXPECT_EQ(memory_of(snapshot, 7), 300u);
    ASSERT_TRUE(find_process(snapshot, 7));
    EXPECT_EQ(find_process(snapshot, 7)->pci_bus_id, "0000:81:00.0");
    EXPECT_EQ(memory_of(snapshot, 8), 50u);
    EXPECT_FALSE(utilization_of(snapshot, 8));
}

TEST_F(NvmlLibraryTest, ACountFailureIsOneError) {
    write_fixture(kH100);
    auto nvml = open_fake();
    ASSERT_TRUE(nvml);
    write_fixture("this is not a fixture line\n");  // the fake answers NVML_ERROR_UNKNOWN
    GpuSnapshot snapshot = nvml->read();
    EXPECT_TRUE(snapshot.devices.empty());
    ASSERT_EQ(snapshot.errors.size(), 1u);
    EXPECT_EQ(snapshot.errors[0], "nvmlDeviceGetCount_v2: Unknown Error");
}

TEST_F(NvmlLibraryTest, UncorrectedEccErrorsAreAFaultAndTheCardIsStillRead) {
    std::string h100 = kH100;
    h100.pop_back();
    write_fixture(h100 + " ecc=3\n" + kA100 + "process 0 pid=42 kind=compute used=4096\n");
    auto nvml = open_fake();
    ASSERT_TRUE(nvml);
    GpuSnapshot snapshot = nvml->read();
    EXPECT_TRUE(snapshot.errors.empty());
    ASSERT_EQ(snapshot.devices.size(), 2u);
    EXPECT_EQ(snapshot.devices[0].fault,
              "3 uncorrected ECC errors since the driver loaded (reset the GPU)");
    EXPECT_EQ(snapshot.devices[0].memory_total, 85899345920u);
    EXPECT_EQ(memory_of(snapshot, 42), 4096u);
    EXPECT_EQ(snapshot.devices[1].fault, "");
}

TEST_F(NvmlLibraryTest, ARowRemapPendingOrFailedIsAFault) {
    std::string h100 = kH100, a100 = kA100;
    h100.pop_back();
    a100.pop_back();
    write_fixture(h100 + " remap=pending\n" + a100 + " remap=failed ecc=1\n");
    auto nvml = open_fake();
    ASSERT_TRUE(nvml);
    GpuSnapshot snapshot = nvml->read();
    ASSERT_EQ(snapshot.devices.size(), 2u);
    EXPECT_EQ(snapshot.devices[0].fault, "a row remap is pending (reset the GPU)");
    EXPECT_EQ(snapshot.devices[1].fault,
              "1 uncorrected ECC error since the driver loaded (reset the GPU); "
              "row remapping failed (the GPU needs service)");
}

TEST_F(NvmlLibraryTest, WithoutTheHealthEntryPointsOrTheirSupportThereIsNoFaultNorError) {
    std::string h100 = kH100;
    h100.pop_back();
    write_fixture(h100 + " ecc=3 remap=pending\nxid 0 79\n");
    auto nvml = open_fake({.absent_symbols = {"nvmlDeviceGetTotalEccErrors",
                                              "nvmlDeviceGetRemappedRows", "nvmlEventSetWait_v2"}});
    ASSERT_TRUE(nvml);
    write_fixture(h100 + " ecc=3 remap=pending\nxid 0 79\nxid 0 79\n");
    GpuSnapshot snapshot = nvml->read();
    EXPECT_TRUE(snapshot.errors.empty());
    ASSERT_EQ(snapshot.devices.size(), 1u);
    EXPECT_EQ(snapshot.devices[0].fault, "");
    EXPECT_TRUE(snapshot.xids.empty());

    write_fixture(h100 + " ecc=3 remap=pending\nfail 0 ecc 3\nfail 0 remap 3\nfail 0 register 3\n");
    nvml = open_fake();
    ASSERT_TRUE(nvml);
    write_fixture(h100 +
                  " ecc=3 remap=pending\nfail 0 ecc 3\nfail 0 remap 3\nfail 0 register 3\n"
                  "xid 0 79\n");
    snapshot = nvml->read();
    EXPECT_TRUE(snapshot.errors.empty());
    EXPECT_EQ(snapshot.devices[0].fault, "");
    EXPECT_TRUE(snapshot.xids.empty());
}

TEST_F(NvmlLibraryTest, XidEventsAreDrainedOnceEach) {
    write_fixture(std::string(kH100) + kA100);
    auto nvml = open_fake();
    ASSERT_TRUE(nvml);
    EXPECT_TRUE(nvml->read().xids.empty());
    write_fixture(std::string(kH100) + kA100 + "xid 1 79\nxid 0 13\n");
    GpuSnapshot snapshot = nvml->read();
    EXPECT_TRUE(snapshot.errors.empty());
    ASSERT_EQ(snapshot.xids.size(), 2u);
    EXPECT_EQ(snapshot.xids[0].pci_bus_id, "0000:c1:00.0");
    EXPECT_EQ(snapshot.xids[0].xid, 79u);
    EXPECT_EQ(snapshot.xids[1].pci_bus_id, "0000:03:00.0");
    EXPECT_EQ(snapshot.xids[1].xid, 13u);
    EXPECT_TRUE(nvml->read().xids.empty()) << "each once";
    EXPECT_EQ(snapshot.devices[0].fault, "") << "an Xid alone is no fault";
}

TEST_F(NvmlLibraryTest, TheDrainIsBoundedPerRead) {
    write_fixture(kH100);
    auto nvml = open_fake();
    ASSERT_TRUE(nvml);
    std::string fixture = kH100;
    for (unsigned i = 0; i < kMaxXidEventsPerRead + 3; ++i) fixture += "xid 0 31\n";
    write_fixture(fixture);
    EXPECT_EQ(nvml->read().xids.size(), kMaxXidEventsPerRead);
    EXPECT_EQ(nvml->read().xids.size(), 3u);
}

TEST_F(NvmlLibraryTest, ADriverUpgradeMakesTheLibraryStale) {
    write_fixture(kH100);
    auto nvml = open_fake();
    ASSERT_TRUE(nvml);
    EXPECT_EQ(nvml->read().devices.size(), 1u);
    EXPECT_EQ(nvml->stale(), "");
    write_fixture(std::string(kH100) + "stale 18\n");
    GpuSnapshot snapshot = nvml->read();
    EXPECT_TRUE(snapshot.devices.empty());
    EXPECT_EQ(nvml->stale(), "nvmlDeviceGetCount_v2: RM has detected an NVML/RM version mismatch");
    nvml->close();
    nvml->close();  // idempotent
    EXPECT_EQ(nvml->read().errors, std::vector<std::string>{"NVML: closed"});
    // The new driver is not loaded yet: open says so.
    auto reopened = NvmlLibrary::open(fake_library());
    ASSERT_FALSE(reopened.ok());
    EXPECT_EQ(reopened.error().message(),
              "nvmlInit_v2: RM has detected an NVML/RM version mismatch");
}

TEST_F(NvmlLibraryTest, OneDeviceFailingIsNotStale) {
    write_fixture(std::string(kH100) + kA100);
    auto nvml = open_fake();
    ASSERT_TRUE(nvml);
    write_fixture(std::string(kH100) + kA100 + "fail 1 handle 9\n");
    GpuSnapshot snapshot = nvml->read();
    EXPECT_EQ(snapshot.devices.size(), 1u);
    EXPECT_EQ(nvml->stale(), "");
    write_fixture(std::string(kH100) + kA100 + "fail 0 handle 9\nfail 1 handle 1\n");
    nvml->read();
    EXPECT_EQ(nvml->stale(), "device 0: nvmlDeviceGetHandleByIndex_v2: Driver Not Loaded");
}

}  // namespace
}  // namespace infervisor
