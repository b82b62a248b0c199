// lock_own_memory locks the process, so every case runs in a forked child and
// reports through its exit status: the test binary itself stays unlocked.
#include "app/memory_lock.h"

#include <gtest/gtest.h>
#include <link.h>
#include <linux/capability.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/capabilities.h"
#include "base/file_io.h"

namespace infervisor {
namespace {

// VmLck of this process in KiB (the size of its locked mappings).
long locked_kib() {
    auto status = read_file("/proc/self/status");
    if (!status) return -1;
    auto at = status->find("\nVmLck:");
    return at == std::string::npos ? -1 : std::strtol(status->c_str() + at + 7, nullptr, 10);
}

// Runs `child` in a fork; returns its exit code (or 100 + signal number).
int in_child(const std::function<int()>& child) {
    pid_t pid = ::fork();
    if (pid == 0) ::_exit(child());
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

long pinned_kib() { return static_cast<long>(pinned_bytes() >> 10); }

bool drop_effective_ipc_lock() {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (::syscall(SYS_capget, &header, data) < 0) return false;
    data[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
    return ::syscall(SYS_capset, &header, data) == 0;
}

bool can_lock() {
    rlimit limit{};
    return has_effective_capability(CAP_IPC_LOCK) ||
           (::getrlimit(RLIMIT_MEMLOCK, &limit) == 0 && limit.rlim_cur == RLIM_INFINITY);
}

TEST(MemoryLock, LocksTheProcessAndMemoryAllocatedLater) {
    if (!can_lock())
        GTEST_SKIP() << "needs CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK (run as root)";
    EXPECT_EQ(in_child([] {
                  if (locked_kib() != 0) return 1;  // nothing locked before
                  if (!lock_own_memory()) return 2;
                  long before = locked_kib();
                  if (before <= 0) return 3;
                  // A mapping made after the call is locked too (MCL_FUTURE).
                  std::vector<char> later(64 << 20);
                  std::memset(later.data(), 1, later.size());
                  return locked_kib() >= before + (64 << 10) ? 0 : 4;
              }),
              0);
}

TEST(MemoryLock, TheExecutableIsPinnedWholeAndOtherMemoryOnlyOnceTouched) {
    if (!can_lock())
        GTEST_SKIP() << "needs CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK (run as root)";
    EXPECT_EQ(in_child([] {
                  constexpr std::size_t kMapping = 32 << 20;
                  // Mapped before the call, never touched: locked on fault,
                  // so it costs nothing until used.
                  void* untouched = ::mmap(nullptr, kMapping, PROT_READ | PROT_WRITE,
                                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                  if (untouched == MAP_FAILED) return 1;
                  auto locked = lock_own_memory();
                  if (!locked) return 2;
                  if (locked->own_code_bytes == 0) return 3;
                  long pinned = pinned_kib();
                  // The executable (this test binary) is read in and pinned
                  // whole, the untouched mapping is not.
                  if (pinned < static_cast<long>(locked->own_code_bytes >> 10)) return 4;
                  if (pinned >= static_cast<long>((locked->own_code_bytes + kMapping) >> 10))
                      return 5;
                  std::memset(untouched, 1, kMapping);
                  return pinned_kib() >= pinned + static_cast<long>(kMapping >> 10) ? 0 : 6;
              }),
              0);
}

// A read-only private mapping of a file this test writes: the shape of a
// shared library's code and constants.
struct MappedFile {
    void* at = MAP_FAILED;
    std::size_t size = 0;
};

MappedFile map_read_only_file(std::size_t size, char fill) {
    char path[] = "/tmp/memory-lock-test-XXXXXX";
    int fd = ::mkstemp(path);
    if (fd < 0) return {};
    ::unlink(path);
    std::vector<char> bytes(size, fill);
    bool written = ::write(fd, bytes.data(), size) == static_cast<ssize_t>(size);
    void* at = written ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    ::close(fd);
    return {at, size};
}

// Reads every page: what start-up does to a library's symbol tables.
long read_every_page(const MappedFile& file) {
    long sum = 0;
    for (std::size_t i = 0; i < file.size; i += 4096)
        sum += static_cast<const volatile char*>(file.at)[i];
    return sum;
}

TEST(MemoryLock, FilePagesReadBeforeTheLockArePinnedOnlyOnceReadAgain) {
    if (!can_lock())
        GTEST_SKIP() << "needs CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK (run as root)";
    EXPECT_EQ(in_child([] {
                  constexpr std::size_t kFile = 16 << 20;
                  MappedFile file = map_read_only_file(kFile, 7);
                  if (file.at == MAP_FAILED) return 1;
                  if (read_every_page(file) != 7 * static_cast<long>(kFile / 4096)) return 2;
                  auto locked = lock_own_memory();
                  if (!locked) return 3;
                  if (locked->dropped_bytes < kFile) return 4;
                  long pinned = pinned_kib();
                  // Read before the lock, not since: not pinned.
                  if (pinned >= static_cast<long>((locked->own_code_bytes + kFile) >> 10)) return 5;
                  // Read again, from the page cache, and pinned then.
                  if (read_every_page(file) != 7 * static_cast<long>(kFile / 4096)) return 6;
                  return pinned_kib() >= pinned + static_cast<long>(kFile >> 10) ? 0 : 7;
              }),
              0);
}

int add_load_segments(dl_phdr_info* info, std::size_t, void* data) {
    auto& total = *static_cast<std::size_t*>(data);
    for (int i = 0; i < info->dlpi_phnum; ++i)
        if (info->dlpi_phdr[i].p_type == PT_LOAD) total += info->dlpi_phdr[i].p_memsz;
    return 1;  // the executable only
}

// An exception is thrown only on an error: the executable's unwind tables
// are not pinned with the rest of it, and a throw after the lock still
// finds them.
TEST(MemoryLock, TheExecutablesUnwindTablesAreLockedOnlyOnceRead) {
    if (!can_lock())
        GTEST_SKIP() << "needs CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK (run as root)";
    EXPECT_EQ(in_child([] {
                  std::size_t segments = 0;
                  ::dl_iterate_phdr(add_load_segments, &segments);
                  auto locked = lock_own_memory();
                  if (!locked) return 3;
                  if (locked->own_code_bytes + (64 << 10) > segments) return 4;
                  try {
                      throw std::runtime_error("after the lock");
                  } catch (const std::runtime_error& e) {
                      return std::string(e.what()) == "after the lock" ? 0 : 5;
                  }
              }),
              0);
}

// The NSS modules' mappings in /proc/self/smaps: how many, their Rss, and
// whether any of them is locked.
struct NssMappings {
    int count = 0;
    long rss_kib = 0;
    bool any_locked = false;
};

NssMappings nss_mappings() {
    NssMappings out;
    auto smaps = read_file("/proc/self/smaps");
    if (!smaps) return out;
    bool in_nss = false;
    long rss = 0;
    std::size_t at = 0;
    while (at < smaps->size()) {
        std::size_t end = smaps->find('\n', at);
        std::string line = smaps->substr(at, end - at);
        at = end == std::string::npos ? smaps->size() : end + 1;
        std::string range = line.substr(0, line.find(' '));
        bool header = range.find('-') != std::string::npos &&
                      range.find_first_not_of("0123456789abcdef-") == std::string::npos;
        if (header) {
            in_nss = line.find("/libnss_") != std::string::npos;
            if (in_nss) ++out.count;
        } else if (in_nss && line.rfind("Rss:", 0) == 0) {
            rss = std::strtol(line.c_str() + 4, nullptr, 10);
            out.rss_kib += rss;
        } else if (in_nss && line.rfind("VmFlags:", 0) == 0 &&
                   line.find(" lo") != std::string::npos) {
            out.any_locked = true;
        }
    }
    return out;
}

// User lookups are not what a thrash needs: the NSS modules stay out of the
// lock, and what a lookup maps of them is given back.
TEST(MemoryLock, TheUserLookupModulesAreLeftUnlockedAndTheirPagesGivenBack) {
    if (!can_lock())
        GTEST_SKIP() << "needs CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK (run as root)";
    int code = in_child([] {
        auto locked = lock_own_memory();
        if (!locked) return 3;
        NssMappings before = nss_mappings();
        if (before.count == 0) return 77;  // no module outside libc (nsswitch: files only)
        if (before.any_locked) return 4;
        // A uid no one has goes through every module.
        for (uid_t uid = 3'999'000; uid < 3'999'050; ++uid) (void)::getpwuid(uid);
        if (nss_mappings().any_locked) return 5;
        if (locked->unlocked_code.empty()) return 6;
        long used = nss_mappings().rss_kib;
        release_unlocked_code(locked->unlocked_code);
        long after = nss_mappings().rss_kib;
        return after < used || used == 0 ? 0 : 7;
    });
    if (code == 77) GTEST_SKIP() << "no NSS module outside libc is loaded on this host";
    EXPECT_EQ(code, 0);
}

TEST(MemoryLock, AReadOnlyMappingWrittenBeforeItWasMadeReadOnlyKeepsWhatWasWritten) {
    if (!can_lock())
        GTEST_SKIP() << "needs CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK (run as root)";
    EXPECT_EQ(in_child([] {
                  // As the dynamic linker does to RELRO: a private file
                  // mapping written (relocated), then made read-only. Its
                  // file says 7; dropping the page would bring 7 back.
                  constexpr std::size_t kFile = 64 << 10;
                  MappedFile file = map_read_only_file(kFile, 7);
                  if (file.at == MAP_FAILED) return 1;
                  if (::mprotect(file.at, kFile, PROT_READ | PROT_WRITE) < 0) return 2;
                  static_cast<char*>(file.at)[8192] = 42;
                  if (::mprotect(file.at, kFile, PROT_READ) < 0) return 3;
                  if (!lock_own_memory()) return 4;
                  return static_cast<const volatile char*>(file.at)[8192] == 42 ? 0 : 5;
              }),
              0);
}

TEST(MemoryLock, WithAFiniteLimitAndNoCapabilityNothingIsLockedAndTheErrorSaysWhy) {
    EXPECT_EQ(in_child([] {
                  rlimit small{64 << 10, 64 << 10};
                  if (::setrlimit(RLIMIT_MEMLOCK, &small) < 0) return 1;
                  if (has_effective_capability(CAP_IPC_LOCK) && !drop_effective_ipc_lock())
                      return 2;
                  auto r = lock_own_memory();
                  if (r) return 3;
                  if (r.error().message().find("RLIMIT_MEMLOCK") == std::string::npos) return 4;
                  if (r.error().message().find("CAP_IPC_LOCK") == std::string::npos) return 5;
                  return locked_kib() == 0 ? 0 : 6;
              }),
              0);
}

TEST(Capabilities, EffectiveSetMatchesWhatCapgetReports) {
    // Root holds CAP_IPC_LOCK unless dropped; dropping it shows at once.
    EXPECT_EQ(in_child([] {
                  bool had = has_effective_capability(CAP_IPC_LOCK);
                  if (had != (::geteuid() == 0)) return 1;
                  if (!had) return 0;
                  if (!drop_effective_ipc_lock()) return 2;
                  return has_effective_capability(CAP_IPC_LOCK) ? 3 : 0;
              }),
              0);
    EXPECT_FALSE(has_effective_capability(-1));
    EXPECT_FALSE(has_effective_capability(64));
}

}  // namespace
}  // namespace infervisor
