// Service: something the daemon runs beside its workers' runs (policy rounds,
// metrics, work dir scans, the shared-/tmp guard, the control and userdb
// sockets). Every service has the same small lifecycle, and the daemon
// (app/daemon.cpp) walks them as one ServiceList, in one order:
//
//   configure(config)  at start, before start(), and after every reload that
//                      was applied. A running service applies the change at
//                      once; a stopped one keeps it for its next start().
//   start()            begins its timers, watches and sockets. A failure is
//                      journaled by the service itself and is not fatal: the
//                      workers are supervised all the same.
//   stop()             ends every wait, timer, socket and background job it
//                      has on the event loop; idempotent. start() may follow
//                      (after an in-place re-execution that failed).
//
// What an in-place re-execution (app/reexec.h) hands over: nothing of any
// service. The daemon stops them all, the new image configures and starts
// them afresh from the configuration and the workers' state files; the
// workers themselves are handed over by their state files
// (supervise/adoption.h). So a service keeps no state that a new image would
// need and could not rebuild.
#pragma once

#include <string_view>

#include "config/daemon_config.h"

namespace infervisor {

class Service {
  public:
    virtual ~Service() = default;

    // For the daemon's log: "policy", "metrics", ...
    virtual std::string_view name() const = 0;
    virtual void configure(const Config& config) = 0;
    virtual void start() = 0;
    virtual void stop() = 0;
};

}  // namespace infervisor
