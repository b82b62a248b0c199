#include "config/config_parser.h"

#include <yaml-cpp/yaml.h>

#include "base/signal_names.h"
#include "checkpoint/checkpoint_config.h"
#include "config/config_limits.h"
#include "config/credential_checks.h"
#include "config/metrics_config.h"
#include "engine/engine_spec.h"
#include "engine/suspend_spec.h"
#include "gpu/gpu_config.h"
#include "policy/rule_config.h"
#include "probe/probe_config.h"
#include "workdir/workdir_config.h"
#include "yaml/document_budget.h"
#include "yaml/yaml_map.h"

namespace infervisor {

namespace {

void parse_memory(YamlMap& worker, MemorySpec& memory, ConfigErrors& errors) {
    auto node = worker.take("memory");
    if (!node) return;
    YamlMap map(*node, errors, "'memory'");
    map.get_size("max", memory.max);
    map.get_size("high", memory.high);
    map.get_size("swap_max", memory.swap_max);
    map.get_size("reserve", memory.reserve);
    map.finish();
}

void parse_restart_mode(YamlMap& map, RestartMode& mode, ConfigErrors& errors) {
    std::string text;
    if (!map.get_string("policy", text)) return;
    if (text == "never")
        mode = RestartMode::never;
    else if (text == "on-failure")
        mode = RestartMode::on_failure;
    else if (text == "always")
        mode = RestartMode::always;
    else
        errors.add(map.take("policy")->Mark(),
                   "restart policy must be never, on-failure or always, not '" + text + "'");
}

void parse_restart(YamlMap& worker, RestartSpec& restart, ConfigErrors& errors) {
    auto node = worker.take("restart");
    if (!node) return;
    YamlMap map(*node, errors, "'restart'");
    parse_restart_mode(map, restart.mode, errors);
    map.get_duration("backoff_initial", restart.backoff_initial, Required::no, 1h);
    map.get_duration("backoff_max", restart.backoff_max, Required::no, 24h);
    map.get_int("start_limit_burst", restart.start_limit_burst, 1, 10000);
    map.get_duration("start_limit_interval", restart.start_limit_interval, Required::no, 24h);
    map.finish();
}

void parse_stop(YamlMap& worker, WorkerSpec& spec, ConfigErrors& errors) {
    auto node = worker.take("stop");
    if (!node) return;
    YamlMap map(*node, errors, "'stop'");
    std::string signal;
    if (map.get_string("signal", signal)) {
        if (auto sig = parse_signal(signal))
            spec.stop_signal = *sig;
        else
            errors.add(map.take("signal")->Mark(), "unknown signal '" + signal + "'");
    }
    map.get_duration("timeout", spec.stop_timeout, Required::no, 1h);
    map.finish();
}

void parse_limits(YamlMap& map, WorkerSpec& spec) {
    int64_t value = 0;
    if (map.get_int("pids_max", value, 1, 4'194'304)) spec.pids_max = value;
    if (map.get_int("cpu_weight", value, 1, 10'000)) spec.cpu_weight = value;
    map.get_int("oom_score_adj", spec.oom_score_adj, -1000, 1000);
}

// resume_when: a host condition, as a host rule's `when`.
void parse_resume_when(YamlMap& map, DaemonSettings& d, ConfigErrors& errors) {
    std::string text;
    if (!map.get_string("resume_when", text)) return;
    auto condition = parse_condition(text, RuleScope::host);
    if (!condition) {
        errors.add(map.take("resume_when")->Mark(), "'resume_when': " + condition.error().what);
        return;
    }
    d.resume_when = *condition;
}

}  // namespace

void parse_worker_fields(const YAML::Node& node, WorkerSpec& spec, ConfigErrors& errors,
                         bool require_identity) {
    const Required identity = require_identity ? Required::yes : Required::no;
    std::string what = "worker";
    if (node.IsMap() && node["name"] && node["name"].IsScalar())
        what = "worker '" + node["name"].Scalar().substr(0, 64) + "'";
    if (!require_identity) what = "'defaults'";
    YamlMap map(node, errors, what);
    if (!map.valid()) return;
    if (require_identity) map.get_string("name", spec.name, identity);
    if (require_identity)
        map.get_string_list("command", spec.command, identity, config_limits::kMaxCommandArgs);
    map.get_string_map("environment", spec.environment, Required::no,
                       config_limits::kMaxEnvironment);
    if (std::map<std::string, std::string> files;
        map.get_string_map("credentials", files, Required::no, kMaxCredentials))
        spec.credentials = {files.begin(), files.end()};
    map.get_string("user", spec.user);
    map.get_string("group", spec.group);
    map.get_string_list("supplementary_groups", spec.supplementary_groups, Required::no,
                        config_limits::kMaxSupplementaryGroups);
    parse_memory(map, spec.memory, errors);
    parse_limits(map, spec);
    parse_restart(map, spec.restart, errors);
    parse_stop(map, spec, errors);
    map.get_bool("notify", spec.notify);
    map.get_bool("private_tmp", spec.private_tmp);
    // Given (here or in defaults): that watchdog, none learned.
    if (map.get_duration("watchdog", spec.watchdog, Required::no, 24h)) spec.learn_watchdog = false;
    map.get_duration("start_timeout", spec.start_timeout, Required::no, 24h);
    map.get_int("priority", spec.priority, -1000, 1000);
    map.get_bool("protected", spec.is_protected);
    map.get_bool("preemptible", spec.preemptible);
    if (std::string admission; map.get_string("admission", admission)) {
        if (admission == "overcommit" || admission == "check")
            spec.overcommit = admission == "overcommit";
        else
            errors.add(map.take("admission")->Mark(),
                       "'admission' must be check or overcommit, not '" + admission + "'");
    }
    if (auto rules = map.take("rules")) spec.rules = parse_rules(*rules, errors);
    parse_workdir_keys(map, spec.workdir, errors);
    parse_checkpoint_keys(map, spec.checkpoint, errors);
    parse_probe_keys(map, spec.probes, errors);
    parse_engine_keys(map, spec.engine, errors);
    parse_suspend_keys(map, spec.suspend, errors);
    parse_gpu_keys(map, spec.gpu, errors);
    spec.workdir.worker = spec.name;
    map.finish();
}

void ConfigParser::parse_workers(const YAML::Node& list, Config& out, ConfigErrors& errors) {
    if (!list.IsSequence()) {
        if (!list.IsNull()) errors.add(list.Mark(), "'workers' must be a list of workers");
        return;
    }
    if (out.workers.size() + list.size() > config_limits::kMaxWorkers) {
        errors.add(list.Mark(), "'workers' has " + std::to_string(list.size()) + " items" +
                                    (out.workers.empty() ? std::string()
                                                         : ", and earlier files " +
                                                               std::to_string(out.workers.size())) +
                                    "; at most " + std::to_string(config_limits::kMaxWorkers) +
                                    " workers are allowed in one configuration");
        return;
    }
    for (const auto& item : list) {
        WorkerSpec spec = defaults_;
        spec.rules.clear();  // default rules are merged by the policy engine, not copied
        std::size_t errors_before = errors.count();
        parse_worker_fields(item, spec, errors, true);
        out.worker_malformed.push_back(defaults_malformed_ || errors.count() > errors_before);
        out.workers.push_back(std::move(spec));
        WorkerSource source{{errors.file(), item.Mark().line + 1, item.Mark().column + 1}, {}};
        if (item.IsMap())
            for (const auto& entry : item)
                if (entry.first.IsScalar())
                    source.keys[entry.first.Scalar()] = {errors.file(), entry.first.Mark().line + 1,
                                                         entry.first.Mark().column + 1};
        out.worker_sources.push_back(std::move(source));
    }
}

void ConfigParser::parse_daemon_settings(const YAML::Node& root, Config& out, ConfigErrors& errors,
                                         YamlMap& map) {
    for (const auto& entry : root)
        if (entry.first.IsScalar())
            out.setting_locations[entry.first.Scalar()] = {
                errors.file(), entry.first.Mark().line + 1, entry.first.Mark().column + 1};
    DaemonSettings& d = out.daemon;
    std::string path;
    std::size_t errors_before = errors.count();
    map.get_string("log_level", d.log_level);
    if (map.get_string("cgroup_root", path)) d.cgroup_root = path;
    if (map.get_string("runtime_dir", path)) d.runtime_dir = path;
    if (map.get_string("state_dir", path)) d.state_dir = path;
    map.get_string("control_group", d.control_group);
    map.get_bool("dry_run", d.dry_run);
    map.get_duration("sample_interval", d.sample_interval, Required::no, 1h);
    map.get_duration("workdir_scan_interval", d.workdir_scan_interval, Required::no, 24h);
    map.get_duration("growth_window", d.growth_window, Required::no, 24h);
    map.get_duration("host_settle", d.host_settle, Required::no, 1h);
    out.settings_malformed = errors.count() > errors_before;
    if (auto metrics = map.take("metrics")) parse_metrics_settings(*metrics, d.metrics, errors);
    parse_resume_when(map, d, errors);
    if (auto defaults = map.take("defaults")) {
        std::size_t before_defaults = errors.count();
        parse_worker_fields(*defaults, defaults_, errors, false);
        defaults_malformed_ = errors.count() > before_defaults;
        out.default_rules = defaults_.rules;
    }
    if (auto host = map.take("host_rules")) out.host_rules = parse_host_rules(*host, errors);
}

void ConfigParser::parse(std::string_view text, const std::string& file, ConfigFileKind kind,
                         Config& out, ConfigErrors& errors) {
    errors.set_file(file);
    YAML::Node root;
    try {
        root = YAML::Load(std::string(text));
    } catch (const YAML::ParserException& e) {
        errors.add(e.mark, "YAML syntax error: " + e.msg);
        return;
    }
    if (root.IsNull()) return;  // an empty file defines nothing
    if (!check_document_budget(root, errors)) return;
    YamlMap map(root, errors,
                kind == ConfigFileKind::main ? "the configuration" : "a workers file");
    if (!map.valid()) return;
    if (kind == ConfigFileKind::main) parse_daemon_settings(root, out, errors, map);
    if (auto workers = map.take("workers")) parse_workers(*workers, out, errors);
    map.finish();
}

}  // namespace infervisor
