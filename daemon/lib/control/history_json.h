// The History method's reply (io.infervisor.supervisor.varlink): a worker's
// history as JSON, sizes back in bytes, absent values as null.
#pragma once

#include <nlohmann/json.hpp>

#include "control/supervisor_api.h"

namespace infervisor {

nlohmann::json history_to_json(const WorkerHistory& history);

}  // namespace infervisor
