#include "supervise/worker_ollama_unload.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <utility>

namespace infervisor {

WorkerOllamaUnload::WorkerOllamaUnload(boost::asio::io_context& io) : io_(io), poll_timer_(io) {}

WorkerOllamaUnload::~WorkerOllamaUnload() { cancel(); }

void WorkerOllamaUnload::cancel() {
    ++generation_;
    poll_timer_.cancel();
    if (exchange_) std::exchange(exchange_, nullptr)->cancel();
    done_ = {};
}

Duration WorkerOllamaUnload::left() const {
    return std::chrono::duration_cast<Duration>(deadline_ - std::chrono::steady_clock::now());
}

void WorkerOllamaUnload::unload(Server server, Done done) {
    cancel();
    server_ = std::move(server);
    done_ = std::move(done);
    asked_.clear();
    deadline_ = std::chrono::steady_clock::now() + server_.timeout;
    exchange(ollama_ps_request(server_.engine, server_.bearer), [this](HttpAnswer answer) {
        auto listed = parse_ollama_ps(answer);
        if (!listed) return finish(listed.error());
        asked_ = std::move(*listed);
        if (asked_.empty()) return finish(Outcome{});
        unload_next(0);
    });
}

void WorkerOllamaUnload::unload_next(size_t index) {
    if (index == asked_.size()) return poll();
    const std::string& model = asked_[index].name;
    exchange(ollama_unload_request(server_.engine, server_.bearer, model),
             [this, index, model](HttpAnswer answer) {
                 if (auto r = check_ollama_unloaded(answer, model); !r) return finish(r.error());
                 unload_next(index + 1);
             });
}

void WorkerOllamaUnload::poll() {
    exchange(ollama_ps_request(server_.engine, server_.bearer), [this](HttpAnswer answer) {
        auto listed = parse_ollama_ps(answer);
        if (!listed) return finish(listed.error());
        settle(*listed);
    });
}

// Done once none of the asked models is listed; else looked at again after
// kPollEvery while time is left, and what is still listed reported then.
void WorkerOllamaUnload::settle(const std::vector<OllamaModel>& listed) {
    Outcome outcome;
    for (const OllamaModel& m : asked_) {
        bool still = std::any_of(listed.begin(), listed.end(),
                                 [&](const OllamaModel& l) { return l.name == m.name; });
        (still ? outcome.still_loaded : outcome.unloaded).push_back(m);
    }
    if (outcome.still_loaded.empty() || left() <= kPollEvery) return finish(std::move(outcome));
    uint64_t generation = generation_;
    poll_timer_.expires_after(kPollEvery);
    poll_timer_.async_wait([this, generation](const boost::system::error_code& ec) {
        if (ec || generation != generation_) return;
        poll();
    });
}

void WorkerOllamaUnload::exchange(HttpRequest request, std::function<void(HttpAnswer)> next) {
    uint64_t generation = generation_;
    Duration remaining = left();
    if (remaining <= Duration::zero()) {
        // Time is up before this request: answered from the loop, as an
        // exchange would be.
        boost::asio::post(io_, [this, generation, next = std::move(next)] {
            if (generation != generation_) return;
            HttpAnswer answer;
            answer.error = "no time left within the unload's bound";
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

void WorkerOllamaUnload::finish(Result<Outcome> result) {
    ++generation_;
    if (auto done = std::exchange(done_, {})) done(std::move(result));
}

}  // namespace infervisor
