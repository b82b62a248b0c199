#include "supervise/worker_ollama_unload.h"

#include <algorithm>
#include <utility>

namespace infervisor {

WorkerOllamaUnload::WorkerOllamaUnload(boost::asio::io_context& io)
    : exchanges_(io), poll_timer_(io) {}

WorkerOllamaUnload::~WorkerOllamaUnload() { cancel(); }

void WorkerOllamaUnload::cancel() {
    ++generation_;
    poll_timer_.cancel();
    exchanges_.cancel();
    done_ = {};
}

void WorkerOllamaUnload::unload(Server server, Done done) {
    cancel();
    server_ = std::move(server);
    done_ = std::move(done);
    asked_.clear();
    exchanges_.begin(server_.timeout);
    exchanges_.exchange(ollama_ps_request(server_.engine, server_.bearer),
                        [this](HttpAnswer answer) {
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
    exchanges_.exchange(ollama_unload_request(server_.engine, server_.bearer, model),
                        [this, index, model](HttpAnswer answer) {
                            if (auto r = check_ollama_unloaded(answer, model); !r)
                                return finish(r.error());
                            unload_next(index + 1);
                        });
}

void WorkerOllamaUnload::poll() {
    exchanges_.exchange(ollama_ps_request(server_.engine, server_.bearer),
                        [this](HttpAnswer answer) {
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
    if (outcome.still_loaded.empty() || exchanges_.left() <= kPollEvery)
        return finish(std::move(outcome));
    uint64_t generation = generation_;
    poll_timer_.expires_after(kPollEvery);
    poll_timer_.async_wait([this, generation](const boost::system::error_code& ec) {
        if (ec || generation != generation_) return;
        poll();
    });
}

void WorkerOllamaUnload::finish(Result<Outcome> result) {
    ++generation_;
    exchanges_.cancel();
    if (auto done = std::exchange(done_, {})) done(std::move(result));
}

}  // namespace infervisor
