// llama-server's slot API, as the daemon speaks it for `checkpoint: {method:
// llama-server}`: the requests (GET /props, GET /slots, POST /slots/ID with
// ?action=save|restore|erase) and the reading of their answers, errors
// included. Pure: requests are built and answers parsed; exchanging them is
// supervise/'s (probe/http_exchange.h).
//
// Followed: ggml-org/llama.cpp, tools/server/server-context.cpp at commit
// fb4026604c67 (server_routes: get_slots, post_slots, get_props,
// handle_slots_save, handle_slots_restore, handle_slots_erase;
// server_context::process_single_task, SERVER_TASK_TYPE_SLOT_SAVE /
// _RESTORE / _ERASE; server_slot::to_json), tools/server/server-task.cpp
// (server_task_result_slot_save_load::to_json,
// server_task_result_slot_erase::to_json), tools/server/server-common.cpp
// (format_error_response), tools/server/server-http.cpp at aa6192d38def
// (middleware_server_state: 503 "Loading model"; middleware_validate_api_key:
// 401 "Invalid API Key"; the 404 "File Not Found" error handler) and
// common/arg.cpp (--slot-save-path appends a '/' when missing;
// --slots/--no-slots, enabled by default in current builds).
//
//   GET  /props  -> {"default_generation_settings": {"n_ctx": N, ...},
//                    "total_slots": N, "model_path": "...", "build_info":
//                    "b6800-abc123", ...}
//   GET  /slots  -> [{"id": 0, "n_ctx": N, "is_processing": false, ...}, ...]
//   POST /slots/0?action=save    {"filename": "slot-0.bin"}
//                -> {"id_slot": 0, "filename": "slot-0.bin", "n_saved": TOKENS,
//                    "n_written": BYTES, "timings": {"save_ms": MS}}
//   POST /slots/0?action=restore {"filename": "slot-0.bin"}
//                -> {"id_slot": 0, "filename": "slot-0.bin", "n_restored": TOKENS,
//                    "n_read": BYTES, "timings": {"restore_ms": MS}}
//   POST /slots/0?action=erase   -> {"id_slot": 0, "n_erased": TOKENS}
//   errors       -> {"error": {"code": N, "message": "...", "type": "..."}}
//                   with N as the HTTP status: 400 "Invalid slot ID",
//                   "Invalid filename", "Invalid action", "Unable to restore
//                   slot, no available space in KV cache or invalid slot save
//                   file" (also a missing file); 501 "This server does not
//                   support slots action. Start it with `--slot-save-path`",
//                   "This feature is not supported by multimodal" (--mmproj),
//                   "This server does not support slots endpoint. Start it
//                   with `--slots`"; 503 "Loading model"; 401 "Invalid API
//                   Key"; 404 "File Not Found" (a server without the route).
//
// The server saves a slot into its --slot-save-path + filename (a bare file
// name: fs_validate_filename), as its own uid; a save of a slot that is
// processing a request waits until that request ends (the task is deferred).
//
// Contract: answers are untrusted (the worker serves them): bounded before
// they get here (kMaxLlamaAnswer), nesting checked before parsing (no deep
// recursion), every field used checked for its type and range; an answer
// that is not as above is an error saying what is wrong, never a guess.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "engine/engine_spec.h"
#include "probe/http_exchange.h"

namespace infervisor {

// The most of an answer's body read (GET /props carries the chat template,
// which can be tens of KiB).
inline constexpr size_t kMaxLlamaAnswer = 512 * 1024;
// The most slots taken from GET /slots (llama-server's --parallel).
inline constexpr size_t kMaxLlamaSlots = 256;

enum class SlotAction { save, restore, erase };

// The file a slot is saved to: "slot-ID.bin", a name fs_validate_filename
// accepts.
std::string llama_slot_file_name(int64_t id);

// `bearer`: the server's --api-key (sent as "Authorization: Bearer ..."), or
// empty.
HttpRequest llama_props_request(const EngineSpec& engine, const std::string& bearer);
HttpRequest llama_slots_request(const EngineSpec& engine, const std::string& bearer);
HttpRequest llama_slot_action_request(const EngineSpec& engine, const std::string& bearer,
                                      int64_t slot, SlotAction action, const std::string& filename);

struct LlamaProps {
    std::string model_path;  // the path the server loaded (-m), as it sees it
    std::string build_info;  // "b6800-abc123"; empty when the server does not say
    int64_t n_ctx = 0;       // per slot (default_generation_settings.n_ctx)
    std::optional<int64_t> total_slots;
};

struct LlamaSlot {
    int64_t id = 0;
    int64_t n_ctx = 0;
    bool is_processing = false;
};

struct LlamaSlotResult {
    int64_t id_slot = 0;
    std::string filename;  // empty for erase
    uint64_t tokens = 0;   // n_saved, n_restored or n_erased
    uint64_t bytes = 0;    // n_written or n_read
};

// An answer's meaning, or an Error saying what the server answered instead
// (llama_error_text) or what is wrong with the answer.
Result<LlamaProps> parse_llama_props(const HttpAnswer& answer);
Result<std::vector<LlamaSlot>> parse_llama_slots(const HttpAnswer& answer);
Result<LlamaSlotResult> parse_llama_slot_result(const HttpAnswer& answer, SlotAction action);

// A non-200 answer in words: "HTTP 501 (not_supported_error): This feature
// is not supported by multimodal"; the server's message bounded and stripped
// of control characters.
std::string llama_error_text(const HttpAnswer& answer);

}  // namespace infervisor
