#include "base/capabilities.h"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace infervisor {

bool has_effective_capability(int cap) {
    if (cap < 0 || cap >= 64) return false;
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (::syscall(SYS_capget, &header, data) < 0) return false;
    return data[cap / 32].effective & (1u << (cap % 32));
}

}  // namespace infervisor
