// The JSON shapes of WorkerStatus and ControlEvent on the wire, as declared in
// io.infervisor.Supervisor.varlink. Shared by the server (to_json) and by
// infervisorctl (from_json).
//
// Reading is lenient: a missing or mistyped member leaves the default, so a
// client keeps working against a daemon that has grown new members or
// dropped old ones.
#pragma once

#include <nlohmann/json.hpp>

#include "control/supervisor_api.h"

namespace infervisor {

nlohmann::json to_json(const WorkerStatus& status);
nlohmann::json to_json(const ControlEvent& event);

WorkerStatus worker_status_from_json(const nlohmann::json& value);
ControlEvent event_from_json(const nlohmann::json& value);

}  // namespace infervisor
