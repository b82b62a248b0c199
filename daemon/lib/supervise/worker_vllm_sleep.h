// WorkerVllmSleep: putting one worker's vLLM server to sleep and waking it
// (`suspend: {method: vllm-sleep}`), as HTTP exchanges on the event loop
// (probe/http_exchange.h) with the requests and answers of
// engine/vllm_sleep.h.
//
//   sleep: POST /sleep?level=N, then GET /is_sleeping must say true.
//   wake:  POST /wake_up, then GET /is_sleeping must say false.
//
// Contract: event-loop thread only; one operation at a time (a second one
// cancels the first). `done` is called exactly once per operation, on the
// loop, never from within sleep()/wake(), and never after cancel() or the
// destruction of this object. The whole operation (both exchanges) is
// bounded by `Server::timeout`: the second exchange gets what the first
// left, so a server that does not answer delays a suspension (an emergency
// one too) by at most that.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/clock.h"
#include "base/result.h"
#include "engine/engine_spec.h"
#include "probe/http_exchange.h"
#include "supervise/bounded_exchanges.h"

namespace infervisor {

class WorkerVllmSleep {
  public:
    struct Server {
        EngineSpec engine;
        std::string bearer;  // --api-key, or empty
        Duration timeout{};  // of the whole operation
    };
    using Done = std::function<void(Result<void>)>;

    explicit WorkerVllmSleep(boost::asio::io_context& io);
    ~WorkerVllmSleep();
    WorkerVllmSleep(const WorkerVllmSleep&) = delete;
    WorkerVllmSleep& operator=(const WorkerVllmSleep&) = delete;

    void sleep(Server server, int64_t level, Done done);
    void wake(Server server, Done done);
    void cancel();

  private:
    // POST `act`, then GET /is_sleeping must say `sleeping`.
    void run(Server server, HttpRequest act, bool sleeping, Done done);
    void finish(Result<void> result);

    BoundedExchanges exchanges_;
    Done done_;
};

}  // namespace infervisor
