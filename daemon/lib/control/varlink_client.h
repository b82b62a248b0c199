// VarlinkClient: a blocking Varlink client over an AF_UNIX stream socket,
// for infervisorctl, the tests and the benchmark.
//
// Errors: a failure to connect, send or receive is an Error with the errno
// (ENOENT/ECONNREFUSED: nothing listens; EACCES: no permission to the
// socket; ECONNRESET: the daemon closed the connection; ETIMEDOUT: no reply
// within the timeout). A Varlink error reply is not an Error: it comes back
// as a VarlinkReply with `error` set.
#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/clock.h"
#include "base/result.h"
#include "base/unique_fd.h"
#include "control/varlink_framer.h"
#include "control/varlink_message.h"

namespace infervisor {

class VarlinkClient {
  public:
    static Result<VarlinkClient> connect(const std::filesystem::path& path);
    // Over a stream socket that is already connected to a daemon's control
    // socket some other way (infervisorctl -H: ssh and the stdio bridge).
    static VarlinkClient over(UniqueFd connected) { return VarlinkClient(std::move(connected)); }

    // Default: wait for replies without limit.
    void set_timeout(std::optional<Duration> timeout) { timeout_ = timeout; }

    Result<VarlinkReply> call(const std::string& method,
                              const nlohmann::json& parameters = nlohmann::json::object());

    // A call with "more": each successful reply goes to `on_reply`, until one
    // without "continues" or until on_reply returns false; that last reply is
    // returned. An error reply is returned without going to on_reply.
    using ReplyHandler = std::function<bool(const VarlinkReply&)>;
    Result<VarlinkReply> call_more(const std::string& method, const nlohmann::json& parameters,
                                   const ReplyHandler& on_reply);

    // A call with "oneway": sent, no reply awaited.
    Result<void> call_oneway(const std::string& method, const nlohmann::json& parameters);

    int fd() const { return fd_.get(); }

  private:
    explicit VarlinkClient(UniqueFd fd) : fd_(std::move(fd)) {}
    Result<void> send(const VarlinkCall& call);
    Result<VarlinkReply> receive();

    UniqueFd fd_;
    VarlinkFramer framer_{64u << 20};
    std::optional<Duration> timeout_;
};

}  // namespace infervisor
