// infervisor-tls-relay: the TLS client of the daemon's https exchanges
// (health probes, engine scrapes and requests over https), in a process of
// its own, so that OpenSSL is never mapped into infervisord: the daemon is
// mlockall'd, and libssl and libcrypto would cost it locked RAM for good
// (issue 28). It is the only program of infervisor that links OpenSSL.
//
// Started by the daemon (probe/tls_relay.h) for one exchange, unprivileged
// (nobody, no supplementary groups, no_new_privs, a 64 MiB address-space
// limit, no core dumps, oom_score_adj 1000), with exactly these fds:
//   0  the TCP connection to the server, connected by the daemon
//   1  the plain side: the daemon's end of a socketpair
//   2  /dev/null
// The protocol on fd 1 (one status line, then plaintext both ways) is
// probe/tls_relay_protocol.h's. It reads what a worker's TLS server sends,
// which may be hostile: every buffer is bounded (tls_pump.h), and it holds no
// secret and no right worth taking. Its lifetime is the daemon's business:
// the daemon kills it at its exchange's deadline or cancellation, and it
// ends by itself once both directions are done or the daemon's end closes.
//
// Exit status: 0 after the pump (or when the daemon's end closed first), 1
// when the handshake failed, 2 on a usage or setup error.
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "probe/tls_relay_protocol.h"
#include "tls_client.h"
#include "tls_pump.h"

namespace {

using infervisor::kTlsRelayMaxStatusLine;
using infervisor::kTlsRelayNetFd;
using infervisor::kTlsRelayPlainFd;

// Writes one status line to the plain side: printable ASCII only (a reason
// may quote bytes of the peer's), cut to the protocol's bound. False when the
// daemon's end is gone.
bool say(std::string line) {
    if (line.size() > kTlsRelayMaxStatusLine - 1) line.resize(kTlsRelayMaxStatusLine - 1);
    for (char& c : line)
        if (c < ' ' || c > '~') c = '?';
    line += '\n';
    std::size_t sent = 0;
    while (sent < line.size()) {
        ssize_t n = ::send(kTlsRelayPlainFd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
        } else if (n < 0 && errno == EAGAIN) {
            pollfd out{kTlsRelayPlainFd, POLLOUT, 0};
            (void)::poll(&out, 1, -1);
        } else if (!(n < 0 && errno == EINTR)) {
            return false;
        }
    }
    return true;
}

bool is_stream_socket(int fd) {
    int type = 0;
    socklen_t size = sizeof type;
    return ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) == 0 && type == SOCK_STREAM;
}

bool make_non_blocking(int fd) {
    int flags = ::fcntl(fd, F_GETFL);
    return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

}  // namespace

int main(int argc, char**) {
    if (argc != 1) {
        std::fputs(
            "usage: infervisor-tls-relay (started by infervisord, with fd 0 a connected TCP "
            "socket and fd 1 the daemon's end of a socketpair)\n",
            stderr);
        return 2;
    }
    // A write to a connection the server reset must be EPIPE, not death.
    ::signal(SIGPIPE, SIG_IGN);
    for (int fd : {kTlsRelayNetFd, kTlsRelayPlainFd}) {
        if (!is_stream_socket(fd) || !make_non_blocking(fd)) {
            std::fprintf(stderr, "infervisor-tls-relay: fd %d is not a stream socket\n", fd);
            (void)say("TLS relay: fd " + std::to_string(fd) + " is not a stream socket");
            return 2;
        }
    }
    // Freed by the exit: the process lives for one connection.
    SSL_CTX* context = infervisor::make_tls_client_context();
    SSL* ssl = context ? SSL_new(context) : nullptr;
    if (!ssl || SSL_set_fd(ssl, kTlsRelayNetFd) != 1) {
        const char* reason = ERR_reason_error_string(ERR_get_error());
        (void)say(std::string("TLS relay: cannot set up TLS: ") + (reason ? reason : "?"));
        return 2;
    }
    std::string error;
    if (!infervisor::tls_handshake(ssl, kTlsRelayNetFd, kTlsRelayPlainFd, error)) {
        if (!error.empty()) (void)say("TLS handshake: " + error);
        return 1;
    }
    if (!say(infervisor::kTlsRelayReady)) return 0;
    infervisor::pump_tls(ssl, kTlsRelayNetFd, kTlsRelayPlainFd);
    return 0;
}
