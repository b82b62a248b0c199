#include "control/refused_connections.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <array>

#include "control/varlink_errors.h"
#include "control/varlink_message.h"

namespace infervisor {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// One non-blocking write: a short count or EAGAIN only costs the client the
// error text, never the loop its time.
void send_refusal(int fd, const ConnectionRefusal& why) {
    std::string bytes = encode_error(varlink_error::kTooManyConnections,
                                     {{"scope", why.scope}, {"limit", why.limit}});
    [[maybe_unused]] ssize_t sent =
        ::send(fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

std::string describe(const PeerCredentials& peer, const ConnectionRefusal& why) {
    if (why.scope == "uid")
        return fmt::format("uid {} holds its limit of {} connections", peer.uid, why.limit);
    return fmt::format("the limit of {} connections{} is reached", why.limit,
                       peer.uid == 0 ? "" : " for unprivileged clients");
}

}  // namespace

void RefusedConnections::refuse(Socket socket, const PeerCredentials& peer,
                                const ConnectionRefusal& why) {
    log(peer, why);
    send_refusal(socket.native_handle(), why);
    error_code ignored;
    socket.shutdown(Socket::shutdown_send, ignored);
    if (lingering_.size() >= options_.max_lingering) {
        socket.close(ignored);
        return;
    }
    auto held = std::make_shared<Socket>(std::move(socket));
    lingering_.insert(held);
    asio::co_spawn(
        held->get_executor(), [self = shared_from_this(), held] { return self->linger(held); },
        asio::detached);
}

asio::awaitable<void> RefusedConnections::linger(std::shared_ptr<Socket> socket) {
    asio::steady_timer deadline(socket->get_executor());
    deadline.expires_after(options_.linger);
    deadline.async_wait([socket](const error_code& ec) {
        error_code ignored;
        if (!ec) socket->close(ignored);
    });
    std::array<char, 4096> discard;
    for (;;) {
        error_code ec;
        co_await socket->async_read_some(asio::buffer(discard),
                                         asio::redirect_error(asio::use_awaitable, ec));
        if (ec) break;  // end of input, closed by the deadline or close_all()
    }
    deadline.cancel();
    error_code ignored;
    socket->close(ignored);
    lingering_.erase(socket);
}

void RefusedConnections::close_all() {
    for (const auto& socket : lingering_) {
        error_code ignored;
        socket->close(ignored);
    }
}

void RefusedConnections::log(const PeerCredentials& peer, const ConnectionRefusal& why) {
    auto now = std::chrono::steady_clock::now();
    if (logged_ && now - last_log_ < options_.log_interval) {
        ++unlogged_;
        return;
    }
    std::string others =
        unlogged_ ? fmt::format(" ({} more refused since the last message)", unlogged_) : "";
    spdlog::warn("control: refused connection of uid {} pid {}: {}{}", peer.uid, peer.pid,
                 describe(peer, why), others);
    logged_ = true;
    last_log_ = now;
    unlogged_ = 0;
}

}  // namespace infervisor
