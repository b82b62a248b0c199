// GpuDeviceGroups: the groups a worker needs to open the device nodes of the
// AMD and Intel cards it is given (gpu.devices), added to its supplementary
// groups at each start, whatever user it runs as. A `user: dynamic` uid is in
// no group but its own, and amdgpu, i915 and xe are used through the card's
// render node, /dev/dri/renderD<N>, which udev gives a group of its own
// ("render" on most distributions, "video" on some), and ROCm's /dev/kfd on
// AMD likewise. NVIDIA's nodes (/dev/nvidia*) are world-accessible: nothing.
//
// Contract: for each AMD or Intel card (GpuDevice::index, the N of
// <sysfs>/class/drm/cardN), its render node is the renderD* entry of
// <sysfs>/class/drm/cardN/device/drm (the kernel's), and the group is the
// owning group of <devfs>/dri/renderD<M>; for an AMD card also that of
// <devfs>/kfd. Only these groups, never any other: the nodes are
// lstat()ed (never followed) and must be character devices. A node that does
// not exist (a card without a render node, no ROCm driver) adds nothing. A
// node that everyone may read and write (0666) needs no group and gives
// none; one owned by root's group (gid 0) otherwise is an error: the worker would get
// group root; a node that is not a character device is an error too. Both
// name the node and the card. /sys and /dev are the kernel's and root's, never
// a path a worker controls; the roots are parameters so that tests use a
// temp dir.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <vector>

#include "base/result.h"
#include "gpu/gpu_snapshot.h"

namespace infervisor {

// The groups, in the order of `devices`, each once.
Result<std::vector<gid_t>> gpu_device_groups(const std::vector<GpuDevice>& devices,
                                             const std::filesystem::path& sysfs,
                                             const std::filesystem::path& devfs);

}  // namespace infervisor
