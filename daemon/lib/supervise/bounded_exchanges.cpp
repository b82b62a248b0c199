#include "supervise/bounded_exchanges.h"

#include <boost/asio/post.hpp>
#include <utility>

namespace infervisor {

void BoundedExchanges::begin(Duration bound) {
    cancel();
    deadline_ = std::chrono::steady_clock::now() + bound;
}

Duration BoundedExchanges::left() const {
    return std::chrono::duration_cast<Duration>(deadline_ - std::chrono::steady_clock::now());
}

void BoundedExchanges::cancel() {
    ++generation_;
    if (exchange_) std::exchange(exchange_, nullptr)->cancel();
}

void BoundedExchanges::exchange(HttpRequest request, std::function<void(HttpAnswer)> next) {
    uint64_t generation = generation_;
    Duration remaining = left();
    if (remaining <= Duration::zero()) {
        // Time is up before this request: answered from the loop, as an
        // exchange would be.
        boost::asio::post(io_, [this, generation, next = std::move(next)] {
            if (generation != generation_) return;
            HttpAnswer answer;
            answer.error = "no time left within the engine's timeout";
            next(std::move(answer));
        });
        return;
    }
    exchange_ = start_http_exchange(io_, std::move(request), remaining,
                                    [this, generation, next = std::move(next)](HttpAnswer answer) {
                                        if (generation != generation_) return;
                                        exchange_.reset();
                                        next(std::move(answer));
                                    });
}

}  // namespace infervisor
