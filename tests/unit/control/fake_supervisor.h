// FakeSupervisor: an in-memory SupervisorApi for the control tests, the
// fuzzer and the benchmark. Not thread-safe: call it on the loop thread
// (tests post to the io_context).
//
// Actions complete synchronously by default; with hold_actions they wait in
// pending until complete_pending(), as a real stop waits for the worker.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "control/event_ring.h"
#include "control/supervisor_api.h"

namespace infervisor::testing {

class FakeSupervisor : public SupervisorApi {
  public:
    // Adds a worker in state `state` with a small spec.
    WorkerView& add_worker(const std::string& name, const std::string& state = "running");
    // n workers "worker-000".. with plausible measurements (for the benchmark).
    void add_workers(std::size_t n);

    std::vector<WorkerView> list_workers() const override;
    std::vector<GpuCardView> list_gpus() const override { return gpus; }
    std::vector<GpuCardView> gpus;  // what list_gpus() answers
    std::optional<WorkerDetail> get_worker(const std::string& name) const override;
    std::vector<ControlEvent> recent_events(const EventQuery& query) const override;
    // Every line (of every text) that says "bad" is an error there;
    // answered at once (or refused with `refuse_validation` when that is set).
    void validate_config(ConfigTexts texts, const PeerCredentials& caller,
                         ValidateDone done) override;
    PeerCredentials last_validation_caller;  // of the last validate_config
    static std::vector<std::string> bad_lines(const std::string& text, const std::string& name);
    std::string refuse_validation;

    void start(const std::vector<std::string>& names, ActionDone done) override;
    void stop(const std::vector<std::string>& names, ActionDone done) override;
    void restart(const std::vector<std::string>& names, ActionDone done) override;
    void kill(const std::string& name, int signal, ActionDone done) override;
    void checkpoint(const std::vector<std::string>& names, ActionDone done) override;
    void suspend(const std::vector<std::string>& names, ActionDone done) override;
    void resume(const std::vector<std::string>& names, ActionDone done) override;
    void reload(ChangeMode mode, ReloadDone done) override;
    // Refuses names in workers (configured); else "removes" <workdir_root>/NAME,
    // existing when listed in `workdirs`, and forgets it.
    void remove_workdir(const std::string& name, ChangeMode mode, RemoveWorkDirDone done) override;
    // Lists `checkpoints[name]`; deletes from it all or nothing, refusing
    // ids it does not hold, and records "delete-checkpoints NAME ID.. by uid N".
    CheckpointListing list_checkpoints(const std::string& name) const override;
    void delete_checkpoints(const std::string& name, const CheckpointSelection& selection,
                            const PeerCredentials& caller, CheckpointsDeleted done) override;
    Subscription subscribe(EventSink sink) override;
    // Records "drain" / "undrain"; a drain stops every worker that is not
    // stopped ("stopped" each) and sets `is_drained`; undrain names
    // `drained_were_up` and clears it.
    void drain(DrainDone done) override;
    std::vector<std::string> undrain() override;
    bool drained() const override { return is_drained; }
    // trace(): these blocks, one per reply (so the client asks again);
    // empty (nullopt): the daemon keeps no recording.
    std::optional<TraceRecorder::Chunk> trace(uint64_t from) const override {
        if (!trace_blocks) return std::nullopt;
        TraceRecorder::Chunk chunk;
        for (uint64_t i = from; i < trace_blocks->size(); ++i) {
            chunk.blocks.push_back({i, (*trace_blocks)[i]});
            chunk.more = i + 1 < trace_blocks->size();
            break;
        }
        return chunk;
    }
    std::optional<std::vector<std::string>> trace_blocks;
    bool is_drained = false;
    std::vector<std::string> drained_were_up;

    // Records the event and delivers it to every subscriber.
    void emit(ControlEvent event);
    std::size_t subscriber_count() const { return subscribers_.size(); }

    // Completes held actions, in order.
    void complete_pending();

    bool hold_actions = false;
    ReloadOutcome next_reload{true, true, {}, {}, {}, {}};
    std::vector<std::string>
        actions;  // "stop a b", "kill a 9", "reload", "reload --dry-run", in order
    std::string workdir_root = "/var/lib/infervisor/workers";
    std::vector<std::string> workdirs;                                // names whose work dir exists
    std::map<std::string, std::vector<CheckpointEntry>> checkpoints;  // by worker, oldest first

  private:
    void act(const std::string& verb, const std::vector<std::string>& names,
             const std::string& new_state, ActionDone done);
    WorkerDetail* find(const std::string& name);

    std::vector<WorkerDetail> workers_;
    EventRing events_;
    std::map<int, EventSink> subscribers_;
    int next_subscriber_ = 0;
    std::vector<std::function<void()>> pending_;
};

}  // namespace infervisor::testing
