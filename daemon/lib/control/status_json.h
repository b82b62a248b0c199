// The JSON shapes of a WorkerView (the Varlink type WorkerStatus) and a
// ControlEvent on the wire, as declared in io.infervisor.supervisor.varlink.
// Shared by the server (to_json) and by infervisorctl (from_json).
//
// Reading is lenient: a missing or mistyped member leaves the default, so a
// client keeps working against a daemon that has grown new members or
// dropped old ones.
//
// An event's kind is a Varlink enum on the wire ("oom_killed"), the journal's
// INFERVISOR_EVENT name in ControlEvent ("oom-killed"): to_json and
// event_from_json convert.
#pragma once

#include <nlohmann/json.hpp>

#include "control/supervisor_api.h"

namespace infervisor {

nlohmann::json to_json(const WorkerView& view);
nlohmann::json to_json(const ControlEvent& event);
nlohmann::json to_json(const GpuCardView& card);  // GpuStatus

WorkerView worker_view_from_json(const nlohmann::json& value);
GpuCardView gpu_card_from_json(const nlohmann::json& value);
ControlEvent event_from_json(const nlohmann::json& value);

// "oom-killed" <-> "oom_killed" (Varlink enum values cannot hold a "-").
std::string kind_to_varlink(std::string kind);
std::string kind_from_varlink(std::string kind);

}  // namespace infervisor
