#include "app/memory_lock.h"

#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <string>

#include "base/capabilities.h"

namespace infervisor {

Result<void> lock_own_memory() {
    rlimit limit{};
    bool unlimited = ::getrlimit(RLIMIT_MEMLOCK, &limit) == 0 && limit.rlim_cur == RLIM_INFINITY;
    if (!unlimited && !has_effective_capability(CAP_IPC_LOCK))
        return plain_error("RLIMIT_MEMLOCK is " + std::to_string(limit.rlim_cur) +
                           " bytes and CAP_IPC_LOCK is missing (run through infervisord.service, "
                           "which sets LimitMEMLOCK=infinity)");
    if (::mlockall(MCL_CURRENT) < 0) return errno_error("mlockall(MCL_CURRENT)");
    // Without MCL_CURRENT this keeps the pages locked above and only sets
    // how later mappings are locked.
    if (::mlockall(MCL_FUTURE | MCL_ONFAULT) < 0)
        return errno_error("mlockall(MCL_FUTURE | MCL_ONFAULT)");
    return {};
}

}  // namespace infervisor
