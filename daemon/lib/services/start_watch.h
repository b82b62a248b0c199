// StartWatch: what an operator's `start` or `restart` of one worker came to,
// so that the reply says it (issue 27, point 1: `start` of a worker whose
// command does not exist exited 0; `restart` replied while the new run
// still waited for its startup probe).
//
// It is decided by the worker's events that follow the request, then by
// the state the request left it in:
// - started: the run is ready (event `ready`, or the worker is running), or
//   the worker, suspended, was thawed (`resumed`);
// - not started, with why: the run could not be started (`start-failed`),
//   ended before it was ready (`exited`, `oom-killed`), hit its start limit
//   (`failed`), was parked or stopped, or waits for room on the host
//   (`waiting`, `restart-waiting-for-memory`) or is suspended.
// A restart's old run ends first: its `exited` is not this start's; only
// an end after the new run's `started` counts.
//
// Pure: no clock, no I/O (SupervisorService feeds it).
#pragma once

#include <string>

#include "journal/event.h"
#include "supervise/worker_state.h"

namespace infervisor {

class StartWatch {
  public:
    enum class Kind { start, restart };
    explicit StartWatch(Kind kind) : counts_run_end_(kind == Kind::start) {}

    // An event of this worker, in order, from the moment of the request.
    void on_event(const Event& event);
    // The worker's state right after the request was made: decides what the
    // events so far left open and the state settles (running, or not to
    // change by itself). Later moves all come with events.
    void on_state(WorkerState state, const std::string& reason);
    // The worker is gone (removed by a reload).
    void on_removed();

    bool decided() const { return decided_; }
    bool started() const { return started_; }
    // Why it did not start (when decided and not started).
    const std::string& why() const { return why_; }

  private:
    void decide(bool started, std::string why);

    bool counts_run_end_;
    bool decided_ = false;
    bool started_ = false;
    std::string why_;
};

}  // namespace infervisor
