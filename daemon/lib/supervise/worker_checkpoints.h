// WorkerCheckpoints: the checkpoints of one Worker — the request (signal,
// deadline), CHECKPOINT=1, publishing into the CheckpointStore, the periodic
// timer, and what the next run is offered to restore from.
//
// With `method: criu` a request dumps the worker's process tree with criu
// (WorkerCriu, off the loop) into the staging dir, which is then root's, not
// the worker's; CHECKPOINT=1 is ignored. A dump that criu refuses or fails
// is checkpoint-failed and answers with Outcome::kill when the caller stops
// the worker afterwards (the fallback is the kill a late cooperative worker
// gets); a dump for a stop leaves the tree stopped and answers with kill too,
// so the worker never runs on past its checkpoint. The next run restores the
// newest criu image (restore_by_criu) instead of starting the command; when
// that fails it is journaled and the command starts afresh.
//
// With `method: llama-server` a request asks the worker's llama-server (its
// `engine:`) to save every slot into the staging dir, its --slot-save-path
// (WorkerLlamaSlots; all the exchanges together within checkpoint.timeout),
// and then finishes as a CHECKPOINT=1 does: the staging dir is taken,
// sealed, judged and published, and the daemon writes its LlamaRecord
// (engine/llama_record.h: the model, the build, n_ctx, the slots) into the
// published checkpoint. A save the server refuses or cannot make (not
// ready, 501 for a multimodal server, no answer) is checkpoint-failed
// (REASON=engine-error, or timeout) and the older checkpoints are kept;
// CHECKPOINT=1 is ignored. The next run is given INFERVISOR_RESTORE_FROM as
// any; once it is ready (run_ready) its server is compared with the record
// (a difference: checkpoint-failed REASON=engine-mismatch, the server goes
// on clean) and each slot that held tokens is restored (WorkerLlamaSlots),
// then checkpoint-restored says how many slots and tokens. A checkpoint
// without a readable record is not restored (REASON=engine-record).
//
// Contract: all methods run on the event loop thread and none blocks: the
// store's O(1) renames happen on the loop; sealing and measuring a checkpoint
// and deleting retired ones run on a background thread of this object. A
// finished checkpoint (CHECKPOINT=1, or criu's dump) is taken out of the
// staging dir, sealed (root's, readable by the worker only:
// checkpoint/checkpoint_seal.h), measured and judged by
// checkpoint/checkpoint_retention.h's rule, and only then published: one
// over the quota is never the newest, so a crash cannot offer it. Every
// checkpoint and restore is journaled here with its numbers:
//  - checkpoint-written when a checkpoint was published (bytes, seconds from
//    the request, trigger), whether requested or not;
//  - checkpoint-failed when no CHECKPOINT=1 came within the timeout, or what
//    was written could not be sealed or published (REASON=unusable), or was
//    over the checkpoint quota (REASON=quota: the new one is deleted, the
//    older ones kept); it names the last good checkpoint;
//  - checkpoint-retired when the sweep, every kSweepInterval on the clock,
//    deleted a checkpoint: older than max_age, beyond `keep`, or no longer
//    within the quota on fresh measurements (one grew through a descriptor
//    its worker held across the seal, or the quota was lowered);
//  - checkpoint-restoring when a run starts with INFERVISOR_RESTORE_FROM, and
//    checkpoint-restored when that run sends READY=1 (seconds since start),
//    or, with llama-server, when its slots are restored (SLOTS_RESTORED,
//    TOKENS_RESTORED);
//  - checkpoint-deleted when an operator deleted checkpoints (remove()).
// A request answers its `Finished` exactly once: once the checkpoint its
// CHECKPOINT=1 finished is judged (or at once when nothing could be taken),
// at the timeout, or when the run ends first. Waiting for the judgement
// keeps the journal in order (checkpoint-written before the stop). A
// CHECKPOINT=1 that arrives while a checkpoint is still being judged is
// handled after it, and any more meanwhile count as one; an unrequested one
// within a second of the previous checkpoint is ignored, and unusable
// unrequested ones are journaled at a bounded rate (a worker flooding them
// cannot queue unbounded work or flood the journal).
#pragma once

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/paths.h"
#include "base/result.h"
#include "base/timer.h"
#include "checkpoint/checkpoint_retention.h"
#include "checkpoint/checkpoint_spec.h"
#include "checkpoint/checkpoint_store.h"
#include "engine/engine_spec.h"
#include "engine/llama_record.h"
#include "journal/event.h"
#include "process/spawn_request.h"
#include "supervise/background_work.h"
#include "supervise/worker_criu.h"
#include "supervise/worker_llama_slots.h"

namespace infervisor {

class WorkerCheckpoints {
  public:
    using Fields = std::vector<std::pair<std::string, std::string>>;
    using Emit = std::function<void(EventKind, std::string, Fields)>;
    // Sends the checkpoint signal to the worker's main process; `thaw`: a
    // frozen worker is thawed first (else refused: periodic checkpoints
    // leave a frozen worker alone).
    using Signaller = std::function<Result<void>(int sig, bool thaw)>;

    struct Outcome {
        bool published = false;  // a new complete checkpoint exists
        bool timed_out = false;  // no CHECKPOINT=1 within the timeout
        std::string detail;      // why not, in words
        bool kill = false;       // criu: the worker is to be killed, not stopped
        // Published: its size when measured (detail is then its path).
        std::optional<uint64_t> bytes;
    };
    using Finished = std::function<void(const Outcome&)>;

    // The directories a run is given.
    struct RunDirs {
        std::filesystem::path staging;                      // INFERVISOR_CHECKPOINT_DIR
        std::optional<std::filesystem::path> restore_from;  // INFERVISOR_RESTORE_FROM
        // criu mode, and the newest checkpoint is a criu image: restore it.
        std::optional<std::filesystem::path> criu_restore;
        CriuRecord criu_record;
    };
    // The running worker's processes, for a criu dump.
    struct Processes {
        pid_t main = 0;
        std::vector<pid_t> all;
    };
    using ProcessLookup = std::function<Processes()>;
    using Restored = std::function<void(Result<SpawnedProcess>)>;

    WorkerCheckpoints(boost::asio::io_context& io, const Clock& clock, Paths paths,
                      std::string worker, Emit emit);
    ~WorkerCheckpoints();
    WorkerCheckpoints(const WorkerCheckpoints&) = delete;
    WorkerCheckpoints& operator=(const WorkerCheckpoints&) = delete;

    // How often the sweep re-judges the kept checkpoints (max_age, keep,
    // quota on fresh measurements), whether the worker runs or not.
    static constexpr Duration kSweepInterval = std::chrono::minutes(10);

    void set_spec(const CheckpointSpec& spec) { spec_ = spec; }
    // The worker's engine (llama-server: where its slots are saved and
    // restored) and the file holding its --api-key (a credential's source),
    // read at each checkpoint.
    void set_engine(std::optional<EngineSpec> engine,
                    std::optional<std::filesystem::path> api_key_file) {
        engine_ = std::move(engine);
        api_key_file_ = std::move(api_key_file);
    }
    void set_process_lookup(ProcessLookup lookup) { lookup_ = std::move(lookup); }

    // Before a run of `who`: a fresh staging dir owned by its uid:gid and the
    // newest complete checkpoint (a criu image only if it was dumped as `who`;
    // else checkpoint-failed says why and the run starts fresh). Then
    // run_started() once the process exists.
    Result<RunDirs> prepare_run(const ProcessIdentity& who);
    void run_started(Signaller signaller);
    // For a run an earlier daemon started (adoption): its staging dir is
    // kept as it is (the worker may be writing into it), a checkpoint the
    // earlier daemon was judging is dropped, and nothing is offered or
    // journaled; then run_started() as for a new run.
    Result<RunDirs> adopt_run(uid_t uid, gid_t gid);
    // The run became `running`: periodic checkpoints start. `announced`:
    // by READY=1 (then a restore is journaled as done, with its time).
    void run_ready(TimePoint started_at, bool announced);
    // The main process exited: timers stop, a pending request is answered.
    void run_ended();

    // Sends the signal and waits for CHECKPOINT=1. `trigger` says who asked
    // ("rule 'growth'", "periodic", "infervisorctl"); `if_late` what the
    // caller will do when the timeout passes ("killing the worker"), for the
    // journal; `thaw` as for Signaller; `then_stop`: the caller stops the
    // worker once answered (criu then leaves it stopped); `bound`: answered
    // within this, when shorter than checkpoint.timeout (not for criu).
    // Fails when no run is up or a request is already pending.
    Result<void> request(std::string trigger, std::string if_late, Finished finished,
                         bool thaw = true, bool then_stop = false,
                         std::optional<Duration> bound = std::nullopt);
    bool pending() const { return pending_.has_value(); }
    // CHECKPOINT=1 from a process of the worker.
    void on_checkpoint_message();

    // criu mode: restores dirs.criu_restore into the worker's fresh cgroup
    // (`cgroup_dir`, `cgroup_in_proc` as /proc/PID/cgroup shows it) with
    // `output` as its stdout and stderr; journals checkpoint-restoring and,
    // on failure, checkpoint-failed. `done` gets the restored main process.
    void restore_by_criu(const RunDirs& dirs, std::shared_ptr<UniqueFd> cgroup_dir,
                         std::string cgroup_in_proc, std::shared_ptr<UniqueFd> output,
                         Restored done);

    // A published checkpoint as `infervisorctl checkpoints` lists it.
    struct Listed {
        StoredCheckpoint stored;
        std::optional<int64_t> written_at;  // Unix seconds
        std::optional<uint64_t> bytes;      // from its info
        bool criu = false;                  // a criu image infervisord made
        bool llama_server = false;          // llama-server's slots, with the daemon's record
        bool next_restore = false;          // what the next start is offered
    };
    // The published checkpoints, oldest first: from the store of this
    // daemon's runs, else read from the disk (nothing is created). O(1)
    // system calls each, on the loop; nothing in them is read.
    Result<std::vector<Listed>> list() const;
    // Deletes the published checkpoints whose ids (directory names) are
    // `ids`, or every one with `all`; all or nothing: an id that is not one
    // of them fails and deletes nothing (ids are looked up, never made
    // paths). Refused while a checkpoint is requested, being written or
    // being recorded, and for the checkpoint a starting run restores from
    // (until it is ready). They go to the trash (a rename) and are removed
    // off the loop; checkpoint-deleted names `caller_uid`. Returns them,
    // oldest first.
    Result<std::vector<StoredCheckpoint>> remove(const std::vector<std::string>& ids, bool all,
                                                 uid_t caller_uid);

    // The newest complete checkpoint, as a path for messages ("none").
    std::string last_good() const;
    // How long the last requested checkpoint took from the request to its
    // publishing, in this daemon's life (whatever run); empty until one has:
    // proof that the method works (policy/preempt_ladder.h).
    std::optional<Duration> last_answer_took() const { return last_answer_took_; }

  private:
    struct Pending {
        std::string trigger;
        std::string if_late;
        TimePoint requested_at;
        Finished finished;
        bool answered = false;  // its checkpoint is being judged
        bool criu = false;      // a criu dump, not a signal
        bool then_stop = false;
        bool llama = false;                            // llama-server saves, not a signal
        std::optional<Duration> bound = std::nullopt;  // see request()
    };
    // How long the pending request (else any) may take.
    Duration limit() const;
    // A request is waiting for CHECKPOINT=1.
    bool awaiting_answer() const { return pending_ && !pending_->answered; }
    void finish(Outcome outcome);
    void report_unusable(const std::string& trigger, const Error& error, bool answer);
    void on_timeout();
    Result<void> request_criu(Pending pending, bool thaw);
    void on_criu_dumped(uint64_t generation, WorkerCriu::DumpOutcome outcome);
    void publish_answer(std::optional<double> seconds, const std::string& trigger, bool answer);
    WorkerCriu& criu();
    // llama-server: the saves of a request, their end, and the restore of
    // the offered checkpoint once the run is ready.
    Result<void> request_llama(Pending pending, bool thaw);
    void on_llama_saved(Result<LlamaRecord> saved);
    void restore_llama(TimePoint started_at);
    void on_llama_restored(const StoredCheckpoint& from, TimePoint started_at,
                           TimePoint requests_began, WorkerLlamaSlots::Restored restored);
    Result<WorkerLlamaSlots::Server> llama_server() const;
    WorkerLlamaSlots& llama();
    void arm_periodic();
    BackgroundWork& background();
    void empty_trash_in_background();
    // Seals and measures the taken checkpoint off the loop, then judges it.
    void judge_in_background(std::optional<double> seconds, std::string trigger, bool answer);
    // On the loop, once the taken checkpoint is measured: the retention plan
    // (checkpoint_retention.h's rule); refused (and checkpoint-failed,
    // REASON=quota) when it is not to be published.
    RetentionPlan plan_for_new(const Result<uint64_t>& bytes,
                               const std::vector<MeasuredCheckpoint>& older,
                               const Result<uint64_t>& fs_bytes, const std::string& trigger);
    // Publishes the judged checkpoint and retires what the plan says.
    Result<StoredCheckpoint> publish_judged(const RetentionPlan& plan, uint64_t bytes,
                                            std::optional<double> seconds);
    // llama-server: the record, into the published checkpoint (root's).
    Result<void> write_record_into(const StoredCheckpoint& checkpoint, const LlamaRecord& record);
    // The taken checkpoint is not published: to the trash, and
    // checkpoint-failed (REASON=unusable) saying why.
    void drop_taken(const std::string& trigger, const std::string& why);
    // Empties the trash, answers the request (when `answer`) with `outcome`,
    // and handles a deferred CHECKPOINT=1.
    void after_judging(bool answer, Outcome outcome);
    // Every kSweepInterval: re-measures the complete checkpoints off the loop
    // and retires those plan_sweep says (checkpoint-retired).
    void arm_sweep();
    void sweep();
    // Who owns each new staging dir: the worker, or root for criu (which
    // writes it as root). The one place that decides, for new and adopted runs.
    void set_staging_owner(uid_t uid, gid_t gid);

    boost::asio::io_context& io_;
    const Clock& clock_;
    Paths paths_;
    std::string worker_;
    Emit emit_;
    CheckpointSpec spec_;
    std::optional<CheckpointStore> store_;
    uid_t uid_ = 0;
    gid_t gid_ = 0;
    Signaller signaller_;                      // set while a run is up
    std::optional<StoredCheckpoint> offered_;  // what this run was given
    bool restoring_ = false;                   // offered_, and the run is not ready yet
    std::optional<Pending> pending_;
    std::optional<TimePoint> last_published_;
    std::optional<Duration> last_answer_took_;
    size_t unusable_unrequested_ = 0;  // CHECKPOINT=1 with nothing to publish
    int recording_ = 0;                // taken checkpoints being judged (at most one)
    bool sweeping_ = false;            // a sweep is measuring
    bool deferred_ = false;            // a CHECKPOINT=1 came meanwhile
    std::string refused_why_;          // why the last checkpoint was deleted (quota)
    // On clock_: when a request's answer is due; checkpoint.interval.
    std::unique_ptr<Timer> timeout_timer_;
    std::unique_ptr<Timer> periodic_timer_;
    std::unique_ptr<Timer> sweep_timer_;          // kSweepInterval
    std::unique_ptr<BackgroundWork> background_;  // created at the first checkpoint
    ProcessLookup lookup_;
    std::unique_ptr<WorkerCriu> criu_;  // created at the first criu dump or restore
    std::optional<EngineSpec> engine_;
    std::optional<std::filesystem::path> api_key_file_;
    std::unique_ptr<WorkerLlamaSlots> llama_;     // created at the first save or restore
    std::optional<LlamaRecord> taken_record_;     // of the checkpoint being judged
    std::unique_ptr<Timer> restore_timer_;        // llama-server: checkpoint.timeout
    bool ready_ = false;                          // the run is running (run_ready)
    uint64_t criu_generation_ = 0;                // tells a dump's answer from an older one's
    std::optional<double> criu_restore_seconds_;  // this run was restored by criu
};

}  // namespace infervisor
