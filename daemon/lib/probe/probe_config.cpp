#include "probe/probe_config.h"

#include <charconv>

#include "base/units.h"
#include "probe/http_target.h"

namespace infervisor {

namespace {

bool parse_kind(const std::string& text, ProbeKind& out) {
    for (ProbeKind k : {ProbeKind::http, ProbeKind::tcp, ProbeKind::exec})
        if (text == probe_kind_name(k)) {
            out = k;
            return true;
        }
    return false;
}

std::optional<int64_t> parse_number(std::string_view text) {
    int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

// "200" or "200-399".
bool parse_status_range(const std::string& text, ProbeSpec& spec) {
    auto dash = text.find('-');
    auto low = parse_number(std::string_view(text).substr(0, dash));
    auto high =
        dash == std::string::npos ? low : parse_number(std::string_view(text).substr(dash + 1));
    if (!low || !high) return false;
    spec.status_min = *low;
    spec.status_max = *high;
    return true;
}

void parse_kind_key(YamlMap& map, ProbeSpec& spec, ConfigErrors& errors) {
    std::string text;
    if (map.get_string("kind", text) && !parse_kind(text, spec.kind))
        errors.add(map.take("kind")->Mark(),
                   "probe kind must be http, tcp or exec, not '" + text + "'");
}

void parse_status_key(YamlMap& map, ProbeSpec& spec, ConfigErrors& errors) {
    std::string text;
    if (map.get_string("status", text) && !parse_status_range(text, spec))
        errors.add(
            map.take("status")->Mark(),
            "'status' must be a status such as 200 or a range such as 200-399, not '" + text + "'");
}

// Kubernetes' httpGet.scheme, in our lower case: http or https.
void parse_scheme_key(YamlMap& map, ProbeSpec& spec, ConfigErrors& errors) {
    std::string text;
    if (!map.get_string("scheme", text)) return;
    if (text == "http" || text == "https")
        spec.tls = text == "https";
    else
        errors.add(map.take("scheme")->Mark(),
                   "probe scheme must be http or https, not '" + text + "'");
}

// memory_max and pids_max capped an exec probe's own cgroup, beside the
// worker's. A probe now runs inside the worker's cgroup (exec_probe.h),
// where the worker's limits hold it and no cap of its own can be set: the
// keys are accepted with a warning, so that a configuration written for the
// earlier layout still loads.
void parse_retired_exec_caps(YamlMap& map, ConfigErrors& errors) {
    for (const char* key : {"memory_max", "pids_max"})
        if (auto node = map.take(key)) {
            YAML::Mark at = node->Mark();
            errors.warn_at(errors.file(), at.line + 1, at.column + 1,
                           "'" + std::string(key) +
                               "' no longer applies: an exec probe runs inside the worker's "
                               "cgroup, within the worker's memory and pids limits");
        }
}

void parse_probe_fields(YamlMap& map, ProbeSpec& spec, ConfigErrors& errors) {
    parse_kind_key(map, spec, errors);
    map.get_string("host", spec.host);
    map.get_int("port", spec.port, 1, 65535);
    parse_scheme_key(map, spec, errors);
    map.get_string("path", spec.path);
    parse_status_key(map, spec, errors);
    map.get_string_list("command", spec.command, Required::no, 256);
    // A day at most: more makes no sense for a health check.
    map.get_duration("initial_delay", spec.initial_delay, Required::no, 24h);
    map.get_duration("interval", spec.interval, Required::no, 24h);
    map.get_duration("timeout", spec.timeout, Required::no, 24h);
    map.get_int("failure_threshold", spec.failure_threshold, 0, 1'000'000);
    map.get_int("success_threshold", spec.success_threshold, 1, 1000);
    parse_retired_exec_caps(map, errors);
}

void parse_one(YamlMap& probes, ProbeRole role, std::optional<ProbeSpec>& out,
               ConfigErrors& errors) {
    const std::string key(probe_role_name(role));
    auto node = probes.take(key);
    if (!node) return;
    if (node->IsScalar() && node->Scalar() == "none") {
        out.reset();
        return;
    }
    ProbeSpec spec = out.value_or(default_probe_spec(role));
    YamlMap map(*node, errors, "probe '" + key + "'");
    if (!map.valid()) return;
    parse_probe_fields(map, spec, errors);
    map.finish();
    for (const auto& problem : probe_spec_problems(spec, role))
        errors.add(node->Mark(), "probe '" + key + "': " + problem);
    out = std::move(spec);
}

void network_problems(const ProbeSpec& s, std::vector<std::string>& out) {
    if (!is_ip_literal(s.host))
        out.push_back(
            "'host' must be an IP address such as 127.0.0.1 or ::1 (no name lookup), not '" +
            s.host + "'");
    if (s.kind != ProbeKind::http) {
        if (s.tls) out.push_back("'scheme: https' is for kind http only");
        return;
    }
    if (!is_request_target(s.path))
        out.push_back(
            "'path' must start with '/' and hold no spaces, control or non-ASCII "
            "characters (at most 1024), not '" +
            s.path + "'");
    if (s.status_min < 100 || s.status_max > 599 || s.status_min > s.status_max)
        out.push_back("'status' must be a range within 100-599, not " +
                      std::to_string(s.status_min) + "-" + std::to_string(s.status_max));
}

void exec_problems(const ProbeSpec& s, std::vector<std::string>& out) {
    if (s.command.empty()) return;  // probe_spec_missing()
    if (s.command.front().empty() || s.command.front().front() != '/')
        out.push_back("command[0] must be an absolute path (no PATH search, no shell), not '" +
                      s.command.front() + "'");
    for (const auto& arg : s.command)
        if (arg.find('\0') != std::string::npos) out.push_back("'command' holds a NUL byte");
}

void timing_problems(const ProbeSpec& s, ProbeRole role, std::vector<std::string>& out) {
    if (s.interval < 100ms)
        out.push_back("'interval' must be at least 100ms, not " + format_duration(s.interval));
    if (s.timeout.count() <= 0) out.push_back("'timeout' must be above 0s");
    if (s.timeout >= s.interval)
        out.push_back("'timeout' (" + format_duration(s.timeout) + ") must be below 'interval' (" +
                      format_duration(s.interval) + "): one attempt at a time");
    if (s.initial_delay.count() < 0) out.push_back("'initial_delay' must not be negative");
    if (role != ProbeRole::startup && s.failure_threshold < 1)
        out.push_back("'failure_threshold' must be at least 1 (0, no limit, is for startup only)");
    if (role != ProbeRole::readiness && s.success_threshold != 1)
        out.push_back("'success_threshold' must be 1 for a " + std::string(probe_role_name(role)) +
                      " probe");
}

}  // namespace

std::vector<std::string> probe_spec_problems(const ProbeSpec& spec, ProbeRole role) {
    std::vector<std::string> out;
    if (spec.kind == ProbeKind::exec)
        exec_problems(spec, out);
    else
        network_problems(spec, out);
    timing_problems(spec, role, out);
    return out;
}

std::vector<std::string> probe_spec_missing(const ProbeSpec& spec) {
    if (spec.kind == ProbeKind::exec && spec.command.empty())
        return {"'command' is required for kind exec"};
    if (spec.kind != ProbeKind::exec && spec.port == 0)
        return {"'port' is required for kind " + std::string(probe_kind_name(spec.kind))};
    return {};
}

void parse_probe_keys(YamlMap& worker, ProbesSpec& probes, ConfigErrors& errors) {
    auto node = worker.take("probes");
    if (!node) return;
    YamlMap map(*node, errors, "'probes'");
    if (!map.valid()) return;
    for (ProbeRole role : {ProbeRole::startup, ProbeRole::readiness, ProbeRole::liveness})
        parse_one(map, role, probes.of(role), errors);
    map.finish();
}

}  // namespace infervisor
