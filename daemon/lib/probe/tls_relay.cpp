#include "probe/tls_relay.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/read_until.hpp>
#include <utility>

#include "probe/tls_relay_protocol.h"
#include "process/pidfd.h"
#include "process/spawn.h"

namespace infervisor {

namespace asio = boost::asio;
using boost::system::error_code;
using local_stream = asio::local::stream_protocol;

namespace {

std::filesystem::path& relay_program() {
    static std::filesystem::path program = INFERVISOR_TLS_RELAY;
    return program;
}

std::string relay_name() { return "TLS relay " + tls_relay_program().string(); }

SpawnRequest relay_request(int tcp_fd, int plain_fd) {
    SpawnRequest request;
    request.argv = {tls_relay_program().string()};
    // Nothing of the daemon's environment: the relay needs none.
    if (::geteuid() == 0) {
        request.uid = kTlsRelayUid;
        request.gid = kTlsRelayGid;  // and no supplementary groups
    }
    request.stdin_fd = tcp_fd;
    request.stdout_fd = plain_fd;
    request.stderr_fd = -1;
    request.oom_score_adj = 1000;
    request.no_new_privileges = true;
    request.address_space_limit = kTlsRelayMemoryLimit;
    request.no_core_dump = true;
    return request;
}

// spawn_process says "spawn PATH: STEP: reason"; here the program is the
// TLS relay, and a failed execve (the usual failure: a missing file) needs
// no step: "TLS relay PATH: No such file or directory".
Error relay_spawn_error(const Error& error) {
    std::string step = error.what;
    const std::string prefix = "spawn " + tls_relay_program().string() + ": ";
    if (step.starts_with(prefix)) step.erase(0, prefix.size());
    return Error{error.code, relay_name() + (step == "execve" ? "" : ": " + step)};
}

// The relay's line as a detail: printable ASCII (it says so itself, but the
// daemon does not rely on a program it runs unprivileged).
std::string printable(std::string text) {
    for (char& c : text)
        if (c < ' ' || c > '~') c = '?';
    return text;
}

}  // namespace

void set_tls_relay_program(std::filesystem::path program) { relay_program() = std::move(program); }

const std::filesystem::path& tls_relay_program() { return relay_program(); }

Result<std::shared_ptr<TlsRelay>> TlsRelay::start(asio::io_context& io, int tcp_fd) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
        return errno_error(relay_name() + ": socketpair");
    UniqueFd ours(pair[0]), theirs(pair[1]);
    auto spawned = spawn_process(relay_request(tcp_fd, theirs.get()));
    if (!spawned) return relay_spawn_error(spawned.error());
    theirs.reset();  // the relay's own: its end of the plain side must close with it
    return std::make_shared<TlsRelay>(io, std::move(ours), std::move(spawned->pidfd));
}

TlsRelay::TlsRelay(asio::io_context& io, UniqueFd plain, UniqueFd pidfd)
    : plain_(io, local_stream(), plain.release()), pidfd_(io, pidfd.release()) {}

TlsRelay::~TlsRelay() {
    if (reaped_ || !pidfd_.is_open()) return;
    // Only when the loop went before the reap: a killed process exits
    // promptly, so this wait is short. It must block: Asio made the pidfd
    // non-blocking, and waitid on a non-blocking pidfd of a child that has
    // not exited yet fails with EAGAIN instead of waiting.
    const int fd = pidfd_.native_handle();
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    (void)send_signal(fd, SIGKILL);
    (void)wait_for_exit(fd);
}

void TlsRelay::await_ready(Ready ready) {
    ready_ = std::move(ready);
    asio::async_read_until(plain_, asio::dynamic_buffer(status_, kTlsRelayMaxStatusLine), '\n',
                           [self = shared_from_this()](const error_code& ec, std::size_t n) {
                               self->on_status_line(ec, n);
                           });
}

void TlsRelay::on_status_line(const error_code& ec, std::size_t line_end) {
    if (stopped_ || !ready_) return;
    auto ready = std::exchange(ready_, nullptr);
    if (ec == asio::error::not_found)
        return ready(relay_name() + ": a status line longer than " +
                         std::to_string(kTlsRelayMaxStatusLine) + " bytes",
                     {});
    if (ec == asio::error::eof)  // killed (its memory limit?) or crashed
        return ready(relay_name() + ": ended without a word", {});
    if (ec) return ready(relay_name() + ": reading its status: " + ec.message(), {});
    std::string line = status_.substr(0, line_end - 1);
    std::string early = status_.substr(line_end);
    status_.clear();
    status_.shrink_to_fit();
    if (line == kTlsRelayReady) return ready({}, std::move(early));
    if (line.empty()) line = relay_name() + ": an empty status line";
    ready(printable(std::move(line)), {});
}

void TlsRelay::stop() {
    if (stopped_) return;
    stopped_ = true;
    ready_ = nullptr;
    error_code ignored;
    plain_.close(ignored);
    // An exited, unreaped relay takes the signal to no effect.
    (void)send_signal(pidfd_.native_handle(), SIGKILL);
    await_exit();
}

void TlsRelay::await_exit() {
    pidfd_.async_wait(asio::posix::stream_descriptor::wait_read,
                      [self = shared_from_this()](const error_code& ec) {
                          if (ec) return;  // the loop is going: the destructor reaps
                          auto status = reap(self->pidfd_.native_handle());
                          if (status && !*status) return self->await_exit();  // not yet
                          self->reaped_ = true;
                          error_code ignored;
                          self->pidfd_.close(ignored);
                      });
}

}  // namespace infervisor
