// What an HTTP request of the daemon may be addressed to, checked where the
// configuration names it (probes, a worker's engine) and again by the client
// (probe/http_exchange.h): an IP literal, and a request target that is a
// path with no byte that could end or split the request line.
#pragma once

#include <cstddef>
#include <string>

namespace infervisor {

constexpr size_t kMaxRequestTarget = 1024;

// 127.0.0.1 or ::1; never a name (nothing resolves names on the event loop).
bool is_ip_literal(const std::string& host);

// Starts with '/', at most kMaxRequestTarget bytes, no space, control or
// 8-bit byte.
bool is_request_target(const std::string& target);

}  // namespace infervisor
