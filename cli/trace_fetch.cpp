#include "trace_fetch.h"

#include "base/base64.h"

namespace infervisor::cli {

namespace {

// A daemon keeps at most a few MiB; a reply that claims more blocks than
// this is not believed.
constexpr size_t kMaxBlocks = 100'000;

}  // namespace

std::optional<std::vector<std::string>> fetch_trace_blocks(CliContext& ctx) {
    auto client = ctx.connect();
    if (!client) return std::nullopt;
    return fetch_trace_blocks(ctx, *client);
}

std::optional<std::vector<std::string>> fetch_trace_blocks(CliContext& ctx, VarlinkClient& client) {
    std::vector<std::string> blocks;
    uint64_t from = 0;
    for (;;) {
        auto reply = ctx.call(client, "io.infervisor.supervisor.Trace", {{"from", from}});
        if (!reply) return std::nullopt;
        const auto& p = reply->parameters;
        if (!p.value("recording", false)) {
            ctx.fail(kFailure,
                     "the daemon keeps no recording (its configuration has `metrics: history: 0`)");
            return std::nullopt;
        }
        const auto& list = p.value("blocks", nlohmann::json::array());
        for (const auto& b : list) {
            auto data = b.is_object() && b.contains("data") && b["data"].is_string()
                            ? base64_decode(b["data"].get<std::string>())
                            : std::nullopt;
            if (!data || !b.contains("sequence") || !b["sequence"].is_number_unsigned() ||
                b["sequence"].get<uint64_t>() < from || blocks.size() >= kMaxBlocks) {
                ctx.fail(kFailure, "the daemon's Trace reply is malformed");
                return std::nullopt;
            }
            from = b["sequence"].get<uint64_t>() + 1;
            blocks.push_back(std::move(*data));
        }
        if (!p.value("more", false)) return blocks;
        if (list.empty()) {
            ctx.fail(kFailure, "the daemon's Trace reply says more but has no blocks");
            return std::nullopt;
        }
    }
}

std::optional<std::vector<TraceEntry>> fetch_trace(CliContext& ctx) {
    auto client = ctx.connect();
    if (!client) return std::nullopt;
    return fetch_trace(ctx, *client);
}

std::optional<std::vector<TraceEntry>> fetch_trace(CliContext& ctx, VarlinkClient& client,
                                                   const std::string& only_worker) {
    auto blocks = fetch_trace_blocks(ctx, client);
    if (!blocks) return std::nullopt;
    std::vector<TraceEntry> trace, block_entries;
    for (const auto& b : *blocks) {
        block_entries.clear();
        if (auto r = decode_trace_block(b, block_entries); !r) {
            ctx.fail(kFailure, "the daemon's recording: " + r.error().message());
            return std::nullopt;
        }
        for (auto& entry : block_entries) {
            if (auto* round = std::get_if<TraceRound>(&entry); round && !only_worker.empty())
                std::erase_if(round->workers,
                              [&](const TraceWorker& w) { return w.name != only_worker; });
            trace.push_back(std::move(entry));
        }
    }
    return trace;
}

}  // namespace infervisor::cli
