#include "control/status_json.h"

#include <algorithm>

namespace infervisor {

namespace {

using nlohmann::json;

template <class T>
json nullable(const std::optional<T>& value) {
    return value ? json(*value) : json(nullptr);
}

const json* member(const json& obj, const char* key) {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
}

void read(const json& obj, const char* key, std::string& out) {
    if (auto v = member(obj, key); v && v->is_string()) out = v->get<std::string>();
}

void read(const json& obj, const char* key, bool& out) {
    if (auto v = member(obj, key); v && v->is_boolean()) out = v->get<bool>();
}

template <class T>
void read(const json& obj, const char* key, T& out) {
    if (auto v = member(obj, key); v && v->is_number_integer()) out = v->get<T>();
}

template <class T>
void read(const json& obj, const char* key, std::optional<T>& out) {
    auto v = member(obj, key);
    if (!v) return;
    if constexpr (std::is_floating_point_v<T>) {
        if (v->is_number()) out = v->get<T>();
    } else {
        if (v->is_number_integer()) out = v->get<T>();
    }
}

json to_json(const ProbeStatus& p) {
    return {
        {"probe", p.probe},
        {"target", p.target},
        {"verdict", p.verdict},
        {"active", p.active},
        {"consecutive_failures", p.consecutive_failures},
        {"failures", p.failures},
        {"last_failure", nullable(p.last_failure)},
        {"last_failure_http_status", nullable(p.last_failure_http_status)},
        {"last_failure_age_usec", nullable(p.last_failure_age_usec)},
    };
}

json gpu_uses_json(const std::vector<GpuCardUse>& uses) {
    if (uses.empty()) return nullptr;
    json out = json::array();
    for (const auto& u : uses) out.push_back({{"device", u.device}, {"memory", u.memory}});
    return out;
}

ProbeStatus probe_status_from_json(const json& v) {
    ProbeStatus p;
    read(v, "probe", p.probe);
    read(v, "target", p.target);
    read(v, "verdict", p.verdict);
    read(v, "active", p.active);
    read(v, "consecutive_failures", p.consecutive_failures);
    read(v, "failures", p.failures);
    if (auto f = member(v, "last_failure"); f && f->is_string())
        p.last_failure = f->get<std::string>();
    read(v, "last_failure_http_status", p.last_failure_http_status);
    read(v, "last_failure_age_usec", p.last_failure_age_usec);
    return p;
}

json probes_json(const std::vector<ProbeStatus>& probes) {
    if (probes.empty()) return nullptr;
    json out = json::array();
    for (const auto& p : probes) out.push_back(to_json(p));
    return out;
}

json checkpoint_json(const std::optional<CheckpointStatus>& c) {
    if (!c) return nullptr;
    return {{"path", c->path}, {"bytes", nullable(c->bytes)}, {"age_usec", c->age_usec}};
}

std::optional<CheckpointStatus> checkpoint_from_json(const json& v) {
    auto c = member(v, "checkpoint");
    if (!c || !c->is_object()) return std::nullopt;
    CheckpointStatus out;
    read(*c, "path", out.path);
    read(*c, "bytes", out.bytes);
    read(*c, "age_usec", out.age_usec);
    return out;
}

}  // namespace

json to_json(const WorkerView& s) {
    return {
        {"name", s.name},
        {"state", s.state},
        {"state_reason", s.state_reason},
        {"state_age_usec", nullable(s.state_age_usec)},
        {"main_pid", nullable(s.main_pid)},
        {"uptime_usec", nullable(s.uptime_usec)},
        {"restarts", s.restarts},
        {"memory_current", nullable(s.memory_current)},
        {"memory_high", nullable(s.memory_high)},
        {"memory_max", nullable(s.memory_max)},
        {"memory_peak", nullable(s.memory_peak)},
        {"swap_current", nullable(s.swap_current)},
        {"swap_max", nullable(s.swap_max)},
        {"memory_pressure_some_avg10", nullable(s.memory_pressure_some_avg10)},
        {"gpu_memory", nullable(s.gpu_memory)},
        {"gpu_memory_max", nullable(s.gpu_memory_max)},
        {"gpu_utilization", nullable(s.gpu_utilization)},
        {"gpu_devices", gpu_uses_json(s.gpu_devices)},
        {"last_exit", s.last_exit},
        {"status_text", s.status_text},
        {"protected", s.is_protected},
        {"probes", probes_json(s.probes)},
        {"phase", s.phase.empty() ? json(nullptr) : json(s.phase)},
        {"checkpoint", checkpoint_json(s.checkpoint)},
    };
}

std::string kind_to_varlink(std::string kind) {
    std::replace(kind.begin(), kind.end(), '-', '_');
    return kind;
}

std::string kind_from_varlink(std::string kind) {
    std::replace(kind.begin(), kind.end(), '_', '-');
    return kind;
}

json to_json(const GpuCardView& c) {
    return {
        {"index", c.index},
        {"device", c.device},
        {"vendor", c.vendor},
        {"name", c.name},
        {"memory_total", nullable(c.memory_total)},
        {"memory_used", nullable(c.memory_used)},
        {"utilization", nullable(c.utilization)},
        {"fault", c.fault},
    };
}

GpuCardView gpu_card_from_json(const json& v) {
    GpuCardView c;
    read(v, "index", c.index);
    read(v, "device", c.device);
    read(v, "vendor", c.vendor);
    read(v, "name", c.name);
    read(v, "memory_total", c.memory_total);
    read(v, "memory_used", c.memory_used);
    read(v, "utilization", c.utilization);
    read(v, "fault", c.fault);
    return c;
}

json to_json(const ControlEvent& e) {
    return {
        {"time_usec", e.time_usec}, {"worker", e.worker}, {"kind", kind_to_varlink(e.kind)},
        {"message", e.message},     {"fields", e.fields},
    };
}

WorkerView worker_view_from_json(const json& v) {
    WorkerView s;
    read(v, "name", s.name);
    read(v, "state", s.state);
    read(v, "state_reason", s.state_reason);
    read(v, "state_age_usec", s.state_age_usec);
    read(v, "main_pid", s.main_pid);
    read(v, "uptime_usec", s.uptime_usec);
    read(v, "restarts", s.restarts);
    read(v, "memory_current", s.memory_current);
    read(v, "memory_high", s.memory_high);
    read(v, "memory_max", s.memory_max);
    read(v, "memory_peak", s.memory_peak);
    read(v, "swap_current", s.swap_current);
    read(v, "swap_max", s.swap_max);
    read(v, "memory_pressure_some_avg10", s.memory_pressure_some_avg10);
    read(v, "gpu_memory", s.gpu_memory);
    read(v, "gpu_memory_max", s.gpu_memory_max);
    read(v, "gpu_utilization", s.gpu_utilization);
    if (auto uses = member(v, "gpu_devices"); uses && uses->is_array())
        for (const auto& u : *uses) {
            GpuCardUse use;
            read(u, "device", use.device);
            read(u, "memory", use.memory);
            s.gpu_devices.push_back(std::move(use));
        }
    read(v, "last_exit", s.last_exit);
    read(v, "status_text", s.status_text);
    read(v, "protected", s.is_protected);
    if (auto probes = member(v, "probes"); probes && probes->is_array())
        for (const auto& p : *probes) s.probes.push_back(probe_status_from_json(p));
    read(v, "phase", s.phase);
    s.checkpoint = checkpoint_from_json(v);
    return s;
}

ControlEvent event_from_json(const json& v) {
    ControlEvent e;
    read(v, "time_usec", e.time_usec);
    read(v, "worker", e.worker);
    read(v, "kind", e.kind);
    e.kind = kind_from_varlink(std::move(e.kind));
    read(v, "message", e.message);
    if (auto fields = member(v, "fields"); fields && fields->is_object()) {
        for (const auto& [key, value] : fields->items())
            if (value.is_string()) e.fields[key] = value.get<std::string>();
    }
    return e;
}

}  // namespace infervisor
