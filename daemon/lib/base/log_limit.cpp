#include "base/log_limit.h"

namespace infervisor {

LogLimit::Admission LogLimit::admit(const std::string& key, TimePoint now) {
    auto [it, fresh] = state_.try_emplace(key);
    State& s = it->second;
    if (fresh || now - s.window_start >= window_) {
        s.window_start = now;
        s.logged = 0;
    }
    if (s.logged >= burst_) {
        ++s.suppressed;
        return {};
    }
    ++s.logged;
    Admission a{true, s.suppressed};
    s.suppressed = 0;
    return a;
}

uint64_t LogLimit::take_suppressed(const std::string& key) {
    auto it = state_.find(key);
    if (it == state_.end()) return 0;
    uint64_t n = it->second.suppressed;
    it->second.suppressed = 0;
    return n;
}

}  // namespace infervisor
