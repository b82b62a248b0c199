// ProbeSpec: what the configuration says about one health probe of a worker,
// as Kubernetes names them:
//   startup   — the worker is loading (WorkerState::starting) until it first
//               passes; the worker's start_timeout bounds the whole load.
//   readiness — serving vs not ready, once loaded (and the end of loading
//               when there is no startup probe).
//   liveness  — failure_threshold failures in a row mean the worker is stuck:
//               it is killed and restarted by its restart policy.
// Each probe is an HTTP or HTTPS GET (a status in [status_min, status_max]
// passes), a TCP connect, or a command run as the worker's user in a cgroup of its own
// (exit 0 passes). Plain data; equality is part of WorkerSpec's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"

namespace infervisor {

using namespace std::chrono_literals;

enum class ProbeKind { http, tcp, exec };
enum class ProbeRole { startup, readiness, liveness };

std::string_view probe_kind_name(ProbeKind kind);  // "http", "tcp", "exec"
std::string_view probe_role_name(ProbeRole role);  // "startup", "readiness", "liveness"

struct ProbeSpec {
    ProbeKind kind = ProbeKind::http;
    // http and tcp: an IP address literal (no name lookup: it would block the
    // event loop) and a port.
    std::string host = "127.0.0.1";
    int64_t port = 0;
    // http: plain HTTP, or HTTPS (TLS without certificate verification, as
    // Kubernetes' scheme HTTPS: a health check of a local server asks whether
    // it answers, not who it is); the request target; the statuses that pass.
    bool tls = false;
    std::string path = "/";
    int64_t status_min = 200;
    int64_t status_max = 399;
    // exec: argv; command[0] is an absolute path.
    std::vector<std::string> command;
    // First attempt this long after the run starts; then one attempt per
    // interval (never two at once). An attempt not answered within timeout
    // fails.
    Duration initial_delay = 0s;
    Duration interval = 10s;
    Duration timeout = 1s;
    // Consecutive results that flip the probe's verdict. For a startup probe,
    // failure_threshold 0 (its default) means "no limit but start_timeout".
    int64_t failure_threshold = 3;
    int64_t success_threshold = 1;

    bool operator==(const ProbeSpec&) const = default;
};

// Defaults of a probe of `role` before the configuration's keys apply.
ProbeSpec default_probe_spec(ProbeRole role);

struct ProbesSpec {
    std::optional<ProbeSpec> startup;
    std::optional<ProbeSpec> readiness;
    std::optional<ProbeSpec> liveness;

    const std::optional<ProbeSpec>& of(ProbeRole role) const;
    std::optional<ProbeSpec>& of(ProbeRole role);
    // The probe whose first pass ends loading: startup, else readiness.
    std::optional<ProbeRole> gate() const;
    bool operator==(const ProbesSpec&) const = default;
};

// "GET http://127.0.0.1:8080/health", "GET https://[::1]:8443/health",
// "TCP 127.0.0.1:11434", "exec /bin/check".
std::string describe_probe(const ProbeSpec& spec);

}  // namespace infervisor
