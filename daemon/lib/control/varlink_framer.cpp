#include "control/varlink_framer.h"

#include <algorithm>

namespace infervisor {

bool VarlinkFramer::feed(std::string_view bytes) {
    if (overflowed_) return false;
    if (bytes.size() > max_buffered_ - buffered()) {
        overflowed_ = true;
        buffer_.clear();
        start_ = scanned_ = 0;
        return false;
    }
    if (start_ > 0 && start_ >= buffer_.size() / 2) {
        buffer_.erase(0, start_);
        scanned_ -= start_;
        start_ = 0;
    }
    buffer_.append(bytes);
    return true;
}

std::optional<std::string> VarlinkFramer::next() {
    if (overflowed_) return std::nullopt;
    auto end = buffer_.find('\0', std::max(start_, scanned_));
    if (end == std::string::npos) {
        scanned_ = buffer_.size();
        return std::nullopt;
    }
    std::string message = buffer_.substr(start_, end - start_);
    start_ = scanned_ = end + 1;
    if (start_ == buffer_.size()) {
        buffer_.clear();
        start_ = scanned_ = 0;
    }
    return message;
}

bool VarlinkFramer::has_partial() const {
    return buffered() > 0 && buffer_.find('\0', std::max(start_, scanned_)) == std::string::npos;
}

}  // namespace infervisor
