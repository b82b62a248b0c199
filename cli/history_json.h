// `infervisorctl history --json`: a worker's history as JSON, sizes back in
// bytes, absent values as null (what the chart and --csv read too).
#pragma once

#include <nlohmann/json.hpp>

#include "metrics/worker_history.h"

namespace infervisor {

nlohmann::json history_to_json(const WorkerHistory& history);

}  // namespace infervisor
