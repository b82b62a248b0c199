// WorkerLlamaSlots: the saves and restores of one worker's llama-server
// slots (`checkpoint: {method: llama-server}`), as HTTP exchanges on the
// event loop (probe/http_exchange.h) with the requests and answers of
// engine/llama_slots.h.
//
// A save: GET /props (the model path, build, n_ctx), the model file
// examined (engine/llama_record.h; one stat, off the loop), GET /slots, then
// POST /slots/ID?action=save {"filename": "slot-ID.bin"} for every slot the
// server lists, one after the other (the server runs them one at a time
// anyway, and waits for a slot's request in flight to end before saving
// it). The server writes the files into its --slot-save-path, the worker's
// staging dir; `done` gets the LlamaRecord of what was saved, or the first
// error (the server's answer in words, or why its answer is unusable; a
// save answered with "n_written": 0 is one: llama_state_seq_save_file could
// not write the file, and the server answers 200 all the same).
// A slot of 0 tokens is saved too (its file is small): /slots does not say
// which slots hold tokens (a restored slot has no task to show).
//
// A restore: GET /props and the model file, compared with the record
// (llama_record_differences: any difference ends it, nothing is restored);
// then for each slot of the record that holds tokens: its file is linked by
// descriptor from the sealed checkpoint into the staging dir (linkat between
// the two dir descriptors, no path followed; the server reads restore files
// only from its --slot-save-path), POST /slots/ID?action=restore, and the
// link is removed again (only if the name still is that link). A slot the
// server refuses is counted out and the next one is restored all the same;
// the first refusal is the outcome's error. The files
// are root's and readable by the worker (checkpoint_seal.h), so the server
// can read the link and not change it.
//
// The server of a run: the identity first found in it (by the restore at
// its start, else by its first save) is kept until run_ended(). A save
// whose server differs from it (the model file replaced under the running
// server, say, before a stop's save) fails rather than record the new
// file for the old weights: its slots would be restored into another model.
// A file replaced before the run's first save or restore is not seen.
//
// Contract: event-loop thread only; one operation at a time (a second one
// cancels the first). `done` is called exactly once per operation, on the
// loop, never from within save()/restore(), and never after cancel() or
// the destruction of this object. cancel() removes a link a restore left in
// the staging dir. Every exchange has `Server::timeout` as its deadline; the
// caller bounds the whole sequence with its own timer and cancel().
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "base/unique_fd.h"
#include "engine/engine_spec.h"
#include "engine/llama_record.h"
#include "engine/llama_slots.h"
#include "probe/http_exchange.h"
#include "supervise/background_work.h"

namespace infervisor {

class WorkerLlamaSlots {
  public:
    struct Server {
        EngineSpec engine;
        std::string bearer;                      // --api-key, or empty
        std::filesystem::path model_root = "/";  // /proc/PID/root of the server
        Duration timeout{};                      // of each exchange
    };
    struct Restored {
        Result<void> result;                   // the first error
        std::vector<std::string> differences;  // not restored: the server differs
        size_t slots = 0;                      // restored
        uint64_t tokens = 0;                   // their n_restored, summed
        size_t wanted = 0;                     // slots of the record with tokens
    };

    explicit WorkerLlamaSlots(boost::asio::io_context& io);
    ~WorkerLlamaSlots();
    WorkerLlamaSlots(const WorkerLlamaSlots&) = delete;
    WorkerLlamaSlots& operator=(const WorkerLlamaSlots&) = delete;

    void save(Server server, std::function<void(Result<LlamaRecord>)> done);
    // The run ended: what follows is another server (cancels any operation).
    void run_ended();
    // `from`: the sealed checkpoint's dir; `staging`: the server's
    // --slot-save-path (both opened O_DIRECTORY|O_NOFOLLOW by the caller).
    void restore(Server server, LlamaRecord record, UniqueFd from, UniqueFd staging,
                 std::function<void(Restored)> done);
    void cancel();

  private:
    struct Op;
    void exchange(HttpRequest request, std::function<void(HttpAnswer)> next);
    void examine_model(const LlamaProps& props,
                       std::function<void(LlamaServerIdentity, Result<void>)> next);
    void save_slots(std::vector<LlamaSlot> slots, size_t i);
    void restore_slots(size_t i);
    void end_save(Result<LlamaRecord> result);
    // The run's server as first found (see above); empty until then.
    std::optional<LlamaServerIdentity> run_server_;
    void end_restore();
    // Removes the link restore_slots made in the staging dir, if it is there.
    void unlink_restore_file();

    boost::asio::io_context& io_;
    std::unique_ptr<Op> op_;
    uint64_t generation_ = 0;  // tells a live operation's callbacks from a cancelled one's
    std::shared_ptr<HttpExchange> exchange_;
    std::unique_ptr<BackgroundWork> background_;
};

}  // namespace infervisor
