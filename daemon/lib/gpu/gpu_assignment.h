// GpuAssignment: a worker's `gpu.devices` (gpu/gpu_spec.h) resolved against
// the host's GPUs at a start, and the environment that tells its engine
// which to use.
//
// Contract: every selector must name a device the host has now: an index is
// NVML's (NVIDIA devices only; CUDA's own default order is by speed, not
// NVML's, hence CUDA_DEVICE_ORDER=PCI_BUS_ID and UUIDs rather than indices),
// a UUID matches an NVIDIA GPU's, a PCI address any vendor's. One that does
// not is an error naming it; a device in error (GpuDevice::fault) is an
// error with code EWOULDBLOCK: a worker started on a broken card only
// crashes there, so the caller waits for the card instead. NVIDIA
// devices become CUDA_VISIBLE_DEVICES=<UUIDs>; for AMD and Intel devices no
// variable is set yet (their runtimes' orders are not DRM's card numbers):
// they are watched, not assigned. None of this stops a worker from opening
// another GPU's device file.
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
