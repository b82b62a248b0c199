#include "probe/probe_runner.h"

#include <utility>

namespace infervisor {

ProbeRunner::ProbeRunner(const Clock& clock, ProbeSpec spec, AttemptStarter starter,
                         OnChange on_change)
    : tracker_(std::move(spec), clock),
      clock_(clock),
      starter_(std::move(starter)),
      on_change_(std::move(on_change)),
      timer_(clock.make_timer()) {}

ProbeRunner::~ProbeRunner() { stop(); }

void ProbeRunner::start() {
    stop();
    running_ = true;
    tracker_.reset();
    arm();
}

void ProbeRunner::stop() {
    running_ = false;
    ++generation_;
    timer_->cancel();
    if (in_flight_) std::exchange(in_flight_, nullptr)->cancel();
}

void ProbeRunner::arm() {
    auto due = tracker_.next_attempt_at();
    if (!running_ || !due) return;
    timer_->arm_at(*due, [this] { attempt(); });
}

void ProbeRunner::attempt() {
    auto due = tracker_.next_attempt_at();
    if (!due) return;
    if (clock_.now() < *due) return arm();  // woken early
    tracker_.begin_attempt();
    in_flight_ =
        starter_(tracker_.spec().timeout, [this, generation = generation_](ProbeOutcome outcome) {
            if (generation == generation_) on_done(std::move(outcome));
        });
}

void ProbeRunner::on_done(ProbeOutcome outcome) {
    in_flight_.reset();
    auto change = tracker_.finish_attempt(std::move(outcome));
    const uint64_t generation = generation_;
    if (change && on_change_) on_change_(*change);
    if (generation == generation_) arm();  // unless the callback stopped or restarted us
}

}  // namespace infervisor
