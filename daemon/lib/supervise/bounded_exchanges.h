// BoundedExchanges: the HTTP exchanges of one operation on a worker's
// server (a vLLM sleep and its check, an Ollama unload and its polls), one
// after another on the event loop, all within one deadline.
//
// Contract: event-loop thread only. exchange()'s `next` is called once, on
// the loop, never from within exchange(), and never after cancel(), begin()
// or the destruction of this object; when the deadline has passed before a
// request, `next` gets an incomplete answer saying so instead.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "base/clock.h"
#include "probe/http_exchange.h"

namespace infervisor {

class BoundedExchanges {
  public:
    explicit BoundedExchanges(boost::asio::io_context& io) : io_(io) {}
    ~BoundedExchanges() { cancel(); }
    BoundedExchanges(const BoundedExchanges&) = delete;
    BoundedExchanges& operator=(const BoundedExchanges&) = delete;

    // A new operation: what is in flight is cancelled; the deadline is now
    // plus `bound`.
    void begin(Duration bound);
    void exchange(HttpRequest request, std::function<void(HttpAnswer)> next);
    // What is left of the deadline (negative once past).
    Duration left() const;
    void cancel();

  private:
    boost::asio::io_context& io_;
    std::chrono::steady_clock::time_point deadline_;
    uint64_t generation_ = 0;  // tells the live operation's callbacks from a cancelled one's
    std::shared_ptr<HttpExchange> exchange_;
};

}  // namespace infervisor
