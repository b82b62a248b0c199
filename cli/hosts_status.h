// `infervisorctl -H A -H B status`: the workers of several hosts in one
// table. Each host is asked by an infervisorctl process of its own (this
// binary again, with that one -H, --json, and ssh in BatchMode so that no
// password prompt stalls it), all at once; the answers make one table with
// a HOST column first, and a host that did not answer is a row that says
// why (ssh's or the bridge's last word) rather than a failure of the whole
// command. Each host has until the deadline to answer (--timeout, 30s by
// default): past it, its process and its ssh are killed (a process group
// each) and its row says "no answer within 30s". Exit status: 0 when every
// host answered, 4 when any did not.
// --json: {"hosts": [{"host", "workers", "drained"} or {"host", "error",
// "exit_code"}]}, in the order given.
#pragma once

#include <string>
#include <vector>

#include "cli_context.h"
#include "status_table.h"

namespace infervisor::cli {

inline constexpr Duration kHostsTimeout = std::chrono::seconds(30);

struct HostsDeadline {
    Duration limit;
    std::string text;  // as the user wrote it, for the rows: "30s"
};

void run_status_on_hosts(CliContext& ctx, const std::vector<std::string>& names, TableWidth width,
                         const HostsDeadline& deadline);

}  // namespace infervisor::cli
