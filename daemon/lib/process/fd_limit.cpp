#include "process/fd_limit.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>

namespace infervisor {

namespace {

std::optional<rlimit> children_limit;

// The soft limit a re-executing daemon found at its first start, if any.
std::optional<rlim_t> inherited_soft_limit() {
    const char* text = std::getenv(kInheritedFdLimitVariable);
    if (!text) return std::nullopt;
    rlim_t value = 0;
    auto end = text + std::strlen(text);
    auto [ptr, ec] = std::from_chars(text, end, value);
    if (ec != std::errc() || ptr != end || value == 0) return std::nullopt;
    return value;
}

}  // namespace

void raise_fd_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
    rlim_t original = inherited_soft_limit().value_or(limit.rlim_cur);
    rlim_t wanted = limit.rlim_max == RLIM_INFINITY ? kMaxRaisedFdLimit
                                                    : std::min(limit.rlim_max, kMaxRaisedFdLimit);
    if (wanted > limit.rlim_cur) {
        rlimit raised = limit;
        raised.rlim_cur = wanted;
        if (::setrlimit(RLIMIT_NOFILE, &raised) != 0) return;
        limit = raised;
    }
    if (original >= limit.rlim_cur) return;
    children_limit = rlimit{original, limit.rlim_max};
    ::setenv(kInheritedFdLimitVariable, std::to_string(original).c_str(), 1);
}

std::optional<rlimit> fd_limit_for_children() { return children_limit; }

}  // namespace infervisor
