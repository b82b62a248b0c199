#include "control/varlink_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <exception>
#include <limits>
#include <map>

#include "base/base64.h"
#include "control/call_parameters.h"
#include "control/status_json.h"
#include "control/varlink_errors.h"
#include "control/varlink_interfaces.h"

namespace infervisor {

namespace {

using nlohmann::json;
namespace err = varlink_error;

constexpr int64_t kMaxEventsPerCall = 10000;
// As many as a configuration may have (config/config_limits.h, kMaxWorkers):
// every event of a subscription is held against the list.
constexpr std::size_t kMaxWorkersPerQuery = 1024;
// As many checkpoints as a worker's store may hold (checkpoint_store.h).
constexpr std::size_t kMaxCheckpointsPerCall = 1024;

// Replies to a call whose parameters were wrong; true when it did.
bool rejected(CallParameters& params, const std::shared_ptr<ReplySink>& sink) {
    if (params.finish()) return false;
    sink->fail(err::kInvalidParameter, {{"parameter", params.bad()}});
    return true;
}

json names_json(const std::vector<std::string>& names) { return json(names); }

// RecentEvents and Subscribe: the events asked for ("limit" or "history":
// the newest of them), or none (and the call failed) when the parameters
// are invalid.
std::optional<EventQuery> event_query(CallParameters& params, const char* count,
                                      int64_t default_count,
                                      const std::shared_ptr<ReplySink>& sink) {
    std::optional<int64_t> limit, since;
    EventQuery query;
    params.optional_integer(count, limit, 0, kMaxEventsPerCall);
    params.optional_string_list("workers", query.workers);
    params.optional_integer("since_usec", since, 0, std::numeric_limits<int64_t>::max());
    if (rejected(params, sink)) return std::nullopt;
    if (query.workers.size() > kMaxWorkersPerQuery) {
        sink->fail(err::kInvalidParameter, {{"parameter", "workers"}});
        return std::nullopt;
    }
    query.limit = static_cast<std::size_t>(limit.value_or(default_count));
    query.since_usec = static_cast<uint64_t>(since.value_or(0));
    return query;
}

// Turns an ActionOutcome into the call's final reply, if the caller is still there.
SupervisorApi::ActionDone complete_action(const std::shared_ptr<ReplySink>& sink) {
    return [weak = std::weak_ptr<ReplySink>(sink)](ActionOutcome outcome) {
        auto target = weak.lock();
        if (!target) return;
        switch (outcome.kind) {
            case ActionOutcome::Kind::ok:
                target->reply(json::object(), false);
                break;
            case ActionOutcome::Kind::worker_not_found:
                target->fail(err::kWorkerNotFound, {{"name", outcome.worker}});
                break;
            case ActionOutcome::Kind::failed:
                target->fail(err::kActionFailed,
                             {{"name", outcome.worker}, {"reason", outcome.reason}});
                break;
        }
    };
}

// Replaces each environment value of a spec with null, keeping the names:
// values are where API keys live (HF_TOKEN, ...), and the config file that
// holds them is readable by root only.
void hide_environment(json& spec) {
    auto it = spec.find("environment");
    if (it == spec.end() || !it->is_object()) return;
    for (auto& value : *it) value = nullptr;
}

// A checkpoint id as ListCheckpoints gives it: ten ASCII digits. Checked
// here so that nothing else (a path, a 5000-byte string) reaches the
// supervisor, which then looks the id up among the worker's checkpoints.
bool is_checkpoint_id(const std::string& id) {
    return id.size() == 10 &&
           std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; });
}

json checkpoint_to_json(const CheckpointEntry& c) {
    json written = nullptr, bytes = nullptr;
    if (c.written_at) written = *c.written_at * int64_t{1000000};
    if (c.bytes) bytes = *c.bytes;
    return {{"id", c.id},
            {"sequence", c.sequence},
            {"written_usec", written},
            {"bytes", bytes},
            {"method", c.criu           ? "criu"
                       : c.llama_server ? "llama_server"
                                        : "cooperative"},
            {"next_restore", c.next_restore}};
}

std::string describe(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : " ") + n;
    return out;
}

}  // namespace

VarlinkService::VarlinkService(SupervisorApi& supervisor, AccessPolicy policy, ServiceInfo info)
    : supervisor_(supervisor), policy_(policy), info_(std::move(info)) {
    if (info_.version.empty()) info_.version = INFERVISOR_VERSION;
}

const VarlinkService::Method* VarlinkService::find_method(std::string_view name) {
    static const std::map<std::string_view, Method> methods = {
        {"org.varlink.service.GetInfo", {false, &VarlinkService::get_info}},
        {"org.varlink.service.GetInterfaceDescription",
         {false, &VarlinkService::get_interface_description}},
        {"io.infervisor.supervisor.List", {false, &VarlinkService::list}},
        {"io.infervisor.supervisor.ListGpus", {false, &VarlinkService::list_gpus}},
        {"io.infervisor.supervisor.Get", {false, &VarlinkService::get}},
        {"io.infervisor.supervisor.Start", {true, &VarlinkService::start}},
        {"io.infervisor.supervisor.Stop", {true, &VarlinkService::stop}},
        {"io.infervisor.supervisor.Restart", {true, &VarlinkService::restart}},
        {"io.infervisor.supervisor.Kill", {true, &VarlinkService::kill}},
        {"io.infervisor.supervisor.Checkpoint", {true, &VarlinkService::checkpoint}},
        {"io.infervisor.supervisor.Suspend", {true, &VarlinkService::suspend}},
        {"io.infervisor.supervisor.Resume", {true, &VarlinkService::resume}},
        {"io.infervisor.supervisor.Reload", {true, &VarlinkService::reload}},
        {"io.infervisor.supervisor.RemoveWorkDir", {true, &VarlinkService::remove_workdir}},
        {"io.infervisor.supervisor.ListCheckpoints", {false, &VarlinkService::list_checkpoints}},
        {"io.infervisor.supervisor.DeleteCheckpoints", {true, &VarlinkService::delete_checkpoints}},
        {"io.infervisor.supervisor.Validate", {false, &VarlinkService::validate}},
        {"io.infervisor.supervisor.RecentEvents", {false, &VarlinkService::recent_events}},
        {"io.infervisor.supervisor.Subscribe", {false, &VarlinkService::subscribe}},
        {"io.infervisor.supervisor.Trace", {false, &VarlinkService::trace}},
        {"io.infervisor.supervisor.Drain", {true, &VarlinkService::drain}},
        {"io.infervisor.supervisor.HostState", {false, &VarlinkService::host_state}},
        {"io.infervisor.supervisor.Undrain", {true, &VarlinkService::undrain}},
    };
    auto it = methods.find(name);
    return it == methods.end() ? nullptr : &it->second;
}

bool VarlinkService::changes_state(std::string_view method) {
    auto m = find_method(method);
    return m && m->changes_state;
}

void VarlinkService::handle(const VarlinkCall& call, const PeerCredentials& peer,
                            const Sink& sink) {
    try {
        dispatch(call, peer, sink);
    } catch (const std::exception& e) {
        // The daemon outlives any one call; a throwing supervisor is a bug to log.
        spdlog::error("control: {} failed: {}", call.method, e.what());
        sink->fail(err::kActionFailed, {{"name", ""}, {"reason", e.what()}});
    }
}

void VarlinkService::dispatch(const VarlinkCall& call, const PeerCredentials& peer,
                              const Sink& sink) {
    const Method* method = find_method(call.method);
    if (!method) {
        auto iface = call.interface_name();
        if (iface != kSupervisorInterface && iface != kServiceInterface)
            return sink->fail(err::kInterfaceNotFound, {{"interface", iface}});
        return sink->fail(err::kMethodNotFound, {{"method", call.method}});
    }
    caller_privileged_ = policy_.may_change(peer);
    caller_ = peer;
    if (method->changes_state) {
        if (!caller_privileged_) {
            log_denied(call, peer);
            return sink->fail(err::kPermissionDenied, json::object());
        }
        spdlog::info("control: {} {} from uid {} pid {}", call.member_name(),
                     dump_json(call.parameters), peer.uid, peer.pid);
    }
    (this->*method->handler)(call, sink);
}

// At most kDeniedLogBurst lines per uid per kDeniedLogWindow; the next line
// logged for that uid says how many were left out.
void VarlinkService::log_denied(const VarlinkCall& call, const PeerCredentials& peer) {
    auto admitted = denied_log_.admit(std::to_string(peer.uid), std::chrono::steady_clock::now());
    if (!admitted.log) return;
    std::string earlier = admitted.suppressed_before
                              ? fmt::format(" ({} earlier denied calls of this uid not logged)",
                                            admitted.suppressed_before)
                              : "";
    spdlog::warn("control: denied {} to uid {} pid {}{}", call.method, peer.uid, peer.pid, earlier);
}

void VarlinkService::get_info(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    if (rejected(params, sink)) return;
    sink->reply({{"vendor", info_.vendor},
                 {"product", info_.product},
                 {"version", info_.version},
                 {"url", info_.url},
                 {"interfaces", json::array({kServiceInterface, kSupervisorInterface})}},
                false);
}

void VarlinkService::get_interface_description(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    std::string iface;
    params.string("interface", iface, true);
    if (rejected(params, sink)) return;
    if (iface == kSupervisorInterface)
        return sink->reply({{"description", supervisor_interface_description()}}, false);
    if (iface == kServiceInterface)
        return sink->reply({{"description", service_interface_description()}}, false);
    sink->fail(err::kInterfaceNotFound, {{"interface", iface}});
}

void VarlinkService::list(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    if (rejected(params, sink)) return;
    json workers = json::array();
    for (const auto& status : supervisor_.list_workers()) workers.push_back(to_json(status));
    sink->reply({{"workers", std::move(workers)}}, false);
}

void VarlinkService::list_gpus(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    if (rejected(params, sink)) return;
    json gpus = json::array();
    for (const auto& card : supervisor_.list_gpus()) gpus.push_back(to_json(card));
    sink->reply({{"gpus", std::move(gpus)}}, false);
}

void VarlinkService::get(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    std::string name;
    params.string("name", name, true);
    if (rejected(params, sink)) return;
    auto detail = supervisor_.get_worker(name);
    if (!detail) return sink->fail(err::kWorkerNotFound, {{"name", name}});
    json spec = detail->spec.is_object() ? detail->spec : json::object();
    if (!caller_privileged_) hide_environment(spec);
    sink->reply({{"worker", to_json(detail->view)}, {"spec", std::move(spec)}}, false);
}

void VarlinkService::start(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    std::vector<std::string> names;
    params.string_list("names", names);
    if (rejected(params, sink)) return;
    supervisor_.start(names, complete_action(sink));
}

void VarlinkService::stop(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    std::vector<std::string> names;
    params.string_list("names", names);
    if (rejected(params, sink)) return;
    supervisor_.stop(names, complete_action(sink));
}

void VarlinkService::restart(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    std::vector<std::string> names;
    params.string_list("names", names);
    if (rejected(params, sink)) return;
    supervisor_.restart(names, complete_action(sink));
}

void VarlinkService::kill(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    std::string name;
    std::optional<int64_t> signal;
    params.string("name", name, true);
    params.optional_integer("signal", signal, 1, SIGRTMAX);
    if (rejected(params, sink)) return;
    supervisor_.kill(name, static_cast<int>(signal.value_or(SIGTERM)), complete_action(sink));
}

void VarlinkService::checkpoint(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    std::vector<std::string> names;
    params.string_list("names", names);
    if (rejected(params, sink)) return;
    supervisor_.checkpoint(names, complete_action(sink));
}

void VarlinkService::suspend(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    std::vector<std::string> names;
    params.string_list("names", names);
    if (rejected(params, sink)) return;
    supervisor_.suspend(names, complete_action(sink));
}

void VarlinkService::resume(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    std::vector<std::string> names;
    params.string_list("names", names);
    if (rejected(params, sink)) return;
    supervisor_.resume(names, complete_action(sink));
}

void VarlinkService::drain(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    if (rejected(params, sink)) return;
    spdlog::info("control: drain asked for: no worker starts until undrain");
    supervisor_.drain([weak = std::weak_ptr<ReplySink>(sink)](DrainOutcome outcome) {
        auto target = weak.lock();
        if (!target) return;
        auto steps = nlohmann::json::array();
        for (const auto& s : outcome.steps) steps.push_back({{"worker", s.worker}, {"how", s.how}});
        target->reply({{"steps", std::move(steps)}}, false);
    });
}

void VarlinkService::host_state(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    if (rejected(params, sink)) return;
    sink->reply({{"drained", supervisor_.drained()}}, false);
}

void VarlinkService::undrain(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    if (rejected(params, sink)) return;
    auto started = supervisor_.undrain();
    spdlog::info("control: undrain: starting {}", describe(started));
    sink->reply({{"started", names_json(started)}}, false);
}

void VarlinkService::reload(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    bool dry_run = false;
    params.optional_bool("dry_run", dry_run);
    if (rejected(params, sink)) return;
    auto mode = dry_run ? ChangeMode::preview : ChangeMode::apply;
    supervisor_.reload(mode, [weak = std::weak_ptr<ReplySink>(sink)](ReloadOutcome outcome) {
        auto target = weak.lock();
        if (!target) return;
        if (!outcome.valid) return target->fail(err::kConfigInvalid, {{"errors", outcome.errors}});
        if (outcome.applied)
            spdlog::info("control: reload applied (added: {}; removed: {}; changed: {})",
                         describe(outcome.added), describe(outcome.removed),
                         describe(outcome.changed));
        target->reply({{"added", names_json(outcome.added)},
                       {"removed", names_json(outcome.removed)},
                       {"changed", names_json(outcome.changed)},
                       {"warnings", names_json(outcome.warnings)}},
                      false);
    });
}

void VarlinkService::remove_workdir(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    std::string name;
    bool dry_run = false;
    params.string("name", name, true);
    params.optional_bool("dry_run", dry_run);
    if (rejected(params, sink)) return;
    auto mode = dry_run ? ChangeMode::preview : ChangeMode::apply;
    supervisor_.remove_workdir(
        name, mode, [weak = std::weak_ptr<ReplySink>(sink), dry_run](WorkDirRemovalOutcome r) {
            auto target = weak.lock();
            if (!target) return;
            if (!r.outcome.ok()) return complete_action(target)(r.outcome);
            if (!dry_run)
                spdlog::info("control: work dir {} of {} {}", r.path, r.outcome.worker,
                             r.existed ? "removed" : "did not exist");
            target->reply({{"path", r.path}, {"existed", r.existed}}, false);
        });
}

void VarlinkService::list_checkpoints(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    std::string name;
    params.string("name", name, true);
    if (rejected(params, sink)) return;
    CheckpointListing listing = supervisor_.list_checkpoints(name);
    if (!listing.outcome.ok()) return complete_action(sink)(listing.outcome);
    json checkpoints = json::array();
    for (const auto& c : listing.checkpoints) checkpoints.push_back(checkpoint_to_json(c));
    sink->reply({{"directory", listing.directory}, {"checkpoints", std::move(checkpoints)}}, false);
}

void VarlinkService::delete_checkpoints(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    std::string name;
    CheckpointSelection selection;
    params.string("name", name, true);
    params.optional_string_list("ids", selection.ids);
    params.optional_bool("all", selection.all);
    if (rejected(params, sink)) return;
    // Exactly one of the two; every id well-formed, and at most as many as
    // a store can hold.
    if (selection.all == !selection.ids.empty())
        return sink->fail(err::kInvalidParameter, {{"parameter", selection.all ? "all" : "ids"}});
    if (selection.ids.size() > kMaxCheckpointsPerCall ||
        !std::all_of(selection.ids.begin(), selection.ids.end(), is_checkpoint_id))
        return sink->fail(err::kInvalidParameter, {{"parameter", "ids"}});
    supervisor_.delete_checkpoints(
        name, selection, caller_,
        [weak = std::weak_ptr<ReplySink>(sink)](CheckpointDeletion deletion) {
            auto target = weak.lock();
            if (!target) return;
            if (!deletion.outcome.ok()) return complete_action(target)(deletion.outcome);
            target->reply({{"deleted", names_json(deletion.deleted)}}, false);
        });
}

void VarlinkService::validate(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    ConfigTexts texts;
    std::optional<std::string> file;
    std::vector<CallParameters::StringRecord> dropins;
    params.string("config", texts.main.text, true);
    params.optional_string("file", file);
    params.optional_string_records("dropins", {"file", "config"}, dropins);
    if (rejected(params, sink)) return;
    texts.main.file = file.value_or("<stdin>");
    for (auto& d : dropins) texts.dropins.push_back({std::move(d["file"]), std::move(d["config"])});
    supervisor_.validate_config(
        std::move(texts), caller_,
        [weak = std::weak_ptr<ReplySink>(sink)](ValidationOutcome outcome) {
            auto target = weak.lock();
            if (!target) return;
            if (!outcome.checked)
                return target->fail(err::kValidationFailed, {{"reason", outcome.reason}});
            bool valid = outcome.errors.empty();
            target->reply({{"valid", valid},
                           {"errors", std::move(outcome.errors)},
                           {"warnings", std::move(outcome.warnings)}},
                          false);
        });
}

void VarlinkService::recent_events(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    auto query = event_query(params, "limit", 100, sink);
    if (!query) return;
    json events = json::array();
    for (const auto& e : supervisor_.recent_events(*query)) events.push_back(to_json(e));
    sink->reply({{"events", std::move(events)}}, false);
}

void VarlinkService::trace(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    std::optional<int64_t> from;
    params.optional_integer("from", from, 0, INT64_MAX);
    if (rejected(params, sink)) return;
    auto chunk = supervisor_.trace(static_cast<uint64_t>(from.value_or(0)));
    json blocks = json::array();
    if (chunk)
        for (const auto& b : chunk->blocks)
            blocks.push_back({{"sequence", b.sequence}, {"data", base64_encode(b.bytes)}});
    sink->reply({{"recording", chunk.has_value()},
                 {"blocks", std::move(blocks)},
                 {"more", chunk && chunk->more}},
                false);
}

void VarlinkService::subscribe(const VarlinkCall& call, const Sink& sink) {
    CallParameters params(call.parameters);
    auto query = event_query(params, "history", 0, sink);
    if (!query) return;
    if (!call.more) return sink->fail(err::kExpectedMore, json::object());
    for (const auto& e : supervisor_.recent_events(*query))
        sink->reply({{"event", to_json(e)}}, true);
    sink->hold(supervisor_.subscribe(
        [weak = std::weak_ptr<ReplySink>(sink), query = *query](const ControlEvent& e) {
            if (!query.matches(e)) return;
            if (auto target = weak.lock()) target->reply({{"event", to_json(e)}}, true);
        }));
}

}  // namespace infervisor
