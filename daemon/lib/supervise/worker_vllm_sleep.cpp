#include "supervise/worker_vllm_sleep.h"

#include <boost/asio/post.hpp>
#include <utility>

#include "engine/vllm_sleep.h"

namespace infervisor {

WorkerVllmSleep::WorkerVllmSleep(boost::asio::io_context& io) : io_(io) {}

WorkerVllmSleep::~WorkerVllmSleep() { cancel(); }

void WorkerVllmSleep::cancel() {
    ++generation_;
    if (exchange_) std::exchange(exchange_, nullptr)->cancel();
    done_ = {};
}

void WorkerVllmSleep::sleep(Server server, int64_t level, Done done) {
    HttpRequest act = vllm_sleep_request(server.engine, server.bearer, level);
    run(std::move(server), std::move(act), true, std::move(done));
}

void WorkerVllmSleep::wake(Server server, Done done) {
    HttpRequest act = vllm_wake_up_request(server.engine, server.bearer);
    run(std::move(server), std::move(act), false, std::move(done));
}

void WorkerVllmSleep::run(Server server, HttpRequest act, bool sleeping, Done done) {
    cancel();
    done_ = std::move(done);
    deadline_ = std::chrono::steady_clock::now() + server.timeout;
    std::string what = act.method + " " + act.target;
    HttpRequest check = vllm_is_sleeping_request(server.engine, server.bearer);
    exchange(std::move(act), [this, what, check, sleeping](HttpAnswer answer) {
        if (auto r = check_vllm_done(answer, what); !r) return finish(r.error());
        exchange(check, [this, what, sleeping](HttpAnswer checked) {
            auto is_sleeping = parse_vllm_is_sleeping(checked);
            if (!is_sleeping) return finish(is_sleeping.error());
            if (*is_sleeping != sleeping)
                return finish(plain_error(what + " was answered 200, but GET /is_sleeping says " +
                                          (*is_sleeping ? "true" : "false")));
            finish({});
        });
    });
}

void WorkerVllmSleep::exchange(HttpRequest request, std::function<void(HttpAnswer)> next) {
    uint64_t generation = generation_;
    auto left = std::chrono::duration_cast<Duration>(deadline_ - std::chrono::steady_clock::now());
    if (left <= Duration::zero()) {
        // Time is up before the second request: answered from the loop, as
        // an exchange would be.
        boost::asio::post(io_, [this, generation, next = std::move(next)] {
            if (generation != generation_) return;
            HttpAnswer answer;
            answer.error = "no time left within the engine's timeout";
            next(std::move(answer));
        });
        return;
    }
    exchange_ = start_http_exchange(io_, std::move(request), left,
                                    [this, generation, next = std::move(next)](HttpAnswer answer) {
                                        if (generation != generation_) return;
                                        exchange_.reset();
                                        next(std::move(answer));
                                    });
}

void WorkerVllmSleep::finish(Result<void> result) {
    ++generation_;
    if (auto done = std::exchange(done_, {})) done(std::move(result));
}

}  // namespace infervisor
