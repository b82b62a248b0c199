// SupervisorService: the Supervisor as the control socket sees it
// (control/supervisor_api.h): the workers' views (view_of, supervise/
// worker_view_of.h), acting calls that complete when the workers have
// settled, reload, config validation, and the event stream (journal events
// converted; the recent ones from an EventRecorder).
#pragma once

#include <functional>

#include "control/event_ring.h"
#include "control/supervisor_api.h"
#include "services/config_check_helper.h"
#include "services/config_load_runner.h"
#include "services/start_watch.h"
#include "supervise/supervisor.h"

namespace infervisor {

class SupervisorService final : public SupervisorApi {
  public:
    // Rereads and applies (or previews) the configuration, then calls its
    // second argument (later: the files are read and checked off the loop).
    using ReloadFunction = std::function<void(ChangeMode, ReloadDone)>;
    // Validate: at most this many checks at once, each answered within
    // this deadline (config_load_runner.h).
    static constexpr std::size_t kMaxChecks = 2;
    static constexpr Duration kCheckDeadline = std::chrono::seconds(10);
    // Their threads' nice value: the loop (nice 0) gets ~90% of a contended
    // CPU against a check, workers their usual share.
    static constexpr int kCheckNice = 10;

    // `recent`: the events RecentEvents and Subscribe's history come from.
    SupervisorService(WorkerContext& ctx, Supervisor& supervisor, const EventRing& recent,
                      ReloadFunction reload);
    ~SupervisorService() override;

    std::vector<WorkerView> list_workers() const override;
    std::vector<GpuCardView> list_gpus() const override;
    std::optional<WorkerDetail> get_worker(const std::string& name) const override;
    std::vector<ControlEvent> recent_events(const EventQuery& query) const override;
    std::optional<TraceRecorder::Chunk> trace(uint64_t from) const override;
    // Where trace() comes from (the daemon's PolicyRunner).
    using TraceSource = std::function<TraceRecorder::Chunk(uint64_t from)>;
    void set_trace_source(TraceSource source) { trace_ = std::move(source); }
    // Each check runs in a helper process as the caller (config_check_helper.h).
    void validate_config(ConfigTexts texts, const PeerCredentials& caller,
                         ValidateDone done) override;
    // Which binary and limits the checks' helpers use (tests: the built
    // infervisord instead of /proc/self/exe).
    void set_check_helper(ConfigCheckHelper helper) { check_helper_ = std::move(helper); }
    void start(const std::vector<std::string>& names, ActionDone done) override;
    void stop(const std::vector<std::string>& names, ActionDone done) override;
    void restart(const std::vector<std::string>& names, ActionDone done) override;
    void kill(const std::string& name, int signal, ActionDone done) override;
    void checkpoint(const std::vector<std::string>& names, ActionDone done) override;
    void suspend(const std::vector<std::string>& names, ActionDone done) override;
    void resume(const std::vector<std::string>& names, ActionDone done) override;
    void reload(ChangeMode mode, ReloadDone done) override;
    void remove_workdir(const std::string& name, ChangeMode mode, RemoveWorkDirDone done) override;
    CheckpointListing list_checkpoints(const std::string& name) const override;
    void delete_checkpoints(const std::string& name, const CheckpointSelection& selection,
                            const PeerCredentials& caller, CheckpointsDeleted done) override;
    Subscription subscribe(EventSink sink) override;
    void drain(DrainDone done) override;
    std::vector<std::string> undrain() override;
    bool drained() const override;

  private:
    // Null (and `done` called with worker_not_found) when a name is unknown.
    std::optional<std::vector<Worker*>> resolve(const std::vector<std::string>& names,
                                                ActionDone& done);
    // Starts (or restarts) `workers` and calls `done` once each start has an
    // outcome (start_watch.h): success when all are running, else the first
    // that did not start, with why.
    void start_and_watch(const std::vector<Worker*>& workers, StartWatch::Kind kind,
                         ActionDone done);

    WorkerContext& ctx_;
    Supervisor& supervisor_;
    const EventRing& recent_;
    ReloadFunction reload_;
    TraceSource trace_;
    ConfigLoadRunner checks_;
    ConfigCheckHelper check_helper_ = default_check_helper();
    static ConfigCheckHelper default_check_helper();
};

// The spec as `infervisorctl show` prints it (keys as in the YAML config).
nlohmann::json spec_to_json(const WorkerSpec& spec);

}  // namespace infervisor
