// capabilities: what this process may do, from capget(2), without libcap.
#pragma once

namespace infervisor {

// True when `cap` (a CAP_* number from <linux/capability.h>) is in this
// process's effective set. False if capget fails.
bool has_effective_capability(int cap);

}  // namespace infervisor
