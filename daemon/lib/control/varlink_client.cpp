#include "control/varlink_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <array>
#include <cstring>

namespace infervisor {

Result<VarlinkClient> VarlinkClient::connect(const std::filesystem::path& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string& s = path.native();
    if (s.size() >= sizeof addr.sun_path) {
        errno = ENAMETOOLONG;
        return errno_error("connect to " + s);
    }
    std::memcpy(addr.sun_path, s.c_str(), s.size() + 1);
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) return errno_error("create socket");
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
        return errno_error("connect to " + s);
    return VarlinkClient(std::move(fd));
}

Result<void> VarlinkClient::send(const VarlinkCall& call) {
    std::string bytes = encode_call(call);
    std::size_t offset = 0;
    while (offset < bytes.size()) {
        ssize_t n = ::send(fd_.get(), bytes.data() + offset, bytes.size() - offset, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno_error("send to the daemon");
        }
        offset += static_cast<std::size_t>(n);
    }
    return {};
}

Result<VarlinkReply> VarlinkClient::receive() {
    std::array<char, 65536> buffer;
    for (;;) {
        if (auto message = framer_.next()) return parse_reply(*message);
        if (timeout_) {
            pollfd pfd{fd_.get(), POLLIN, 0};
            int rc = ::poll(&pfd, 1, static_cast<int>(timeout_->count()));
            if (rc < 0 && errno == EINTR) continue;
            if (rc < 0) return errno_error("wait for the daemon's reply");
            if (rc == 0) return Error{ETIMEDOUT, "wait for the daemon's reply"};
        }
        ssize_t n = ::recv(fd_.get(), buffer.data(), buffer.size(), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno_error("receive from the daemon");
        if (n == 0) return Error{ECONNRESET, "the daemon closed the connection"};
        if (!framer_.feed({buffer.data(), static_cast<std::size_t>(n)}))
            return plain_error("the daemon's reply is too large");
    }
}

Result<VarlinkReply> VarlinkClient::call(const std::string& method,
                                         const nlohmann::json& parameters) {
    if (auto sent = send({method, parameters, false, false}); !sent) return sent.error();
    return receive();
}

Result<VarlinkReply> VarlinkClient::call_more(const std::string& method,
                                              const nlohmann::json& parameters,
                                              const ReplyHandler& on_reply) {
    if (auto sent = send({method, parameters, true, false}); !sent) return sent.error();
    for (;;) {
        auto reply = receive();
        if (!reply || reply->failed()) return reply;
        bool go_on = on_reply(*reply);
        if (!reply->continues || !go_on) return reply;
    }
}

Result<void> VarlinkClient::call_oneway(const std::string& method,
                                        const nlohmann::json& parameters) {
    return send({method, parameters, false, true});
}

}  // namespace infervisor
