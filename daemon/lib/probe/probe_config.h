// Reading a worker's (or `defaults`') probes from its configuration mapping:
//
//   probes:
//     startup:   {kind: http, port: 8080, path: /health, interval: 2s}
//     readiness: {kind: tcp, port: 8080}
//     liveness:
//       kind: http            # http | tcp | exec
//       host: 127.0.0.1       # an IP address; default 127.0.0.1
//       port: 8080
//       path: /health         # default /
//       status: 200-399       # one status or a range; default 200-399
//       initial_delay: 0s
//       interval: 10s
//       timeout: 1s           # below interval
//       failure_threshold: 3
//       success_threshold: 1
//     # kind: exec takes command: [/abs/path, args...], memory_max (64M),
//     # pids_max (32) instead of host/port/path/status.
//
// Contract: parse_probe_keys() claims the key `probes` from the worker's
// YamlMap. Each probe's keys apply over what `probes` already holds (the
// worker's copy of `defaults`), else over default_probe_spec(role); the
// scalar `none` removes a probe inherited from `defaults`. Each probe is
// checked where it stands (file:line:column), once its keys are merged —
// except for what a worker may still add to a probe it inherits from
// `defaults` (its port or command): probe_spec_missing() is checked per
// worker by the config validator.
#pragma once

#include "probe/probe_spec.h"
#include "yaml/config_errors.h"
#include "yaml/yaml_map.h"

namespace infervisor {

void parse_probe_keys(YamlMap& worker, ProbesSpec& probes, ConfigErrors& errors);

// A probe's problems as sentences ("timeout (2s) must be below interval (1s)"),
// empty when it is sound. Also used for specs built in code.
std::vector<std::string> probe_spec_problems(const ProbeSpec& spec, ProbeRole role);
// What the probe lacks to run at all: "'port' is required for kind http".
std::vector<std::string> probe_spec_missing(const ProbeSpec& spec);

}  // namespace infervisor
