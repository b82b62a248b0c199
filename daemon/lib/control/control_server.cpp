#include "control/control_server.h"

#include <spdlog/spdlog.h>

#include <variant>
#include <vector>

#include "control/refused_connections.h"

namespace infervisor {

namespace asio = boost::asio;
using boost::system::error_code;
using Protocol = asio::local::stream_protocol;

// The accepting side; shared with the accept coroutine so that it stays
// valid until that coroutine has seen the acceptor closed.
struct ControlListener {
    ControlListener(asio::io_context& io, std::shared_ptr<SessionHub> session_hub)
        : acceptor(io), hub(std::move(session_hub)) {}

    Protocol::acceptor acceptor;
    std::shared_ptr<SessionHub> hub;
    std::shared_ptr<RefusedConnections> refused = std::make_shared<RefusedConnections>();
};

namespace {

// Accept failures that mean "out of file descriptors or memory for now": the
// loop pauses instead of spinning on them.
bool transient_accept_error(const error_code& ec) {
    return ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space ||
           ec == asio::error::no_memory || ec.value() == ENFILE;
}

// Admits the connection under its peer's quota, or turns it away.
void serve(ControlListener& listener, Protocol::socket socket) {
    auto peer = read_peer_credentials(socket.native_handle());
    if (!peer) {
        spdlog::warn("control: dropping connection: {}", peer.error().message());
        return;
    }
    auto admitted = listener.hub->quota.admit(peer->uid);
    if (auto* refusal = std::get_if<ConnectionRefusal>(&admitted)) {
        listener.refused->refuse(std::move(socket), *peer, *refusal);
        return;
    }
    std::make_shared<ControlSession>(std::move(socket), std::move(*peer), listener.hub,
                                     std::move(std::get<ConnectionQuota::Slot>(admitted)))
        ->start();
}

asio::awaitable<void> accept_loop(std::shared_ptr<ControlListener> listener) {
    asio::steady_timer pause(listener->acceptor.get_executor());
    while (listener->acceptor.is_open()) {
        error_code ec;
        auto socket =
            co_await listener->acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
        if (!listener->acceptor.is_open() || ec == asio::error::operation_aborted) break;
        if (ec) {
            spdlog::warn("control: accept: {}", ec.message());
            if (transient_accept_error(ec)) {
                pause.expires_after(std::chrono::milliseconds(100));
                co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            }
            continue;
        }
        serve(*listener, std::move(socket));
    }
}

}  // namespace

std::filesystem::path control_socket_path(const Paths& paths) {
    return paths.runtime_dir / "io.infervisor";
}

ControlServer::ControlServer(asio::io_context& io, SupervisorApi& supervisor,
                             ControlServerOptions options)
    : io_(io),
      options_(std::move(options)),
      hub_(std::make_shared<SessionHub>(
          supervisor, AccessPolicy{options_.control_group},
          SessionLimits{options_.idle_timeout, options_.max_message_size, options_.max_output},
          ConnectionLimits{options_.max_connections, options_.max_connections_per_uid,
                           options_.root_reserved_connections})) {}

ControlServer::~ControlServer() { stop(); }

Result<void> ControlServer::start() {
    if (listener_) return plain_error("control server already started");
    auto bound = bind_control_socket(options_.path, options_.socket_mode);
    if (!bound) return bound.error();
    auto listener = std::make_shared<ControlListener>(io_, hub_);
    error_code ec;
    listener->acceptor.assign(Protocol(), bound->fd.get(), ec);
    if (ec) {
        unlink_control_socket(options_.path, *bound);
        return Error{ec.value(), "listen on " + options_.path.string()};
    }
    bound->fd.release();  // the acceptor owns it now
    bound_ = std::move(*bound);
    listener_ = listener;
    asio::co_spawn(io_, accept_loop(listener), asio::detached);
    spdlog::info("control: listening on {}", options_.path.string());
    return {};
}

void ControlServer::stop() {
    if (!listener_) return;
    error_code ignored;
    listener_->acceptor.close(ignored);
    listener_->refused->close_all();
    listener_.reset();
    std::vector<ControlSession*> sessions(hub_->sessions.begin(), hub_->sessions.end());
    for (auto* session : sessions) session->close();
    unlink_control_socket(options_.path, bound_);
}

}  // namespace infervisor
