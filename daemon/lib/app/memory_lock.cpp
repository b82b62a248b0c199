#include "app/memory_lock.h"

#include <link.h>
#include <linux/capability.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/capabilities.h"
#include "base/file_io.h"

namespace infervisor {

namespace {

constexpr int kOwnMappingBytes = 128 << 10;

struct OwnSegments {
    std::size_t bytes = 0;
    int error = 0;  // the first mlock() errno, 0 when all were locked
};

// dl_iterate_phdr calls this for the executable first (its dlpi_name is
// empty), then for each shared library; only the executable is wanted.
int lock_executable_segments(dl_phdr_info* info, std::size_t, void* data) {
    auto& segments = *static_cast<OwnSegments*>(data);
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& header = info->dlpi_phdr[i];
        if (header.p_type != PT_LOAD || header.p_memsz == 0) continue;
        std::uintptr_t start = info->dlpi_addr + header.p_vaddr;
        std::uintptr_t end = start + header.p_memsz;
        start &= ~(page - 1);
        end = (end + page - 1) & ~(page - 1);
        // mlock() reads the range in and pins it, whatever mlockall's
        // MCL_ONFAULT says for the rest.
        if (::mlock(reinterpret_cast<void*>(start), end - start) < 0) {
            if (segments.error == 0) segments.error = errno;
            continue;
        }
        segments.bytes += end - start;
    }
    return 1;  // the executable only: stop here
}

}  // namespace

Result<LockedMemory> lock_own_memory() {
    rlimit limit{};
    bool unlimited = ::getrlimit(RLIMIT_MEMLOCK, &limit) == 0 && limit.rlim_cur == RLIM_INFINITY;
    if (!unlimited && !has_effective_capability(CAP_IPC_LOCK))
        return plain_error("RLIMIT_MEMLOCK is " + std::to_string(limit.rlim_cur) +
                           " bytes and CAP_IPC_LOCK is missing (run through infervisord.service, "
                           "which sets LimitMEMLOCK=infinity)");
    // Before any thread exists, so that every thread allocates from the
    // main arena. Fixed thresholds also stop glibc from raising them as
    // large blocks are freed.
    ::mallopt(M_ARENA_MAX, 1);
    ::mallopt(M_MMAP_THRESHOLD, kOwnMappingBytes);
    ::mallopt(M_TRIM_THRESHOLD, kOwnMappingBytes);
    if (::mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) < 0)
        return errno_error("mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT)");
    OwnSegments segments;
    ::dl_iterate_phdr(lock_executable_segments, &segments);
    if (segments.error != 0) {
        errno = segments.error;
        return errno_error("mlock of the daemon's executable");
    }
    return LockedMemory{segments.bytes};
}

long long pinned_bytes() {
    auto smaps = read_file("/proc/self/smaps");
    if (!smaps) return -1;
    long long total_kib = 0, rss_kib = 0;
    std::string_view rest(*smaps);
    while (!rest.empty()) {
        std::size_t end = rest.find('\n');
        std::string_view line = rest.substr(0, end);
        rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
        if (line.starts_with("Rss:")) rss_kib = std::strtoll(line.data() + 4, nullptr, 10);
        if (line.starts_with("VmFlags:") && line.find(" lo") != std::string_view::npos)
            total_kib += rss_kib;
    }
    return total_kib << 10;
}

}  // namespace infervisor
