// GpuAssignment: a worker's `gpu.devices` (gpu/gpu_spec.h) resolved against
// the host's GPUs at a start, and the environment that tells its engine
// which to use.
//
// Contract: every selector must name a device the host has now: an index is
// NVML's (NVIDIA devices only; CUDA's own default order is by speed, not
// NVML's, hence CUDA_DEVICE_ORDER=PCI_BUS_ID and UUIDs rather than indices),
// a UUID matches an NVIDIA or AMD GPU's, a PCI address any vendor's. One that
// does not is an error naming it; a device in error (GpuDevice::fault) is an
// error with code EWOULDBLOCK: a worker started on a broken card only
// crashes there, so the caller waits for the card instead.
//
// Each vendor's runtime is told its own devices (a worker may name several
// vendors' cards; each variable lists only its vendor's):
// - NVIDIA: CUDA_VISIBLE_DEVICES=<UUIDs>, CUDA_DEVICE_ORDER=PCI_BUS_ID.
// - AMD: ROCR_VISIBLE_DEVICES=<UUIDs>. ROCm's runtime takes "a list of device
//   indices or UUIDs" (ROCm docs, "GPU isolation techniques" and "ROCm
//   environment variables"; ROCm recommends it over HIP_VISIBLE_DEVICES on
//   Linux). Its indices follow its own enumeration (the KFD topology's
//   nodes), which is not DRM's card number and which nothing outside the
//   ROCm SDK tells us, so only the UUID is used: "GPU-" and amdgpu's sysfs
//   unique_id (gpu/drm_fdinfo.h). A card without one (GFX8 and older) is
//   refused; one whose unique_id cannot be read now waits (EWOULDBLOCK), as
//   an NVIDIA card without its UUID does: without the variable a worker
//   would see every card.
// - Intel: ZE_AFFINITY_MASK=<indices>, ZE_ENABLE_PCI_ID_DEVICE_ORDER=1.
//   Level Zero's mask takes indices only, in its device order; the second
//   variable makes that order PCI order (Intel compute-runtime,
//   ExecutionEnvironment::sortNeoDevices()), so a card's index is its rank
//   among the host's i915 and xe cards by PCI address. That holds while
//   Level Zero sees each of those cards as one device and sees them all: a
//   multi-tile card under ZE_FLAT_DEVICE_HIERARCHY=FLAT (Level Zero's
//   default) is one device per tile, and a card its driver does not take or
//   the worker cannot open shifts the ones after it.
//
// None of this stops a worker from opening another GPU's device file: the
// variables only steer the runtimes that honour them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "gpu/gpu_snapshot.h"
#include "gpu/gpu_spec.h"

namespace infervisor {

struct GpuAssignment {
    std::vector<GpuDevice> devices;  // in the order the spec names them
    std::map<std::string, std::string> environment;
};

// The environment variables an assignment sets: a worker's own
// `environment:` may not set them too (config/config_validator.cpp).
const std::vector<std::string>& gpu_environment_names();

Result<GpuAssignment> assign_gpus(const GpuSpec& spec, const std::vector<GpuDevice>& host);

// The device `selector` names among `host`; null when none.
const GpuDevice* find_gpu(const std::vector<GpuDevice>& host, const std::string& selector);

// "0 NVIDIA H100 (GPU-8f6c..., 0000:03:00.0)", for messages; "none" for none.
std::string describe_gpus(const std::vector<GpuDevice>& host);

}  // namespace infervisor
