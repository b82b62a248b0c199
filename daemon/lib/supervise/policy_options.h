// The policy engine's options as the daemon derives them from its settings,
// so the daemon and the trace tests run the engine exactly alike.
//
// Windows scale with sample_interval: a faster tick answers sooner.
//   growth window    growth_window, else 15 x sample_interval (30s at 2s)
//   headroom window  half of sample_interval, at least 1s, at most the growth
//                    window: the rate over the last sample interval; also
//                    host.mem.headroom's
//   victim window    5 x sample_interval (10s at 2s), at most the growth window
//   load settle      10 x sample_interval, at least 20s (worker_phase.h)
#pragma once

#include "config/daemon_config.h"
#include "policy/policy_engine.h"

namespace infervisor {

PolicyOptions policy_options(const DaemonSettings& settings);

// Applies policy_options(settings) to an engine that may already track workers.
void configure_engine(PolicyEngine& engine, const DaemonSettings& settings);

}  // namespace infervisor
