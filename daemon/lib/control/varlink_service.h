// VarlinkService: answers Varlink calls of io.infervisor.supervisor and
// org.varlink.service by asking a SupervisorApi. No sockets here: a session
// hands in parsed calls with the caller's credentials and a ReplySink, which
// keeps it testable and fuzzable without I/O.
//
// Contract of handle(): every call gets exactly one final reply (a reply
// with continues=false, or an error) through its sink, synchronously or
// later — except Subscribe with "more", which streams until the connection
// ends. Parameters are checked strictly (unknown, missing, mistyped →
// org.varlink.service.InvalidParameter naming it). Calls that change state
// are authorized by AccessPolicy first; a refusal is answered with
// org.varlink.service.PermissionDenied and logged with uid and pid
// (rate-limited). Reading calls never return secrets to a caller without the
// control privilege: Get replaces the worker's environment values with null.
// A sink that has expired by the time an action completes is skipped.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/log_limit.h"
#include "control/access_policy.h"
#include "control/peer_credentials.h"
#include "control/supervisor_api.h"
#include "control/varlink_message.h"

namespace infervisor {

class ReplySink {
  public:
    virtual ~ReplySink() = default;
    // continues=true only in answer to a call with "more".
    virtual void reply(const nlohmann::json& parameters, bool continues) = 0;
    virtual void fail(std::string_view error, const nlohmann::json& parameters) = 0;
    // Keeps an event subscription for as long as the connection lasts.
    virtual void hold(Subscription subscription) = 0;
};

// What org.varlink.service.GetInfo reports.
struct ServiceInfo {
    std::string vendor = "infervisor";
    std::string product = "infervisord";
    std::string version;  // empty: this build's version
    std::string url;
};

class VarlinkService {
  public:
    VarlinkService(SupervisorApi& supervisor, AccessPolicy policy, ServiceInfo info = {});

    void handle(const VarlinkCall& call, const PeerCredentials& peer,
                const std::shared_ptr<ReplySink>& sink);

    // True for methods that change state (and so need authorization).
    static bool changes_state(std::string_view method);

  private:
    using Sink = std::shared_ptr<ReplySink>;
    using Handler = void (VarlinkService::*)(const VarlinkCall&, const Sink&);
    struct Method {
        bool changes_state;
        Handler handler;
    };
    static const Method* find_method(std::string_view name);

    void dispatch(const VarlinkCall& call, const PeerCredentials& peer, const Sink& sink);
    void log_denied(const VarlinkCall& call, const PeerCredentials& peer);
    void get_info(const VarlinkCall& call, const Sink& sink);
    void get_interface_description(const VarlinkCall& call, const Sink& sink);
    void list(const VarlinkCall& call, const Sink& sink);
    void list_gpus(const VarlinkCall& call, const Sink& sink);
    void get(const VarlinkCall& call, const Sink& sink);
    void start(const VarlinkCall& call, const Sink& sink);
    void stop(const VarlinkCall& call, const Sink& sink);
    void restart(const VarlinkCall& call, const Sink& sink);
    void kill(const VarlinkCall& call, const Sink& sink);
    void checkpoint(const VarlinkCall& call, const Sink& sink);
    void suspend(const VarlinkCall& call, const Sink& sink);
    void resume(const VarlinkCall& call, const Sink& sink);
    void reload(const VarlinkCall& call, const Sink& sink);
    void drain(const VarlinkCall& call, const Sink& sink);
    void undrain(const VarlinkCall& call, const Sink& sink);
    void host_state(const VarlinkCall& call, const Sink& sink);
    void remove_workdir(const VarlinkCall& call, const Sink& sink);
    void list_checkpoints(const VarlinkCall& call, const Sink& sink);
    void delete_checkpoints(const VarlinkCall& call, const Sink& sink);
    void validate(const VarlinkCall& call, const Sink& sink);
    void recent_events(const VarlinkCall& call, const Sink& sink);
    void subscribe(const VarlinkCall& call, const Sink& sink);
    void trace(const VarlinkCall& call, const Sink& sink);

    SupervisorApi& supervisor_;
    AccessPolicy policy_;
    ServiceInfo info_;
    // Whether the caller of the call being dispatched has the control
    // privilege (root or the control group); set by dispatch() before the
    // handler runs, read by handlers that return secrets (Get hides the
    // environment's values from everyone else).
    bool caller_privileged_ = false;
    // Who that caller is (Validate checks with the caller's rights).
    PeerCredentials caller_;
    static constexpr std::size_t kDeniedLogBurst = 5;
    static constexpr Duration kDeniedLogWindow = std::chrono::seconds(10);
    LogLimit denied_log_{kDeniedLogBurst, kDeniedLogWindow};
};

}  // namespace infervisor
