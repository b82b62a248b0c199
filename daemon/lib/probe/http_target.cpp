#include "probe/http_target.h"

#include <arpa/inet.h>

namespace infervisor {

bool is_ip_literal(const std::string& host) {
    unsigned char buffer[sizeof(struct in6_addr)];
    return ::inet_pton(AF_INET, host.c_str(), buffer) == 1 ||
           ::inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

bool is_request_target(const std::string& target) {
    if (target.empty() || target.front() != '/' || target.size() > kMaxRequestTarget) return false;
    for (unsigned char c : target)
        if (c <= ' ' || c >= 0x7f) return false;  // no space, control or 8-bit bytes
    return true;
}

}  // namespace infervisor
