#include "base/result.h"

#include <cstring>

namespace infervisor {

std::string Error::message() const {
    if (code == 0) return what;
    return what + ": " + std::strerror(code);
}

Error errno_error(std::string_view what) { return Error{errno, std::string(what)}; }

Error plain_error(std::string_view what) { return Error{0, std::string(what)}; }

}  // namespace infervisor
