#include "supervise/worker_llama_slots.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

#include "engine/json_answer.h"

namespace infervisor {

struct WorkerLlamaSlots::Op {
    Server server;
    std::function<void(Result<LlamaRecord>)> saved;  // a save
    std::function<void(Restored)> restored;          // a restore
    LlamaRecord record;  // a save: what was saved so far; a restore: what to restore
    UniqueFd from, staging;
    Restored outcome;
    std::vector<LlamaSavedSlot> wanted;  // a restore: the slots with tokens
    std::string linked;                  // the file linked into staging now
    struct stat linked_st {};
};

WorkerLlamaSlots::WorkerLlamaSlots(boost::asio::io_context& io) : io_(io) {}

WorkerLlamaSlots::~WorkerLlamaSlots() { cancel(); }

void WorkerLlamaSlots::cancel() {
    ++generation_;
    if (exchange_) std::exchange(exchange_, nullptr)->cancel();
    if (op_) unlink_restore_file();
    op_.reset();
}

void WorkerLlamaSlots::run_ended() {
    cancel();
    run_server_.reset();
}

void WorkerLlamaSlots::exchange(HttpRequest request, std::function<void(HttpAnswer)> next) {
    uint64_t generation = generation_;
    exchange_ = start_http_exchange(io_, std::move(request), op_->server.timeout,
                                    [this, generation, next = std::move(next)](HttpAnswer answer) {
                                        if (generation != generation_ || !op_) return;
                                        exchange_.reset();
                                        next(std::move(answer));
                                    });
}

void WorkerLlamaSlots::examine_model(const LlamaProps& props,
                                     std::function<void(LlamaServerIdentity, Result<void>)> next) {
    if (!background_) background_ = std::make_unique<BackgroundWork>(io_);
    uint64_t generation = generation_;
    LlamaServerIdentity identity{props.model_path, std::nullopt, props.build_info, props.n_ctx};
    // One stat of a path the server named, through its root: off the loop,
    // so that a file system that hangs cannot stop the daemon.
    background_->run<Result<LlamaModelFile>>(
        [root = op_->server.model_root, path = props.model_path] {
            return examine_model_file(root, path);
        },
        [this, generation, identity, next = std::move(next)](Result<LlamaModelFile> file) mutable {
            if (generation != generation_ || !op_) return;
            if (!file) return next(std::move(identity), file.error());
            identity.model = *file;
            next(std::move(identity), {});
        });
}

void WorkerLlamaSlots::save(Server server, std::function<void(Result<LlamaRecord>)> done) {
    cancel();
    op_ = std::make_unique<Op>();
    op_->server = std::move(server);
    op_->saved = std::move(done);
    const Server& s = op_->server;
    exchange(llama_props_request(s.engine, s.bearer), [this](HttpAnswer answer) {
        auto props = parse_llama_props(answer);
        if (!props) return end_save(props.error());
        examine_model(*props, [this](LlamaServerIdentity identity, Result<void> examined) {
            if (!examined)
                return end_save(plain_error("the model file could not be examined: " +
                                            examined.error().message()));
            if (!run_server_) run_server_ = identity;
            if (auto changed = llama_record_differences(*run_server_, identity); !changed.empty()) {
                std::string what;
                for (const auto& d : changed) what += (what.empty() ? "" : "; ") + d;
                return end_save(
                    plain_error("the server is not the one this run started with: " + what +
                                "; its slots would be restored into another model"));
            }
            op_->record.server = std::move(identity);
            const Server& ours = op_->server;
            exchange(llama_slots_request(ours.engine, ours.bearer), [this](HttpAnswer listed) {
                auto slots = parse_llama_slots(listed);
                if (!slots) return end_save(slots.error());
                if (slots->empty()) return end_save(plain_error("GET /slots lists no slot"));
                save_slots(std::move(*slots), 0);
            });
        });
    });
}

void WorkerLlamaSlots::save_slots(std::vector<LlamaSlot> slots, size_t i) {
    if (i == slots.size()) return end_save(std::move(op_->record));
    int64_t id = slots[i].id;
    std::string file = llama_slot_file_name(id);
    const Server& s = op_->server;
    exchange(llama_slot_action_request(s.engine, s.bearer, id, SlotAction::save, file),
             [this, slots = std::move(slots), i, id, file](HttpAnswer answer) mutable {
                 auto saved = parse_llama_slot_result(answer, SlotAction::save);
                 if (!saved)
                     return end_save(plain_error("slot " + std::to_string(id) + ": " +
                                                 saved.error().message()));
                 if (saved->id_slot != id || saved->filename != file)
                     return end_save(plain_error("slot " + std::to_string(id) +
                                                 ": the server answered for slot " +
                                                 std::to_string(saved->id_slot) + ", file '" +
                                                 shown_text(saved->filename) + "'"));
                 // llama_state_seq_save_file returns 0 when it could not
                 // write the file, and the server still answers 200.
                 if (saved->bytes == 0)
                     return end_save(plain_error("slot " + std::to_string(id) +
                                                 ": the server wrote nothing (n_written 0: it "
                                                 "could not write " +
                                                 file + " into its --slot-save-path)"));
                 op_->record.slots.push_back({id, file, saved->tokens, saved->bytes});
                 save_slots(std::move(slots), i + 1);
             });
}

void WorkerLlamaSlots::end_save(Result<LlamaRecord> result) {
    auto done = std::move(op_->saved);
    op_.reset();
    done(std::move(result));
}

void WorkerLlamaSlots::restore(Server server, LlamaRecord record, UniqueFd from, UniqueFd staging,
                               std::function<void(Restored)> done) {
    cancel();
    op_ = std::make_unique<Op>();
    op_->server = std::move(server);
    op_->restored = std::move(done);
    op_->record = std::move(record);
    op_->from = std::move(from);
    op_->staging = std::move(staging);
    for (const auto& slot : op_->record.slots)
        if (slot.tokens > 0) op_->wanted.push_back(slot);
    op_->outcome.wanted = op_->wanted.size();
    const Server& s = op_->server;
    exchange(llama_props_request(s.engine, s.bearer), [this](HttpAnswer answer) {
        auto props = parse_llama_props(answer);
        if (!props) {
            op_->outcome.result = props.error();
            return end_restore();
        }
        examine_model(*props, [this](LlamaServerIdentity now, Result<void> examined) {
            if (!run_server_ && examined) run_server_ = now;
            auto& differences = op_->outcome.differences;
            differences = llama_record_differences(op_->record.server, now);
            for (auto& d : differences)
                if (!examined && d.find("could not be examined now") != std::string::npos)
                    d += " (" + examined.error().message() + ")";
            if (!op_->outcome.differences.empty()) return end_restore();
            restore_slots(0);
        });
    });
}

void WorkerLlamaSlots::restore_slots(size_t i) {
    if (i == op_->wanted.size()) return end_restore();
    const LlamaSavedSlot& slot = op_->wanted[i];
    // The sealed file, linked into the server's --slot-save-path by
    // descriptor: a name the worker put there first is its own, removed.
    int from = op_->from.get(), staging = op_->staging.get();
    const char* name = slot.file.c_str();
    int r = ::linkat(from, name, staging, name, 0);
    if (r < 0 && errno == EEXIST && ::unlinkat(staging, name, 0) == 0)
        r = ::linkat(from, name, staging, name, 0);
    if (r < 0) {
        op_->outcome.result = errno_error("linking " + slot.file + " into the staging dir");
        return end_restore();
    }
    op_->linked = slot.file;
    if (::fstatat(staging, name, &op_->linked_st, AT_SYMLINK_NOFOLLOW) < 0) op_->linked_st = {};
    int64_t id = slot.id;
    const Server& s = op_->server;
    exchange(llama_slot_action_request(s.engine, s.bearer, id, SlotAction::restore, slot.file),
             [this, i, id](HttpAnswer answer) {
                 unlink_restore_file();
                 auto restored = parse_llama_slot_result(answer, SlotAction::restore);
                 if (restored) {
                     ++op_->outcome.slots;
                     op_->outcome.tokens += restored->tokens;
                 } else if (op_->outcome.result) {
                     op_->outcome.result = plain_error("slot " + std::to_string(id) + ": " +
                                                       restored.error().message());
                 }
                 // One slot the server could not take (fewer --parallel
                 // slots now, a full KV cache) does not cost the others.
                 restore_slots(i + 1);
             });
}

void WorkerLlamaSlots::unlink_restore_file() {
    if (op_->linked.empty()) return;
    std::string name = std::exchange(op_->linked, {});
    struct stat st;
    // Only our link: the worker may have replaced the name meanwhile.
    if (::fstatat(op_->staging.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        st.st_dev == op_->linked_st.st_dev && st.st_ino == op_->linked_st.st_ino)
        (void)::unlinkat(op_->staging.get(), name.c_str(), 0);
}

void WorkerLlamaSlots::end_restore() {
    auto done = std::move(op_->restored);
    Restored outcome = std::move(op_->outcome);
    op_.reset();
    done(std::move(outcome));
}

}  // namespace infervisor
