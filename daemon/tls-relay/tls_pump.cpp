#include "tls_pump.h"

#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstddef>

namespace infervisor {

namespace {

constexpr std::size_t kPiece = 16 * 1024;

// One direction's bytes in flight: filled only when empty, then drained.
struct Buffer {
    std::array<char, kPiece> bytes;
    std::size_t begin = 0, end = 0;

    bool empty() const { return begin == end; }
    const char* data() const { return bytes.data() + begin; }
    std::size_t size() const { return end - begin; }
    void filled(std::size_t n) {
        begin = 0;
        end = n;
    }
    void consume(std::size_t n) { begin += n; }
    void clear() { begin = end = 0; }
};

// What a TLS call that could not go on waits for on the socket; 0 when it
// cannot go on at all (the end of the stream, an error).
short wait_for(SSL* ssl, int result) {
    switch (SSL_get_error(ssl, result)) {
        case SSL_ERROR_WANT_READ:
            return POLLIN;
        case SSL_ERROR_WANT_WRITE:
            return POLLOUT;
        default:
            return 0;
    }
}

}  // namespace

void pump_tls(SSL* ssl, int net_fd, int plain_fd) {
    Buffer down;             // server to daemon
    Buffer up;               // daemon to server
    bool tls_open = true;    // the TLS stream may still give data
    bool plain_open = true;  // the daemon may still send
    bool down_done = false;  // the stream's end was passed on to the daemon
    bool up_done = false;    // close_notify sent, or the server cannot be written
    for (;;) {
        // Every step is tried until none makes progress; then poll(2) for
        // what the stalled ones wait for.
        bool progress = false;
        short net_events = 0, plain_events = 0;
        if (tls_open && down.empty()) {
            ERR_clear_error();
            int n = SSL_read(ssl, down.bytes.data(), static_cast<int>(kPiece));
            if (n > 0) {
                down.filled(static_cast<std::size_t>(n));
                progress = true;
            } else if (short events = wait_for(ssl, n)) {
                net_events |= events;
            } else {  // close_notify, a close without it, or an error: the end
                tls_open = false;
                progress = true;
            }
        }
        if (!down.empty()) {
            ssize_t n = ::send(plain_fd, down.data(), down.size(), MSG_NOSIGNAL);
            if (n > 0) {
                down.consume(static_cast<std::size_t>(n));
                progress = true;
            } else if (n < 0 && errno == EAGAIN) {
                plain_events |= POLLOUT;
            } else if (n < 0 && errno == EINTR) {
                progress = true;
            } else {
                return;  // the daemon's end is gone: nobody to deliver to
            }
        }
        if (!tls_open && down.empty() && !down_done) {
            ::shutdown(plain_fd, SHUT_WR);
            down_done = true;
            progress = true;
        }
        if (plain_open && up.empty() && !up_done) {
            ssize_t n = ::recv(plain_fd, up.bytes.data(), kPiece, 0);
            if (n > 0) {
                up.filled(static_cast<std::size_t>(n));
                progress = true;
            } else if (n < 0 && errno == EAGAIN) {
                plain_events |= POLLIN;
            } else if (n < 0 && errno == EINTR) {
                progress = true;
            } else {  // the daemon's end (or an error, which ends it as well)
                plain_open = false;
                progress = true;
            }
        }
        if (!up.empty()) {
            ERR_clear_error();
            int n = SSL_write(ssl, up.data(), static_cast<int>(up.size()));
            if (n > 0) {
                up.consume(static_cast<std::size_t>(n));
                progress = true;
            } else if (short events = wait_for(ssl, n)) {
                net_events |= events;
            } else {  // the server cannot be written to: drop what the daemon sends
                up.clear();
                up_done = true;
                progress = true;
            }
        }
        if (!plain_open && up.empty() && !up_done) {
            // Best effort: a close_notify that does not fit now is not sent.
            ERR_clear_error();
            (void)SSL_shutdown(ssl);
            up_done = true;
            progress = true;
        }
        if (down_done && up_done) return;
        if (progress) continue;

        // While the stream's end is still to be passed on, the plain side is
        // watched for POLLHUP (reported whatever the events): the daemon's
        // end closed, so nobody waits for what the server says.
        bool watch_plain = plain_events != 0 || !down_done;
        pollfd fds[2] = {{net_events ? net_fd : -1, net_events, 0},
                         {watch_plain ? plain_fd : -1, plain_events, 0}};
        int ready = ::poll(fds, 2, -1);
        if (ready < 0 && errno != EINTR) return;
        if (ready > 0 && !down_done && (fds[1].revents & (POLLHUP | POLLERR | POLLNVAL))) return;
    }
}

}  // namespace infervisor
