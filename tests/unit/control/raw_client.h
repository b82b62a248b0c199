// RawClient: a bare AF_UNIX stream connection for tests that misbehave on
// purpose (garbage, floods, never reading). Waits are bounded (20 s) only so
// that a broken server fails the test instead of hanging it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "base/unique_fd.h"

namespace infervisor::testing {

class RawClient {
  public:
    explicit RawClient(const std::filesystem::path& path);

    bool connected() const { return fd_.valid(); }
    int fd() const { return fd_.get(); }
    // False when the server has gone (EPIPE, ECONNRESET).
    bool send(std::string_view bytes);
    // The next NUL-terminated message, or nullopt on end of stream.
    std::optional<std::string> read_message();
    // True when the server closes the connection (discarding what it sent).
    bool closed_by_peer();
    void shutdown_write();

  private:
    bool wait_readable();

    UniqueFd fd_;
    std::string buffer_;
};

}  // namespace infervisor::testing
