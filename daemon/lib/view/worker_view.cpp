#include "view/worker_view.h"

#include <algorithm>

namespace infervisor {

uint64_t usec_of(std::chrono::nanoseconds d) {
    auto usec = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
    return static_cast<uint64_t>(std::max<int64_t>(0, usec));
}

uint64_t age_usec(TimePoint since, TimePoint now) { return usec_of(now - since); }

}  // namespace infervisor
