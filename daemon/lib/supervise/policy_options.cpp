#include "supervise/policy_options.h"

#include <algorithm>

namespace infervisor {

PolicyOptions policy_options(const DaemonSettings& settings) {
    PolicyOptions options;
    options.dry_run = settings.dry_run;
    options.growth_window = effective_growth_window(settings);
    // memory.headroom's and host.mem.headroom's rate: over the last sample
    // interval (a window of half of it, at least 1 s, so the anchor is the
    // sample before whatever the timer's jitter), so a step that ended (a
    // second model loaded) leaves the rate one sample later and a rule's
    // `for` tells a step from a leak; see near-the-cap and
    // host-memory-running-out in etc/infervisor.yaml.
    options.headroom_window =
        std::min(options.growth_window,
                 std::max<Duration>(std::chrono::seconds(1), settings.sample_interval / 2));
    options.host_headroom_window = options.headroom_window;
    options.victim_window = std::min(options.growth_window, 5 * settings.sample_interval);
    options.host_settle = settings.host_settle;
    options.phases.settle =
        std::max<Duration>(std::chrono::seconds(20), 10 * settings.sample_interval);
    return options;
}

void configure_engine(PolicyEngine& engine, const DaemonSettings& settings) {
    PolicyOptions options = policy_options(settings);
    engine.set_dry_run(options.dry_run);
    engine.set_growth_window(options.growth_window);
    engine.set_headroom_window(options.headroom_window);
    engine.set_host_headroom_window(options.host_headroom_window);
    engine.set_victim_window(options.victim_window);
    engine.set_host_settle(options.host_settle);
    engine.set_load_settle(options.phases.settle);
}

}  // namespace infervisor
