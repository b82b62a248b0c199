// The worker table of `infervisorctl status` and `top`, and the block of
// one worker (`status NAME`, `show NAME`).
#pragma once

#include <ostream>
#include <vector>

#include "control/supervisor_api.h"

namespace infervisor::cli {

// Which columns: `narrow` fits 80 columns for names of up to ~16
// characters (NAME STATE PID UPTIME MEM MAX PSI10 RESTARTS; the state
// without its reason); `wide` (-o wide) adds HIGH, SWAP, PROBES and LAST
// EXIT, and the state's reason.
enum class TableWidth { narrow, wide };

// With `colour`, the state is coloured (padding is computed without codes);
// without `legend`, the header line is left out (--no-legend).
void print_status_table(std::ostream& out, const std::vector<WorkerView>& workers, bool colour,
                        bool legend = true, TableWidth width = TableWidth::narrow);

// Under the narrow table: a line for each worker with something to say
// (its state's reason, probes that do not pass), for it is not in the
// table: "batch: suspended (rule 'host-thrash')". Not with --no-legend,
// whose output scripts read as the table's rows alone.
void print_status_notes(std::ostream& out, const std::vector<WorkerView>& workers);

// Under the table (status, top): a line for each of the host's GPUs, "GPU 0
// 0000:03:00.0 NVIDIA H100 80GB HBM3: 62G of 80G used, 85.00% busy", or
// "...: in error: GPU is lost"; nothing without GPUs.
void print_gpu_cards(std::ostream& out, const std::vector<GpuCardView>& cards);

// One worker as `systemctl status` shows a unit: its state and for how long,
// why, what would change it (the command to run), its process and memory,
// then `events` (its newest events, oldest first), each line as `events`
// prints it.
void print_worker_block(std::ostream& out, const WorkerView& worker,
                        const std::vector<ControlEvent>& events, bool colour);

// `infervisorctl show`: the block, then the worker's configuration.
void print_worker_detail(std::ostream& out, const WorkerDetail& detail,
                         const std::vector<ControlEvent>& events, bool colour);

// The line `events` prints for one event (without a newline); with a host
// (events read from journal files), its name follows the time, as in
// journalctl's lines.
std::string event_line(const ControlEvent& event, const std::string& host = {});

}  // namespace infervisor::cli
