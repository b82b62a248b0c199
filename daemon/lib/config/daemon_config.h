// Config: the whole validated configuration — daemon settings plus workers.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/metrics_settings.h"
#include "config/worker_spec.h"

namespace infervisor {

struct DaemonSettings {
    std::string log_level = "info";  // trace, debug, info, warn, error
    // Empty: discover the daemon's own cgroup (the unit's, with Delegate=yes).
    std::filesystem::path cgroup_root;
    std::filesystem::path runtime_dir = "/run/infervisor";
    std::filesystem::path state_dir = "/var/lib/infervisor";
    std::string control_group = "infervisor";            // may change things over the socket
    bool dry_run = false;                                // policy actions are logged, not taken
    Duration sample_interval = std::chrono::seconds(2);  // policy sampling tick
    Duration workdir_scan_interval = std::chrono::minutes(1);  // work dir usage measurement
    // memory.growth is measured over this window and answers once samples
    // span half of it; at least 2 x sample_interval. 0 (the default): scaled
    // from sample_interval, see effective_growth_window().
    Duration growth_window = Duration::zero();
    // After a host rule kills (or checkpoints) a victim, host rules wait this
    // long before their conditions count again: the recovery (memory being
    // freed, survivors paging back in) looks like thrashing. 0: no wait.
    Duration host_settle = std::chrono::seconds(30);
    MetricsSettings metrics;  // `metrics:`: Prometheus output and history
    // A host condition ("host.mem.available > 2G for 1m"): when it has held
    // for its `for` after the last preemption, workers a host rule suspended
    // or parked are brought back, one at a time (policy/resume_planner.h).
    // Empty: they wait for an operator.
    std::optional<Condition> resume_when;

    bool operator==(const DaemonSettings&) const = default;
};

// The growth window in force: growth_window when set, else 15 x
// sample_interval (30s at the default 2s), so a faster tick answers sooner.
Duration effective_growth_window(const DaemonSettings& settings);

struct Config {
    DaemonSettings daemon;
    std::vector<WorkerSpec> workers;
    std::vector<RuleSpec> default_rules;       // `defaults: rules:`, for every worker
    std::vector<RuleSpec> host_rules;          // `host_rules:`, over host measurements
    std::vector<WorkerSource> worker_sources;  // parallel to workers
    // Parallel to workers: its definition (or `defaults:`) had an error of
    // its own, so some field it wrote holds a default instead. The checks
    // that judge fields together, or a field's absence, skip such a worker
    // (they would report what the file does not say: "memory.max is
    // required" right after "invalid size '12GG'"). Missing entries: false.
    std::vector<bool> worker_malformed;
    bool settings_malformed = false;           // the same for the daemon settings
    std::vector<std::filesystem::path> files;  // what was read, in order
    // Where each top-level key of the main file was written ("sample_interval"
    // → file:line:column), so that a bad daemon setting is reported there.
    std::map<std::string, SourceLocation> setting_locations;

    const WorkerSpec* find(const std::string& name) const;
    bool malformed(std::size_t worker) const {
        return worker < worker_malformed.size() && worker_malformed[worker];
    }
};

}  // namespace infervisor
