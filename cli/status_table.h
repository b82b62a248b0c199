// The worker table of `infervisorctl status` and `top`.
#pragma once

#include <ostream>
#include <vector>

#include "control/supervisor_api.h"

namespace infervisor::cli {

// Columns: NAME STATE PID UPTIME RESTARTS MEMORY HIGH MAX SWAP PSI10 LAST-EXIT.
// With `colour`, the state is coloured (padding is computed without codes);
// without `legend`, the header line is left out (--no-legend).
void print_status_table(std::ostream& out, const std::vector<WorkerStatus>& workers, bool colour,
                        bool legend = true);

// `infervisorctl show`: one worker, a field per line.
void print_worker_detail(std::ostream& out, const WorkerDetail& detail, bool colour);

}  // namespace infervisor::cli
