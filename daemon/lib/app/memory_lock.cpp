#include "app/memory_lock.h"

#include <linux/capability.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <string>

#include "base/capabilities.h"

namespace infervisor {

namespace {

constexpr int kOwnMappingBytes = 128 << 10;

}  // namespace

Result<void> lock_own_memory() {
    rlimit limit{};
    bool unlimited = ::getrlimit(RLIMIT_MEMLOCK, &limit) == 0 && limit.rlim_cur == RLIM_INFINITY;
    if (!unlimited && !has_effective_capability(CAP_IPC_LOCK))
        return plain_error("RLIMIT_MEMLOCK is " + std::to_string(limit.rlim_cur) +
                           " bytes and CAP_IPC_LOCK is missing (run through infervisord.service, "
                           "which sets LimitMEMLOCK=infinity)");
    // Fixed thresholds (which also stop glibc from raising them as large
    // blocks are freed): a block of 128 KiB or more (a configuration text,
    // a reply) is a mapping of its own, unmapped when freed.
    ::mallopt(M_MMAP_THRESHOLD, kOwnMappingBytes);
    ::mallopt(M_TRIM_THRESHOLD, kOwnMappingBytes);
    if (::mlockall(MCL_CURRENT) < 0) return errno_error("mlockall(MCL_CURRENT)");
    // Without MCL_CURRENT this keeps the pages locked above and only sets
    // how later mappings are locked.
    if (::mlockall(MCL_FUTURE | MCL_ONFAULT) < 0)
        return errno_error("mlockall(MCL_FUTURE | MCL_ONFAULT)");
    return {};
}

}  // namespace infervisor
