#include "services/userdb_server.h"

#include <spdlog/spdlog.h>

#include <array>
#include <boost/asio/write.hpp>
#include <set>

#include "control/asio_coro.h"
#include "control/control_socket.h"
#include "control/varlink_framer.h"
#include "services/userdb_records.h"
#include "supervise/worker_launch.h"

namespace infervisor {

namespace asio = boost::asio;
using boost::system::error_code;
using Protocol = asio::local::stream_protocol;

namespace {

constexpr size_t kMaxMessage = 64 * 1024;
constexpr auto kIdle = std::chrono::seconds(10);

}  // namespace

struct UserDbServer::State {
    struct Connection {
        explicit Connection(Protocol::socket s)
            : socket(std::move(s)), idle(socket.get_executor()) {}
        Protocol::socket socket;
        asio::steady_timer idle;
        void touch() { idle.expires_after(kIdle); }
        void close() {
            error_code ignored;
            socket.close(ignored);
            idle.cancel();
        }
    };

    State(asio::io_context& io, Paths p, std::filesystem::path s)
        : paths(std::move(p)),
          users(dynamic_users(paths)),
          socket_path(std::move(s)),
          acceptor(io) {}
    Paths paths;
    // Any local user may ask as often as they like: the store's files are
    // read only when it has changed (process/dynamic_users.h).
    DynamicUsersCache users;
    std::filesystem::path socket_path;
    Protocol::acceptor acceptor;
    BoundSocket bound;
    std::set<std::shared_ptr<Connection>> connections;
    bool stopped = false;
};

namespace {

using Connection = UserDbServer::State::Connection;

std::string reply_text(const std::string& message, UserDbServer::State& state) {
    nlohmann::json call = nlohmann::json::parse(message, nullptr, false);
    auto users = state.users.list();
    std::map<std::string, uid_t> none;
    std::string out;
    for (const auto& reply :
         answer_userdb_call(call, users ? *users : none, state.paths.state_dir)) {
        out += reply.dump();
        out.push_back('\0');
    }
    return out;
}

asio::awaitable<void> watch_idle(std::shared_ptr<Connection> c) {
    while (c->socket.is_open()) {
        error_code ec;
        co_await c->idle.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (!ec) c->close();  // expired, not re-armed by activity
    }
}

asio::awaitable<void> serve(std::shared_ptr<UserDbServer::State> state,
                            std::shared_ptr<Connection> c) {
    VarlinkFramer framer(kMaxMessage);
    std::array<char, 4096> buffer;
    while (c->socket.is_open()) {
        error_code ec;
        size_t n = co_await c->socket.async_read_some(
            asio::buffer(buffer), asio::redirect_error(asio::use_awaitable, ec));
        if (ec || !framer.feed({buffer.data(), n})) break;
        c->touch();
        while (auto message = framer.next()) {
            std::string out = reply_text(*message, *state);
            co_await asio::async_write(c->socket, asio::buffer(out),
                                       asio::redirect_error(asio::use_awaitable, ec));
            if (ec) break;
            c->touch();
        }
        if (ec) break;
    }
    c->close();
    state->connections.erase(c);
}

asio::awaitable<void> accept_loop(std::shared_ptr<UserDbServer::State> state) {
    asio::steady_timer pause(state->acceptor.get_executor());
    while (!state->stopped) {
        error_code ec;
        auto socket =
            co_await state->acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
        if (state->stopped || ec == asio::error::operation_aborted) break;
        if (ec) {  // out of descriptors or memory: pause rather than spin
            pause.expires_after(std::chrono::milliseconds(100));
            co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            continue;
        }
        if (state->connections.size() >= UserDbServer::kMaxConnections) continue;  // closed
        auto c = std::make_shared<Connection>(std::move(socket));
        state->connections.insert(c);
        c->touch();
        auto executor = state->acceptor.get_executor();
        asio::co_spawn(executor, watch_idle(c), asio::detached);
        asio::co_spawn(executor, serve(state, c), asio::detached);
    }
}

}  // namespace

std::filesystem::path userdb_socket_path(const Paths& paths) {
    return paths.runtime_dir.parent_path() / "systemd" / "userdb" / kUserDbService;
}

UserDbServer::UserDbServer(asio::io_context& io, Paths paths)
    : io_(io),
      paths_(std::move(paths)),
      state_(std::make_shared<State>(io, paths_, userdb_socket_path(paths_))) {}

UserDbServer::~UserDbServer() { stop(); }

void UserDbServer::start() {
    if (auto r = listen(); !r)
        spdlog::info("dynamic users' names not served: {}", r.error().message());
}

Result<void> UserDbServer::listen() {
    if (state_->acceptor.is_open()) return {};  // listening already
    if (state_->stopped) state_ = std::make_shared<State>(io_, paths_, userdb_socket_path(paths_));
    std::error_code ec;
    if (!std::filesystem::is_directory(state_->socket_path.parent_path(), ec))
        return plain_error(state_->socket_path.parent_path().string() +
                           " does not exist: no systemd userdb on this host");
    auto bound = bind_control_socket(state_->socket_path, 0666);
    if (!bound) return bound.error();
    error_code aec;
    state_->acceptor.assign(Protocol(), bound->fd.get(), aec);
    if (aec) return Error{aec.value(), "listen on " + state_->socket_path.string()};
    (void)bound->fd.release();  // the acceptor owns it now
    state_->bound = std::move(*bound);
    asio::co_spawn(io_, accept_loop(state_), asio::detached);
    return {};
}

void UserDbServer::stop() {
    if (state_->stopped) return;
    state_->stopped = true;
    error_code ignored;
    if (state_->acceptor.is_open()) {
        state_->acceptor.close(ignored);
        unlink_control_socket(state_->socket_path, state_->bound);
    }
    auto connections = state_->connections;
    for (const auto& c : connections) c->close();
}

}  // namespace infervisor
