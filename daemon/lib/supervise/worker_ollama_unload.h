// WorkerOllamaUnload: asking one worker's Ollama server to unload every
// model it holds (the preempt ladder's unload, policy/preempt_ladder.h), as
// HTTP exchanges on the event loop (probe/http_exchange.h) with the
// requests and answers of engine/ollama_models.h:
//
//   GET /api/ps                       what is loaded (none: done, nothing to do)
//   POST /api/generate, per model     {"model": M, "keep_alive": 0}
//   GET /api/ps, every kPollEvery     until none of them is listed
//
// Ollama unloads a model that a request holds only when that request ends
// (sched.go expireRunner), so the last step waits — within the bound — and
// reports what is still loaded rather than calling it done.
//
// Contract: event-loop thread only; one operation at a time (a second one
// cancels the first). `done` is called exactly once per operation, on the
// loop, never from within unload(), and never after cancel() or the
// destruction of this object. The whole operation is bounded by
// `Server::timeout`; each exchange gets what is left of it.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "engine/engine_spec.h"
#include "engine/ollama_models.h"
#include "probe/http_exchange.h"
#include "supervise/bounded_exchanges.h"

namespace infervisor {

class WorkerOllamaUnload {
  public:
    static constexpr Duration kPollEvery = std::chrono::milliseconds(200);

    struct Server {
        EngineSpec engine;
        std::string bearer;  // engine.api_key's value, or empty
        Duration timeout{};  // of the whole operation
    };
    struct Outcome {
        std::vector<OllamaModel> unloaded;      // listed before, and gone at the end
        std::vector<OllamaModel> still_loaded;  // asked to unload, still listed at the end
        // Listed before: none means there was nothing to unload.
        bool nothing_loaded() const { return unloaded.empty() && still_loaded.empty(); }
    };
    using Done = std::function<void(Result<Outcome>)>;

    explicit WorkerOllamaUnload(boost::asio::io_context& io);
    ~WorkerOllamaUnload();
    WorkerOllamaUnload(const WorkerOllamaUnload&) = delete;
    WorkerOllamaUnload& operator=(const WorkerOllamaUnload&) = delete;

    void unload(Server server, Done done);
    void cancel();

  private:
    void unload_next(size_t index);
    void poll();
    void settle(const std::vector<OllamaModel>& listed);
    void finish(Result<Outcome> result);

    BoundedExchanges exchanges_;
    boost::asio::steady_timer poll_timer_;
    Server server_;
    Done done_;
    std::vector<OllamaModel> asked_;  // the models listed at first
    uint64_t generation_ = 0;  // tells the live operation's poll timer from a cancelled one's
};

}  // namespace infervisor
