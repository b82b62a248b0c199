// libFuzzer target: the answers an inference server gives the engine
// adapters (untrusted: the worker serves them) — llama-server's /props,
// /slots and slot actions, vLLM's sleep endpoints, Ollama's /api/ps and
// unload — and the llama-server checkpoint record the daemon reads back from
// a checkpoint dir (engine/llama_record.h). The first byte picks the HTTP
// status (200 or an error status), the rest is the body, as the HTTP
// exchange hands it over (bounded, de-chunked).
//
// Whatever the bytes, no parser may crash, and:
//  - an Ollama model list holds at most kMaxOllamaModels models, each named
//    by 1 to kMaxOllamaModelName printable ASCII bytes (they go back to the
//    server and into the journal);
//  - llama_error_text's message has no control characters (it is journaled);
//  - a record that parses is written back to the same record.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/llama_record.h"
#include "engine/llama_slots.h"
#include "engine/ollama_models.h"
#include "engine/vllm_sleep.h"

using namespace infervisor;

namespace {

constexpr int kStatuses[] = {200, 200, 200, 200, 400, 401, 404, 500, 501, 503};

void check_printable(const std::string& text) {
    for (char c : text)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    HttpAnswer answer;
    answer.complete = true;
    answer.status = kStatuses[data[0] % (sizeof kStatuses / sizeof kStatuses[0])];
    answer.content_type = "application/json";
    answer.body.assign(reinterpret_cast<const char*>(data) + 1, size - 1);

    (void)parse_llama_props(answer);
    (void)parse_llama_slots(answer);
    for (SlotAction action : {SlotAction::save, SlotAction::restore, SlotAction::erase})
        (void)parse_llama_slot_result(answer, action);
    if (answer.status != 200) check_printable(llama_error_text(answer));

    (void)check_vllm_done(answer, "POST /sleep?level=1");
    (void)parse_vllm_is_sleeping(answer);

    if (auto models = parse_ollama_ps(answer)) {
        if (models->size() > kMaxOllamaModels) std::abort();
        for (const auto& m : *models) {
            if (m.name.empty() || m.name.size() > kMaxOllamaModelName) std::abort();
            for (char c : m.name)
                if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) > 0x7e)
                    std::abort();
        }
    }
    (void)check_ollama_unloaded(answer, "llama3.2:latest");

    if (auto record = parse_llama_record(answer.body)) {
        auto again = parse_llama_record(format_llama_record(*record));
        if (!again || !(*again == *record)) std::abort();
    }
    return 0;
}
