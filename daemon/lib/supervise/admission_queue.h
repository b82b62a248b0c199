// AdmissionQueue: the Supervisor's side of admission (policy/admission.h).
// It answers a Worker's "does my memory.reserve fit now?" from /proc/meminfo
// and the reserves and memory.current of the workers that hold memory, and
// starts waiting workers again when room may have appeared: soon after a
// worker exits, stops or is suspended, and every kRecheck while any waits
// (MemAvailable also moves with whatever else runs on the host). Highest
// priority first, then by name; each start is checked again by the worker
// (Worker::admitted), so several may start in one pass, each counting the
// reserves of those before it.
//
// Which workers count against a newcomer: those with processes (starting,
// running, stopping) and a reserve. A suspended worker gave its memory back;
// its way back is resume_when, which checks the room itself.
//
// Contract: event loop thread only; its time is ctx.clock's; reading the files is a few small reads
// per worker with a reserve. The queue sees the workers only through the
// WorkerList its owner (the Supervisor) hands in, so it does not depend on
// its owner.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "base/timer.h"
#include "journal/event_bus.h"
#include "policy/admission.h"
#include "supervise/worker_context.h"

namespace infervisor {

class Worker;
struct WorkerSpec;

class AdmissionQueue {
  public:
    static constexpr Duration kRecheck = std::chrono::seconds(2);
    // A worker that just exited frees its memory a moment later.
    static constexpr Duration kAfterExit = std::chrono::milliseconds(200);

    // The configured workers, in name order.
    using WorkerList = std::function<std::vector<Worker*>()>;

    AdmissionQueue(WorkerContext& ctx, WorkerList workers);
    ~AdmissionQueue();
    AdmissionQueue(const AdmissionQueue&) = delete;
    AdmissionQueue& operator=(const AdmissionQueue&) = delete;

    AdmissionVerdict check(const WorkerSpec& spec) const;

  private:
    void on_event(const Event& e);
    void schedule(Duration delay);
    void recheck();

    WorkerContext& ctx_;
    WorkerList workers_;
    EventBus::SinkId subscription_ = 0;
    std::unique_ptr<Timer> timer_;  // on ctx_.clock: the next recheck
};

}  // namespace infervisor
