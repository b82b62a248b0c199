// The daemon's recording of its policy engine's input (the Trace call,
// metrics/trace_recorder.h), fetched block by block, for `simulate` and
// `history` (with --export, the blocks as they are).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli_context.h"
#include "policy/policy_trace.h"

namespace infervisor::cli {

// The blocks, oldest first, as the daemon encoded them (policy_trace.h);
// empty with a failure recorded in `ctx` when the daemon cannot be asked,
// keeps no recording, or answers with something malformed.
std::optional<std::vector<std::string>> fetch_trace_blocks(CliContext& ctx);
// The same over a connection already open (with -H, a second connect()
// would end the first ssh session and start another).
std::optional<std::vector<std::string>> fetch_trace_blocks(CliContext& ctx, VarlinkClient& client);
// The blocks decoded; empty with a failure recorded when one does not decode.
// With `only_worker`, the rounds keep that worker's samples alone, block by
// block as they are decoded: a decoded sample (some 900 bytes) is about 80
// times its encoded size, so a 4 MiB recording of many workers is not held
// whole.
std::optional<std::vector<TraceEntry>> fetch_trace(CliContext& ctx, VarlinkClient& client,
                                                   const std::string& only_worker = {});
std::optional<std::vector<TraceEntry>> fetch_trace(CliContext& ctx);

}  // namespace infervisor::cli
