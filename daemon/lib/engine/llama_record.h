// LlamaRecord: what the daemon records beside a checkpoint of llama-server's
// slots (`checkpoint: {method: llama-server}`), and how a restore is judged
// against the server it would go into.
//
// A slot file holds the slot's tokens and KV cells in llama.cpp's session
// format (llama_state_seq_save_file); loading one checks its version and
// little more (not the model it was made with), so a restore into another
// model, another build or another context size would load garbage or fail
// half-way. The record says what the files were made with: the model file
// the server loaded (its path as /props says, and its size and mtime as the
// daemon saw them through the server's root), the server's build_info and
// its n_ctx per slot; and which slot went to which file, with its tokens.
//
// The record is the daemon's: a root-owned file, mode 0600, in the sealed
// checkpoint (kLlamaRecordName), written once after the checkpoint is
// published and read back whole or not at all: JSON that must parse with
// every field of its type, else there is no record (the checkpoint is not
// restored).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace infervisor {

inline constexpr char kLlamaRecordName[] = "infervisor-llama-server";
inline constexpr size_t kMaxLlamaRecordBytes = 256 * 1024;

// The model file the server loaded, as the daemon found it.
struct LlamaModelFile {
    uint64_t size = 0;
    int64_t mtime_ns = 0;  // nanoseconds since the epoch

    bool operator==(const LlamaModelFile&) const = default;
};

// What a running llama-server is: what is compared.
struct LlamaServerIdentity {
    std::string model_path;
    std::optional<LlamaModelFile> model;  // empty: the file could not be examined
    std::string build_info;
    int64_t n_ctx = 0;

    bool operator==(const LlamaServerIdentity&) const = default;
};

struct LlamaSavedSlot {
    int64_t id = 0;
    std::string file;     // llama_slot_file_name(id)
    uint64_t tokens = 0;  // n_saved
    uint64_t bytes = 0;   // n_written

    bool operator==(const LlamaSavedSlot&) const = default;
};

struct LlamaRecord {
    LlamaServerIdentity server;
    std::vector<LlamaSavedSlot> slots;

    uint64_t tokens() const;  // of all slots
    bool operator==(const LlamaRecord&) const = default;
};

std::string format_llama_record(const LlamaRecord& record);
// The inverse: nullopt unless the text is exactly a record (every field
// there with its type, each slot's file the name its id gives).
std::optional<LlamaRecord> parse_llama_record(const std::string& text);

// What differs between the server a checkpoint was saved from and the one
// it would be restored into, one phrase each ("the model file is now
// /m/b.gguf (was /m/a.gguf)"); empty when they match. A model file that
// could not be examined, now or then, matches nothing.
std::vector<std::string> llama_record_differences(const LlamaServerIdentity& saved,
                                                  const LlamaServerIdentity& now);

// Blocking (one stat): the model file `model_path` as the server sees it,
// looked up below `root` (/proc/PID/root of its main process, or "/"), or
// why not. Only its size and mtime are read.
Result<LlamaModelFile> examine_model_file(const std::filesystem::path& root,
                                          const std::string& model_path);

// Writes the record into the checkpoint dir `dir_fd` (a root-owned sealed
// checkpoint): a new root-owned file, mode 0600, never one that was there.
Result<void> write_llama_record(int dir_fd, const LlamaRecord& record);
// Reads it back: only a root-owned regular file, not writable by others, of
// at most kMaxLlamaRecordBytes that parses whole; else nullopt.
std::optional<LlamaRecord> read_llama_record(int dir_fd);

}  // namespace infervisor
