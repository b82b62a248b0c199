// libFuzzer target: a recording of the policy engine's input
// (policy/policy_trace.h) as `infervisorctl simulate --from FILE` reads it,
// from anyone (an incident shared between hosts, a fixture), and the base64
// the Trace call carries it in.
//
// Whatever the bytes, decoding may not crash or read out of bounds, and:
//  - a trace that decodes, written again block by block, decodes to as many
//    entries with the same times and the same workers' growth figures (the
//    encoder takes what the decoder gives, clamped alike);
//  - base64 that decodes encodes back to the same text.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/base64.h"
#include "policy/policy_trace.h"

using namespace infervisor;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view bytes(reinterpret_cast<const char*>(data), size);
    if (auto text = base64_decode(bytes); text && base64_encode(*text) != bytes) std::abort();

    auto decoded = decode_trace_file(bytes);
    std::vector<TraceEntry> block_entries;
    bool block_ok = static_cast<bool>(decode_trace_block(bytes, block_entries));
    const std::vector<TraceEntry>* entries = decoded    ? &*decoded
                                             : block_ok ? &block_entries
                                                        : nullptr;
    if (!entries) return 0;
    TraceBlockWriter writer;
    for (const auto& e : *entries) std::visit([&](const auto& v) { writer.add(v); }, e);
    std::vector<TraceEntry> again;
    if (!decode_trace_block(writer.bytes(), again)) std::abort();
    if (again.size() != entries->size()) std::abort();
    for (size_t i = 0; i < again.size(); ++i) {
        if (entry_time(again[i]) != entry_time((*entries)[i]) ||
            entry_wall_ms(again[i]) != entry_wall_ms((*entries)[i]))
            std::abort();
        const auto* round = std::get_if<TraceRound>(&(*entries)[i]);
        const auto* round_again = std::get_if<TraceRound>(&again[i]);
        if (!round != !round_again) std::abort();
        if (!round) continue;
        if (round->workers.size() != round_again->workers.size()) std::abort();
        for (size_t k = 0; k < round->workers.size(); ++k)
            if (round->workers[k].growth_percent_per_min !=
                round_again->workers[k].growth_percent_per_min)
                std::abort();
    }
    return 0;
}
