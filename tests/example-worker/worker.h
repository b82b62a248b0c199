// Worker: the fake model server's life, driven by Options. One thread, one
// loop that sleeps in ppoll until the next deadline or a signal.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "http_endpoint.h"
#include "memory.h"
#include "notifier.h"
#include "options.h"

namespace example_worker {

class Worker {
  public:
    explicit Worker(Options options);
    // Returns the exit code (or never returns: abort, spin).
    int run();

  private:
    using Clock = std::chrono::steady_clock;

    void say(const char* format, ...) __attribute__((format(printf, 2, 3)));
    void install_signal_handlers();
    void restore_if_asked();
    void leave_orphan();
    bool create_tmp_file();
    bool hold_tmp_file();
    bool tmp_file_still_there();
    void become_ready();
    bool serve_one();
    void leak_some(Clock::time_point now);
    void burst();
    void checkpoint();
    int stop();
    [[noreturn]] void crash();
    [[noreturn]] void spin();
    Clock::time_point next_deadline() const;
    // Sleeps until `deadline`, a signal, or a health request (then served).
    void sleep_until(Clock::time_point deadline);

    Options options_;
    Notifier notifier_;
    HttpEndpoint endpoint_;
    ResidentMemory model_;
    ResidentMemory leak_;
    ResidentMemory burst_;
    unsigned long model_checksum_ = 0;  // what --touch-model read, kept so it is not optimised away
    Clock::time_point start_;
    bool ready_ = false;
    long served_ = 0;
    std::string tmp_path_;
    std::optional<std::chrono::microseconds> watchdog_interval_;
    Clock::time_point next_serve_{}, next_watchdog_{}, next_leak_{}, next_leak_report_{};
    Clock::time_point last_leak_{};  // the leak's last step (its start, before one)
    Clock::duration leaking_for_{};  // the time the leak has run, freezes left out
    bool leak_done_ = false;         // --leak-max-mb reached
};

}  // namespace example_worker
