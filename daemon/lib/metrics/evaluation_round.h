// EvaluationRound: what one policy evaluation round saw, handed by the
// PolicyRunner to its observers (the metrics) after the round. The samples
// are the ones the engine judged; nothing is read again for the metrics.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "gpu/gpu_snapshot.h"
#include "policy/samples.h"

namespace infervisor {

struct SampledWorker {
    std::string name;
    WorkerSample sample;
    // memory.growth as the engine computed it (% of memory.max per minute);
    // empty until the engine has enough history.
    std::optional<double> growth_percent_per_min;
};

struct EvaluationRound {
    TimePoint time{};
    std::vector<SampledWorker> workers;  // running and starting workers
    HostSample host;
    // The host's GPUs at the reading the samples took (services/gpu_watch.h);
    // empty when none is read or the reading is stale.
    std::vector<GpuDevice> gpus;
    // Xid events reported since the daemon started, per (device, Xid code)
    // (GpuWatch::xid_counts()); empty on a host without NVIDIA GPUs.
    std::map<std::pair<std::string, uint64_t>, uint64_t> gpu_xids;
    std::chrono::microseconds evaluation_time{};  // sampling + engine + actions, on the loop
    // How late the sampling tick that started this round fired (0 for a
    // kernel wake-up): time the event loop was busy with something else.
    std::chrono::microseconds tick_lateness{};
};

}  // namespace infervisor
