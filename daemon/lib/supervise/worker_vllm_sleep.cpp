#include "supervise/worker_vllm_sleep.h"

#include <utility>

#include "engine/vllm_sleep.h"

namespace infervisor {

WorkerVllmSleep::WorkerVllmSleep(boost::asio::io_context& io) : exchanges_(io) {}

WorkerVllmSleep::~WorkerVllmSleep() { cancel(); }

void WorkerVllmSleep::cancel() {
    exchanges_.cancel();
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
    exchanges_.begin(server.timeout);
    std::string what = act.method + " " + act.target;
    HttpRequest check = vllm_is_sleeping_request(server.engine, server.bearer);
    exchanges_.exchange(std::move(act), [this, what, check, sleeping](HttpAnswer answer) {
        if (auto r = check_vllm_done(answer, what); !r) return finish(r.error());
        exchanges_.exchange(check, [this, what, sleeping](HttpAnswer checked) {
            auto is_sleeping = parse_vllm_is_sleeping(checked);
            if (!is_sleeping) return finish(is_sleeping.error());
            if (*is_sleeping != sleeping)
                return finish(plain_error(what + " was answered 200, but GET /is_sleeping says " +
                                          (*is_sleeping ? "true" : "false")));
            finish({});
        });
    });
}

void WorkerVllmSleep::finish(Result<void> result) {
    exchanges_.cancel();
    if (auto done = std::exchange(done_, {})) done(std::move(result));
}

}  // namespace infervisor
