// SupervisorApi: what the control socket may ask of the supervisor, and the
// plain data it gets back (a worker: its WorkerView, view/worker_view.h).
// The control server depends on this interface only; the daemon's
// supervisor implements it, tests use a FakeSupervisor.
//
// Threading: every member is called on the event-loop thread and every
// callback is invoked on that thread. Nothing here may block.
//
// Acting calls are asynchronous: they take a completion callback that is
// invoked exactly once when the action has settled (start: the worker is
// running/ready or has failed; stop: it is stopped; restart: both; kill: the
// signal was sent). It may be invoked synchronously, from inside the call —
// e.g. for an unknown name — or later from the loop. Name lists are all or
// nothing: when any name is unknown the callback gets worker_not_found for
// the first unknown name and nothing is done. The control server keeps a
// connection busy (without blocking the loop) until the callback runs, and
// drops the reply when the client has gone by then; the supervisor must not
// rely on the client still being there.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/config_texts.h"
#include "control/peer_credentials.h"
#include "metrics/trace_recorder.h"
#include "view/worker_view.h"

namespace infervisor {

// `infervisorctl show`: the view plus the worker's spec, rendered by the
// supervisor as a JSON object (keys as in the YAML configuration).
struct WorkerDetail {
    WorkerView view;
    nlohmann::json spec = nlohmann::json::object();
};

// A lifecycle or policy event, as the journal records it.
struct ControlEvent {
    uint64_t time_usec = 0;  // CLOCK_REALTIME, microseconds since the epoch
    std::string worker;      // "" for host-wide events
    std::string kind;        // e.g. "started", "exited", "killed", "throttled"
    std::string message;
    std::map<std::string, std::string> fields;  // the measurements behind it

    bool operator==(const ControlEvent&) const = default;
};

// Which events a caller asks for: of these workers (none: all, host-wide
// ones included), at or after since_usec (CLOCK_REALTIME), the newest
// `limit` of them.
struct EventQuery {
    std::size_t limit = 100;
    std::vector<std::string> workers;
    uint64_t since_usec = 0;

    // Whether `event` is one asked for (the limit aside).
    bool matches(const ControlEvent& event) const;
};

// The outcome of an acting call.
struct ActionOutcome {
    enum class Kind { ok, worker_not_found, failed };
    Kind kind = Kind::ok;
    std::string worker;  // the worker concerned, when one is
    std::string reason;  // human-readable, for failed

    static ActionOutcome success() { return {}; }
    static ActionOutcome not_found(std::string name) {
        return {Kind::worker_not_found, std::move(name), {}};
    }
    static ActionOutcome failure(std::string name, std::string why) {
        return {Kind::failed, std::move(name), std::move(why)};
    }
    bool ok() const { return kind == Kind::ok; }
};

// The outcome of remove_workdir(): on success, the directory meant and
// whether there was one to delete.
struct WorkDirRemovalOutcome {
    ActionOutcome outcome;
    std::string path;
    bool existed = false;
};

// Whether a change is made, or only said: reload --dry-run, and the
// preview that remove-workdir's prompt shows.
enum class ChangeMode { apply, preview };

struct ReloadOutcome {
    bool valid = false;                                // false: config invalid, nothing changed
    bool applied = false;                              // valid and applied; false for a preview
    std::vector<std::string> errors;                   // "file:line:col: message", when not valid
    std::vector<std::string> added, removed, changed;  // worker names, when valid
    std::vector<std::string> warnings;  // applied, but it does not fit the host (caps_fit.h)
};

// `infervisorctl drain`: what happened to each worker that was up.
struct DrainOutcome {
    struct Step {
        std::string worker;
        std::string how;  // "checkpointed, then stopped", "stopped", ...
    };
    std::vector<Step> steps;
};

// One published checkpoint of a worker, as `infervisorctl checkpoints`
// lists it: what it is, never what is in it (prompts, KV caches).
struct CheckpointEntry {
    std::string id;  // its directory's name, "0000000007": what deletion takes
    uint64_t sequence = 0;
    std::optional<int64_t> written_at;  // Unix seconds, when the daemon published it
    std::optional<uint64_t> bytes;      // as measured when published
    bool criu = false;                  // a criu image, else the worker's own files
    bool next_restore = false;          // what the worker's next start is offered
    bool llama_server = false;          // llama-server's slots, with the daemon's record

    bool operator==(const CheckpointEntry&) const = default;
};

struct CheckpointListing {
    ActionOutcome outcome;  // worker_not_found, or failed (the store is unreadable)
    std::string directory;  // <state_dir>/checkpoints/NAME
    std::vector<CheckpointEntry> checkpoints;  // oldest first
};

// Which checkpoints delete_checkpoints() deletes: `ids`, or every one.
struct CheckpointSelection {
    std::vector<std::string> ids;
    bool all = false;
};

struct CheckpointDeletion {
    ActionOutcome outcome;
    std::vector<std::string> deleted;  // the ids, oldest first
};

// The outcome of validate_config().
struct ValidationOutcome {
    // false: the text was not checked (too many checks at once, or the check
    // overran its deadline); `reason` says which. true: `errors` is the
    // verdict, empty when the text is valid.
    bool checked = true;
    std::vector<std::string> errors;    // "name:line:col: message"
    std::vector<std::string> warnings;  // the same; valid, but likely to fail
    std::string reason;

    static ValidationOutcome refused(std::string why) { return {false, {}, {}, std::move(why)}; }
};

// Ends an event subscription when destroyed. Move-only.
class Subscription {
  public:
    Subscription() = default;
    explicit Subscription(std::function<void()> cancel) : cancel_(std::move(cancel)) {}
    Subscription(Subscription&& other) noexcept : cancel_(std::exchange(other.cancel_, {})) {}
    Subscription& operator=(Subscription&& other) noexcept {
        if (this != &other) {
            reset();
            cancel_ = std::exchange(other.cancel_, {});
        }
        return *this;
    }
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;
    ~Subscription() { reset(); }

    void reset() {
        if (auto cancel = std::exchange(cancel_, {})) cancel();
    }
    bool active() const { return static_cast<bool>(cancel_); }

  private:
    std::function<void()> cancel_;
};

class SupervisorApi {
  public:
    using ActionDone = std::function<void(ActionOutcome)>;
    using ReloadDone = std::function<void(ReloadOutcome)>;
    using RemoveWorkDirDone = std::function<void(WorkDirRemovalOutcome)>;
    using ValidateDone = std::function<void(ValidationOutcome)>;
    using CheckpointsDeleted = std::function<void(CheckpointDeletion)>;
    using EventSink = std::function<void(const ControlEvent&)>;
    using DrainDone = std::function<void(DrainOutcome)>;

    virtual ~SupervisorApi() = default;

    // Reading: synchronous snapshots of current state.
    virtual std::vector<WorkerView> list_workers() const = 0;
    // The host's GPUs at the last reading; empty where none are read.
    virtual std::vector<GpuCardView> list_gpus() const { return {}; }
    virtual std::optional<WorkerDetail> get_worker(const std::string& name) const = 0;
    // The newest events that match `query`, oldest first (the daemon keeps
    // a ring of the last ones, control/event_ring.h).
    virtual std::vector<ControlEvent> recent_events(const EventQuery& query) const = 0;
    // The recording of the policy engine's input (metrics/trace_recorder.h)
    // from block `from` on, for `infervisorctl simulate` and `history`
    // (with --export too); empty when the daemon keeps none.
    virtual std::optional<TraceRecorder::Chunk> trace(uint64_t /*from*/) const {
        return std::nullopt;
    }
    // The worker's published checkpoints (ids, times, sizes; never their
    // contents). O(entries) system calls on the loop: a store holds at most
    // kMaxCheckpointDirEntries.
    virtual CheckpointListing list_checkpoints(const std::string& name) const = 0;
    // Validates a configuration given as its files' texts (a main file and
    // its drop-ins), off the event loop (any local user may ask, and the
    // work is heavy); `done` gets the verdict later, or a refusal at once
    // when too many checks run. The check runs with the rights of `caller`
    // (its uid, gid and groups): the paths named in the texts are looked at
    // as that user would see them.
    virtual void validate_config(ConfigTexts texts, const PeerCredentials& caller,
                                 ValidateDone done) = 0;

    // Acting: see the contract at the top of this file.
    virtual void start(const std::vector<std::string>& names, ActionDone done) = 0;
    virtual void stop(const std::vector<std::string>& names, ActionDone done) = 0;
    virtual void restart(const std::vector<std::string>& names, ActionDone done) = 0;
    virtual void kill(const std::string& name, int signal, ActionDone done) = 0;
    // A cooperative checkpoint of each worker (they keep running); settles
    // when every checkpoint is written or has failed.
    virtual void checkpoint(const std::vector<std::string>& names, ActionDone done) = 0;
    // Suspends running workers (freeze, memory pushed out to swap); settles
    // when each is suspended or has failed. resume() thaws suspended ones.
    virtual void suspend(const std::vector<std::string>& names, ActionDone done) = 0;
    virtual void resume(const std::vector<std::string>& names, ActionDone done) = 0;
    // Rereads the configuration files; a preview says what applying them
    // would change (or their errors) and changes nothing.
    virtual void reload(ChangeMode mode, ReloadDone done) = 0;
    // Deletes the work dir of a worker that is no longer configured (kept by
    // default when a worker is removed). Fails (ActionOutcome failed, naming
    // the reason) while a worker of that name is configured or running. A
    // preview makes the same checks and says which dir, deleting nothing.
    virtual void remove_workdir(const std::string& name, ChangeMode mode,
                                RemoveWorkDirDone done) = 0;

    // Deletes checkpoints of the worker: all or nothing (an id that is not
    // one of its published checkpoints fails the call and deletes nothing).
    // Refused while the worker is writing or recording a checkpoint, and for
    // the one a starting run is restoring from. Deleting the one the next
    // start would restore means it starts fresh. `caller` is journaled.
    virtual void delete_checkpoints(const std::string& name, const CheckpointSelection& selection,
                                    const PeerCredentials& caller, CheckpointsDeleted done) = 0;

    // Maintenance: no run is launched until undrain(), and every worker is
    // brought down by its own method (a checkpoint where it works, then a
    // stop); settles when all are down. undrain() starts the workers that
    // were up and settles at once with their names. drained(): whether the
    // host is drained now.
    virtual void drain(DrainDone done) = 0;
    virtual std::vector<std::string> undrain() = 0;
    virtual bool drained() const = 0;

    // Every later event goes to `sink` until the Subscription is destroyed.
    // The sink must not be called after that. A Subscription may be destroyed
    // from inside any sink (one client's overflow ends its own subscription
    // while events are being delivered), so deliver from a copy of the list.
    virtual Subscription subscribe(EventSink sink) = 0;
};

}  // namespace infervisor
