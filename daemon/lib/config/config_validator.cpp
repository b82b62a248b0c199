#include "config/config_validator.h"

#include <grp.h>
#include <pwd.h>

#include <map>

#include "base/units.h"
#include "policy/rule_config.h"
#include "workdir/workdir_validation.h"

namespace infervisor {

namespace {

class WorkerChecker {
public:
    WorkerChecker(const WorkerSpec& spec, const SourceLocation& at, ConfigErrors& errors)
        : spec_(spec), at_(at), errors_(errors) {}

    void check() {
        check_command();
        check_memory();
        check_identity();
        check_times();
    }

private:
    void fail(const std::string& message) {
        errors_.add_at(at_.file, at_.line, at_.column, "worker '" + spec_.name + "': " + message);
    }

    void check_command() {
        if (spec_.command.empty()) return;  // reported by the parser as missing
        const std::string& exe = spec_.command.front();
        if (exe.empty() || exe.front() != '/')
            fail("command[0] must be an absolute path (no PATH search, no shell), not '" + exe + "'");
    }

    void check_memory() {
        const MemorySpec& m = spec_.memory;
        if (!m.max) {
            fail("memory.max is required: a worker without a memory cap can take the host down");
            return;
        }
        if (*m.max < (4u << 20)) fail("memory.max " + format_size(m.max) + " is below 4M");
        if (m.high && *m.high > *m.max)
            fail("memory.high (" + format_size(m.high) + ") is above memory.max (" +
                 format_size(m.max) + ")");
    }

    void check_identity() {
        if (!spec_.user.empty() && !::getpwnam(spec_.user.c_str()))
            fail("user '" + spec_.user + "' does not exist on this host");
        if (!spec_.group.empty() && !::getgrnam(spec_.group.c_str()))
            fail("group '" + spec_.group + "' does not exist on this host");
        for (const auto& g : spec_.supplementary_groups)
            if (!::getgrnam(g.c_str())) fail("supplementary group '" + g + "' does not exist on this host");
    }

    void check_times() {
        const RestartSpec& r = spec_.restart;
        if (r.backoff_initial.count() <= 0) fail("restart.backoff_initial must be above 0s");
        if (r.backoff_initial > r.backoff_max)
            fail("restart.backoff_initial (" + format_duration(r.backoff_initial) +
                 ") is above restart.backoff_max (" + format_duration(r.backoff_max) + ")");
        if (r.start_limit_interval.count() <= 0) fail("restart.start_limit_interval must be above 0s");
        if (spec_.stop_timeout.count() <= 0) fail("stop.timeout must be above 0s");
        if (spec_.watchdog.count() != 0 && spec_.watchdog < std::chrono::seconds(1))
            fail("watchdog must be 0s (off) or at least 1s");
    }

    const WorkerSpec& spec_;
    const SourceLocation& at_;
    ConfigErrors& errors_;
};

void check_settings(const DaemonSettings& d, ConfigErrors& errors) {
    static const char* kLevels[] = {"trace", "debug", "info", "warn", "error"};
    bool known = false;
    for (const char* level : kLevels) known |= d.log_level == level;
    if (!known)
        errors.add_unplaced("log_level must be one of trace, debug, info, warn, error, not '" +
                            d.log_level + "'");
    if (d.sample_interval < std::chrono::milliseconds(100))
        errors.add_unplaced("sample_interval must be at least 100ms, not " + format_duration(d.sample_interval));
    for (const auto& p : {d.runtime_dir, d.state_dir})
        if (!p.is_absolute()) errors.add_unplaced("'" + p.string() + "' must be an absolute path");
    if (!d.cgroup_root.empty() && !d.cgroup_root.is_absolute())
        errors.add_unplaced("cgroup_root must be an absolute path, not '" + d.cgroup_root.string() + "'");
}

}  // namespace

bool is_valid_worker_name(const std::string& name) {
    if (name.empty() || name.size() > 64 || name.front() == '.' || name.front() == '-') return false;
    for (char c : name) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || c == '.';
        if (!ok) return false;
    }
    return true;
}

void validate_config(const Config& config, ConfigErrors& errors) {
    check_settings(config.daemon, errors);
    validate_rules(config.default_rules, errors);
    validate_rules(config.host_rules, errors);
    std::vector<WorkDirSpec> workdirs;
    Paths paths;
    paths.runtime_dir = config.daemon.runtime_dir;
    paths.state_dir = config.daemon.state_dir;
    for (const auto& w : config.workers) validate_rules(w.rules, errors);
    std::map<std::string, const SourceLocation*> seen;
    for (size_t i = 0; i < config.workers.size(); ++i) {
        const WorkerSpec& spec = config.workers[i];
        const SourceLocation& at = config.worker_locations.at(i);
        if (spec.name.empty()) continue;  // reported by the parser
        if (!is_valid_worker_name(spec.name)) {
            errors.add_at(at.file, at.line, at.column,
                          "invalid worker name '" + spec.name +
                              "': use 1-64 letters, digits, '_', '-' or '.', not starting with '.' or '-'");
            continue;
        }
        auto [it, inserted] = seen.emplace(spec.name, &at);
        if (!inserted) {
            errors.add_at(at.file, at.line, at.column,
                          "duplicate worker name '" + spec.name + "' (first defined at " +
                              it->second->format() + ")");
            continue;
        }
        WorkerChecker(spec, at, errors).check();
        workdirs.push_back(spec.workdir);  // only well-named, unique workers
    }
    validate_workdir_specs(workdirs, paths, errors);
}

}  // namespace infervisor
