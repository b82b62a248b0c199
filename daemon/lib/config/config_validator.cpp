#include "config/config_validator.h"

#include <sys/stat.h>

#include <cerrno>
#include <map>
#include <optional>
#include <set>

#include "base/units.h"
#include "config/account_lookup.h"
#include "config/config_limits.h"
#include "config/credential_checks.h"
#include "gpu/gpu_assignment.h"
#include "policy/condition.h"
#include "policy/rule_config.h"
#include "probe/probe_config.h"
#include "workdir/workdir_validation.h"

namespace infervisor {

namespace {

class WorkerChecker {
  public:
    WorkerChecker(const WorkerSpec& spec, const WorkerSource& source, ConfigErrors& errors,
                  AccountLookup& accounts, const ValidationOptions& options,
                  const std::filesystem::path& state_dir,
                  const std::vector<RuleSpec>& default_rules)
        : spec_(spec),
          source_(source),
          errors_(errors),
          accounts_(accounts),
          options_(options),
          state_dir_(state_dir),
          default_rules_(default_rules) {}

    // malformed: the worker's definition had an error of its own (see
    // Config::worker_malformed); only the checks of one field as written run.
    void check(bool malformed) {
        check_command();
        check_identity();
        check_times();
        check_environment();
        check_gpu();
        check_credentials();
        if (malformed) return;
        check_memory();
        check_time_order();
        check_probes();
        check_engine();
        check_llama_checkpoint();
        check_llama_metrics();
        check_vllm_sleep();
        check_engine_rules();
    }

  private:
    // At the line of `key` when the worker wrote it, else at the worker's.
    void fail(const std::string& key, const std::string& message) {
        const SourceLocation& at = source_.of(key);
        errors_.add_at(at.file, at.line, at.column, "worker '" + spec_.name + "': " + message);
    }
    void warn(const std::string& key, const std::string& message) {
        const SourceLocation& at = source_.of(key);
        errors_.warn_at(at.file, at.line, at.column, "worker '" + spec_.name + "': " + message);
    }

    void check_command() {
        if (spec_.command.empty()) return;  // reported by the parser as missing
        const std::string& exe = spec_.command.front();
        if (!exe.starts_with('/'))
            return fail("command",
                        "command[0] must be an absolute path (no PATH search, "
                        "no shell), not '" +
                            exe + "'");
        if (auto problem = program_problem(exe, "starting the worker will fail"))
            warn("command", "command[0] " + *problem);
    }

    // A warning, not an error: the program may be installed (or its file
    // system mounted) before the worker starts, and one worker's missing
    // program must not stop the daemon supervising the others. Looked at
    // with the checker's rights (the caller's for `config check`): a path
    // it may not see is not reported.
    static std::optional<std::string> program_problem(const std::string& exe,
                                                      const std::string& consequence) {
        struct stat st {};
        if (::stat(exe.c_str(), &st) != 0) {
            if (errno != ENOENT && errno != ENOTDIR) return std::nullopt;
            return "'" + exe + "' does not exist: " + consequence;
        }
        if (!S_ISREG(st.st_mode) || (st.st_mode & 0111) == 0)
            return "'" + exe + "' is not an executable file: " + consequence;
        return std::nullopt;
    }

    void check_memory() {
        const MemorySpec& m = spec_.memory;
        if (!m.max) {
            fail("memory",
                 "memory.max is required: a worker without a memory cap can take the host down");
            return;
        }
        if (*m.max < (4u << 20))
            fail("memory", "memory.max " + format_size(m.max) + " is below 4M");
        if (m.high && *m.high > *m.max)
            fail("memory", "memory.high (" + format_size(m.high) + ") is above memory.max (" +
                               format_size(m.max) + ")");
        if (m.reserve && *m.reserve > *m.max)
            fail("memory", "memory.reserve (" + format_size(m.reserve) + ") is above memory.max (" +
                               format_size(m.max) + "): it could never use what it waits for");
    }

    void check_identity() {
        using Answer = AccountLookup::Answer;
        if (!spec_.user.empty() && spec_.user != kDynamicUser &&
            accounts_.user(spec_.user) == Answer::missing)
            fail("user", "user '" + spec_.user + "' does not exist on this host");
        if (!spec_.group.empty() && accounts_.group(spec_.group) == Answer::missing)
            fail("group", "group '" + spec_.group + "' does not exist on this host");
        for (const auto& g : spec_.supplementary_groups)
            if (accounts_.group(g) == Answer::missing)
                fail("supplementary_groups",
                     "supplementary group '" + g + "' does not exist on this host");
    }

    void check_credentials() {
        if (spec_.credentials.size() > kMaxCredentials)
            fail("credentials", "more than " + std::to_string(kMaxCredentials) + " credentials");
        size_t checked = 0;
        for (const auto& [name, source] : spec_.credentials) {
            if (++checked > kMaxCredentials) break;
            if (!is_valid_credential_name(name))
                fail("credentials",
                     "credential name '" + name +
                         "' must be 1-64 letters, digits, '_', '-' or '.', not starting with '.'");
            if (auto problem = credential_source_problem(source, options_.as_caller);
                !problem.empty())
                fail("credentials", "credential '" + name + "': " + problem);
        }
    }

    void check_times() {
        const RestartSpec& r = spec_.restart;
        if (r.backoff_initial.count() <= 0)
            fail("restart", "restart.backoff_initial must be above 0s");
        if (r.start_limit_interval.count() <= 0)
            fail("restart", "restart.start_limit_interval must be above 0s");
        if (spec_.stop_timeout.count() <= 0) fail("stop", "stop.timeout must be above 0s");
        if (spec_.watchdog.count() != 0 && spec_.watchdog < std::chrono::seconds(1))
            fail("watchdog", "watchdog must be 0s (off) or at least 1s");
    }

    void check_time_order() {
        const RestartSpec& r = spec_.restart;
        if (r.backoff_initial > r.backoff_max)
            fail("restart", "restart.backoff_initial (" + format_duration(r.backoff_initial) +
                                ") is above restart.backoff_max (" +
                                format_duration(r.backoff_max) + ")");
    }

    void check_environment() {
        for (const auto& [key, value] : spec_.environment) {
            if (key.empty() || key.find('=') != std::string::npos ||
                key.find('\0') != std::string::npos)
                fail("environment", "environment variable name '" + key +
                                        "' is invalid: it must be non-empty, without '='");
            if (value.find('\0') != std::string::npos)
                fail("environment", "environment variable '" + key + "' contains a NUL byte");
        }
    }

    // gpu.devices sets each vendor's variables itself (gpu/gpu_assignment.h).
    void check_gpu() {
        if (!spec_.gpu || spec_.gpu->devices.empty()) return;
        for (const auto& name : gpu_environment_names())
            if (spec_.environment.contains(name))
                fail("environment", "environment variable '" + name +
                                        "' is set by gpu.devices: give the devices there only");
        if (!options_.host_gpus) return;
        for (const auto& device : spec_.gpu->devices)
            if (!find_gpu(*options_.host_gpus, device))
                warn("gpu", "gpu device '" + device + "' does not exist on this host (its GPUs: " +
                                describe_gpus(*options_.host_gpus) + "); starting it will fail");
    }

    // The rest of each probe is checked where it stands in the file. An
    // exec probe's program is looked at as the worker's is (a warning).
    void check_probes() {
        for (ProbeRole role : {ProbeRole::startup, ProbeRole::readiness, ProbeRole::liveness}) {
            const auto& probe = spec_.probes.of(role);
            if (!probe) continue;
            std::string what = "probe '" + std::string(probe_role_name(role)) + "': ";
            for (const auto& missing : probe_spec_missing(*probe)) fail("probes", what + missing);
            if (probe->kind != ProbeKind::exec || probe->command.empty() ||
                !probe->command.front().starts_with('/'))
                continue;  // no program, or one the probe's parser reported
            if (auto problem =
                    program_problem(probe->command.front(), "every attempt of the probe will fail"))
                warn("probes", what + "command[0] " + *problem);
        }
    }

    // What a worker may still add to an engine block from `defaults:` (its
    // port), and its api_key, which names one of the worker's credentials.
    void check_engine() {
        if (!spec_.engine) return;
        const EngineSpec& engine = *spec_.engine;
        if (engine.port == 0) fail("engine", "engine: 'port' is required");
        if (!engine.api_key.empty() && !spec_.credentials.contains(engine.api_key))
            fail("engine", "engine: 'api_key' names the credential '" + engine.api_key +
                               "', which the worker does not have: add it under 'credentials:' "
                               "(NAME: /path/to/file holding the key)");
    }

    // `checkpoint: {method: llama-server}`: the daemon speaks to the server
    // through `engine:` (a llama-server), starts restoring once the run is
    // ready (READY=1 or a startup or readiness probe: llama-server answers
    // 503 while it loads), and the server writes the slots straight into the
    // worker's staging dir, which the daemon publishes from: its
    // --slot-save-path must be exactly that dir (llama-server adds the
    // trailing '/' itself; common/arg.cpp).
    void check_llama_checkpoint() {
        if (spec_.checkpoint.method != CheckpointMethod::llama_server) return;
        if (!spec_.engine || spec_.engine->kind != EngineKind::llama_server)
            fail("checkpoint",
                 "checkpoint method llama-server needs the server's address: add "
                 "'engine: {kind: llama-server, port: PORT}' (the port the server listens on)");
        if (!spec_.notify && !spec_.probes.startup && !spec_.probes.readiness)
            fail("checkpoint",
                 "checkpoint method llama-server restores the slots once the server is ready: "
                 "add a startup probe, e.g. 'probes: {startup: {kind: http, port: PORT, path: "
                 "/health, interval: 2s}}' (llama-server answers 503 while it loads)");
        std::string staging = (state_dir_ / "checkpoints" / spec_.name / "staging").string();
        std::optional<std::string> given;
        const auto& argv = spec_.command;
        for (size_t i = 1; i < argv.size(); ++i) {
            if (argv[i] == "--slot-save-path" && i + 1 < argv.size())
                given = argv[i + 1];
            else if (argv[i].starts_with("--slot-save-path="))
                given = argv[i].substr(std::string("--slot-save-path=").size());
        }
        auto same = [&](std::string path) {
            while (path.size() > 1 && path.back() == '/') path.pop_back();
            return path == staging;
        };
        if (!given)
            fail("command",
                 "checkpoint method llama-server: the command must pass '--slot-save-path " +
                     staging +
                     "' (the worker's staging dir: the server writes its slots there and the "
                     "daemon publishes them from there)");
        else if (!same(*given))
            fail("command", "checkpoint method llama-server: --slot-save-path is '" + *given +
                                "'; it must be '" + staging + "' (the worker's staging dir)");
        // A multimodal server refuses every slot action (501, "This feature
        // is not supported by multimodal"; tools/server/server.cpp): every
        // checkpoint would fail. (A model pulled with -hf may bring its
        // projector along unseen here: then the journal says so at the
        // first checkpoint.)
        if (auto flag = command_option({"--mmproj", "-mm", "--mmproj-url", "-mmu"}))
            fail("command", "checkpoint method llama-server: the command passes '" + *flag +
                                "', and a multimodal llama-server refuses to save or restore "
                                "slots (501): remove it, or use another checkpoint method");
    }

    // The first of `names` the command passes (as NAME VALUE or NAME=VALUE).
    std::optional<std::string> command_option(std::initializer_list<std::string_view> names) const {
        const auto& argv = spec_.command;
        for (size_t i = 1; i < argv.size(); ++i)
            for (std::string_view name : names)
                if (argv[i] == name || (argv[i].starts_with(name) && argv[i].size() > name.size() &&
                                        argv[i][name.size()] == '='))
                    return std::string(name);
        return std::nullopt;
    }

    // engine.metrics on a llama-server: the server exposes /metrics only
    // with --metrics (501 otherwise), and every scrape would fail. A warning:
    // the command may be a wrapper that adds the flag.
    void check_llama_metrics() {
        if (!spec_.engine || spec_.engine->kind != EngineKind::llama_server ||
            !spec_.engine->metrics)
            return;
        if (!command_option({"--metrics"}))
            warn("command",
                 "engine.metrics is set, but the command does not pass '--metrics': llama-server "
                 "answers its metrics endpoint with 501 without it, and the rules on engine.* "
                 "would never be true");
    }

    // `suspend: {method: vllm-sleep}`: the daemon speaks to the server
    // through `engine:`, which must be a vLLM (engine/vllm_sleep.h).
    void check_vllm_sleep() {
        if (spec_.suspend.method != SuspendMethod::vllm_sleep) return;
        if (!spec_.engine || spec_.engine->kind != EngineKind::vllm)
            fail("suspend",
                 "suspend method vllm-sleep needs the server's address: add "
                 "'engine: {kind: vllm, port: PORT}' (the port vLLM listens on; vLLM must run "
                 "with --enable-sleep-mode and VLLM_SERVER_DEV_MODE=1 in its environment for "
                 "its /sleep and /wake_up endpoints)");
    }

    // engine.NAME and engine.rate(NAME) read what the daemon scrapes from
    // engine.metrics: a rule of the worker's (its own or a default one) that
    // names them needs it.
    void check_engine_rules() {
        if (spec_.engine && spec_.engine->metrics) return;
        for (const RuleSpec& rule : merge_rules(default_rules_, spec_.rules)) {
            for (const Condition* leaf : comparisons(rule.when)) {
                if (leaf->engine_series.empty()) continue;
                fail("rules",
                     "rule '" + rule.name + "' reads " + leaf->metric +
                         ", but the worker has no engine.metrics to scrape: add the server's "
                         "metrics endpoint, e.g. engine: {port: 8080, metrics: /metrics} "
                         "(llama-server needs --metrics)");
                break;
            }
        }
    }

    const WorkerSpec& spec_;
    const WorkerSource& source_;
    ConfigErrors& errors_;
    AccountLookup& accounts_;
    const ValidationOptions& options_;
    const std::filesystem::path& state_dir_;
    const std::vector<RuleSpec>& default_rules_;
};

// Reports a problem with the daemon setting `key` where it was written (the
// main file's line), or unplaced when it was not written at all.
class SettingsChecker {
  public:
    SettingsChecker(const Config& config, ConfigErrors& errors)
        : config_(config), errors_(errors) {}

    void check() {
        const DaemonSettings& d = config_.daemon;
        static const char* kLevels[] = {"trace", "debug", "info", "warn", "error"};
        bool known = false;
        for (const char* level : kLevels) known |= d.log_level == level;
        if (!known)
            fail("log_level", "log_level must be one of trace, debug, info, warn, error, not '" +
                                  d.log_level + "'");
        if (d.sample_interval < std::chrono::milliseconds(100))
            fail("sample_interval", "sample_interval must be at least 100ms, not " +
                                        format_duration(d.sample_interval));
        if (d.workdir_scan_interval < std::chrono::seconds(1))
            fail("workdir_scan_interval", "workdir_scan_interval must be at least 1s, not " +
                                              format_duration(d.workdir_scan_interval));
        if (!config_.settings_malformed && d.growth_window > Duration::zero() &&
            d.growth_window < 2 * d.sample_interval)
            fail("growth_window", "growth_window (" + format_duration(d.growth_window) +
                                      ") must be at least twice sample_interval (" +
                                      format_duration(d.sample_interval) +
                                      "): memory.growth needs samples across half of it");
        if (!d.runtime_dir.is_absolute())
            fail("runtime_dir",
                 "runtime_dir must be an absolute path, not '" + d.runtime_dir.string() + "'");
        if (!d.state_dir.is_absolute())
            fail("state_dir",
                 "state_dir must be an absolute path, not '" + d.state_dir.string() + "'");
        if (!d.cgroup_root.empty() && !d.cgroup_root.is_absolute())
            fail("cgroup_root",
                 "cgroup_root must be an absolute path, not '" + d.cgroup_root.string() + "'");
    }

  private:
    void fail(const std::string& key, std::string message) {
        auto at = config_.setting_locations.find(key);
        if (at == config_.setting_locations.end()) return errors_.add_unplaced(std::move(message));
        errors_.add_at(at->second.file, at->second.line, at->second.column, std::move(message));
    }

    const Config& config_;
    ConfigErrors& errors_;
};

// Reports, before any other error, a configuration that names more distinct
// users and groups than are looked up (AccountLookup answers not_checked for
// the rest): the count is cheap, the lookups are not.
void check_account_count(const Config& config, ConfigErrors& errors) {
    std::set<std::string> users, groups;
    for (const auto& w : config.workers) {
        if (!w.user.empty()) users.insert(w.user);
        if (!w.group.empty()) groups.insert(w.group);
        groups.insert(w.supplementary_groups.begin(), w.supplementary_groups.end());
    }
    std::size_t names = users.size() + groups.size();
    if (names > config_limits::kMaxAccountLookups)
        errors.add_unplaced("the configuration names " + std::to_string(names) +
                            " distinct users and groups; only the first " +
                            std::to_string(config_limits::kMaxAccountLookups) +
                            " are looked up, the others are not checked (the limit)");
}

}  // namespace

bool is_valid_worker_name(const std::string& name) {
    if (name.empty() || name.size() > 64 || name.front() == '.' || name.front() == '-')
        return false;
    for (char c : name) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || c == '.';
        if (!ok) return false;
    }
    return !is_cgroup_interface_name(name);
}

bool is_cgroup_interface_name(const std::string& name) {
    static const char* kPrefixes[] = {"cgroup.", "cpu.",  "cpuset.",  "io.",   "memory.",
                                      "pids.",   "rdma.", "hugetlb.", "misc.", "irq."};
    for (const char* prefix : kPrefixes)
        if (name.rfind(prefix, 0) == 0) return true;
    return false;
}

void validate_config(const Config& config, ConfigErrors& errors, const ValidationOptions& options) {
    check_account_count(config, errors);
    SettingsChecker(config, errors).check();
    validate_rules(config.default_rules, errors);
    validate_rules(config.host_rules, errors);
    std::vector<WorkDirSpec> workdirs;
    Paths paths;
    paths.runtime_dir = config.daemon.runtime_dir;
    paths.state_dir = config.daemon.state_dir;
    for (const auto& w : config.workers) validate_rules(w.rules, errors);
    std::map<std::string, const SourceLocation*> seen;
    AccountLookup accounts(config_limits::kMaxAccountLookups);
    for (size_t i = 0; i < config.workers.size(); ++i) {
        const WorkerSpec& spec = config.workers[i];
        const WorkerSource& source = config.worker_sources.at(i);
        const SourceLocation& at = source.item;
        if (spec.name.empty()) continue;  // reported by the parser
        if (!is_valid_worker_name(spec.name)) {
            errors.add_at(at.file, at.line, at.column,
                          "invalid worker name '" + spec.name + "': " +
                              (is_cgroup_interface_name(spec.name)
                                   ? "names starting with a cgroup controller prefix (memory., "
                                     "cpu., cgroup., ...) "
                                     "would clash with the kernel's cgroup files"
                                   : "use 1-64 letters, digits, '_', '-' or '.', not starting with "
                                     "'.' or '-'"));
            continue;
        }
        auto [it, inserted] = seen.emplace(spec.name, &at);
        if (!inserted) {
            errors.add_at(at.file, at.line, at.column,
                          "duplicate worker name '" + spec.name + "' (first defined at " +
                              it->second->format() + ")");
            continue;
        }
        WorkerChecker(spec, source, errors, accounts, options, paths.state_dir,
                      config.default_rules)
            .check(config.malformed(i));
        // Only well-named, unique workers whose dirs are as written.
        if (!config.malformed(i)) workdirs.push_back(spec.workdir);
    }
    validate_workdir_specs(workdirs, paths, errors);
}

}  // namespace infervisor
