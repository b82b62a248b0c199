#include "probe/probe_spec.h"

#include <utility>

namespace infervisor {

std::string_view probe_kind_name(ProbeKind kind) {
    switch (kind) {
        case ProbeKind::http:
            return "http";
        case ProbeKind::tcp:
            return "tcp";
        case ProbeKind::exec:
            return "exec";
    }
    return "?";
}

std::string_view probe_role_name(ProbeRole role) {
    switch (role) {
        case ProbeRole::startup:
            return "startup";
        case ProbeRole::readiness:
            return "readiness";
        case ProbeRole::liveness:
            return "liveness";
    }
    return "?";
}

ProbeSpec default_probe_spec(ProbeRole role) {
    ProbeSpec spec;
    if (role == ProbeRole::startup) {
        spec.interval = 2s;  // loading ends at most this late
        spec.failure_threshold = 0;
    }
    return spec;
}

const std::optional<ProbeSpec>& ProbesSpec::of(ProbeRole role) const {
    switch (role) {
        case ProbeRole::startup:
            return startup;
        case ProbeRole::readiness:
            return readiness;
        case ProbeRole::liveness:
            break;
    }
    return liveness;
}

std::optional<ProbeSpec>& ProbesSpec::of(ProbeRole role) {
    return const_cast<std::optional<ProbeSpec>&>(std::as_const(*this).of(role));
}

std::optional<ProbeRole> ProbesSpec::gate() const {
    if (startup) return ProbeRole::startup;
    if (readiness) return ProbeRole::readiness;
    return std::nullopt;
}

std::string describe_probe(const ProbeSpec& spec) {
    std::string host = spec.host.find(':') != std::string::npos ? "[" + spec.host + "]" : spec.host;
    switch (spec.kind) {
        case ProbeKind::http:
            return std::string(spec.tls ? "GET https://" : "GET http://") + host + ":" +
                   std::to_string(spec.port) + spec.path;
        case ProbeKind::tcp:
            return "TCP " + host + ":" + std::to_string(spec.port);
        case ProbeKind::exec:
            return "exec " + (spec.command.empty() ? std::string("?") : spec.command.front());
    }
    return "?";
}

}  // namespace infervisor
