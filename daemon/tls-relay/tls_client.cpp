#include "tls_client.h"

#include <openssl/err.h>
#include <poll.h>

#include <cerrno>
#include <cstring>

namespace infervisor {

SSL_CTX* make_tls_client_context() {
    SSL_CTX* context = SSL_CTX_new(TLS_client_method());
    if (!context) return nullptr;
    if (SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) != 1) {
        SSL_CTX_free(context);
        return nullptr;
    }
    // As boost::asio::ssl::context(tls_client) with default_workarounds,
    // no_sslv2, no_sslv3, no_tlsv1 and no_tlsv1_1 set it up, which is what
    // the daemon used before the relay.
    SSL_CTX_set_options(context, SSL_OP_ALL | SSL_OP_NO_SSLv2 | SSL_OP_NO_SSLv3 | SSL_OP_NO_TLSv1 |
                                     SSL_OP_NO_TLSv1_1 | SSL_OP_NO_COMPRESSION);
    SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nullptr);
    // Writes of part of a buffer (the pump keeps the rest), and buffers
    // given back while idle: the relay's memory is bounded and small.
    SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                                  SSL_MODE_RELEASE_BUFFERS);
    return context;
}

std::string tls_error_text(SSL* ssl, int result, int saved_errno) {
    int kind = SSL_get_error(ssl, result);
    unsigned long error = ERR_get_error();
    switch (kind) {
        case SSL_ERROR_SSL: {
            // OpenSSL 3 says so for a peer that closed mid-record; Asio
            // (reading the socket itself) called it a truncated stream.
            if (ERR_GET_REASON(error) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
                return "stream truncated";
            const char* reason = ERR_reason_error_string(error);
            return reason ? reason : "TLS error " + std::to_string(error);
        }
        case SSL_ERROR_SYSCALL:
            if (error != 0) {
                const char* reason = ERR_reason_error_string(error);
                if (reason) return reason;
            }
            return saved_errno != 0 ? std::strerror(saved_errno) : "stream truncated";
        case SSL_ERROR_ZERO_RETURN:
            return "End of file";
        default:
            return "TLS error (SSL_get_error " + std::to_string(kind) + ")";
    }
}

bool tls_handshake(SSL* ssl, int net_fd, int plain_fd, std::string& error) {
    for (;;) {
        ERR_clear_error();
        errno = 0;
        int result = SSL_connect(ssl);
        int saved_errno = errno;
        if (result == 1) return true;
        short wanted;
        switch (SSL_get_error(ssl, result)) {
            case SSL_ERROR_WANT_READ:
                wanted = POLLIN;
                break;
            case SSL_ERROR_WANT_WRITE:
                wanted = POLLOUT;
                break;
            default:
                error = tls_error_text(ssl, result, saved_errno);
                return false;
        }
        // events 0 on the plain side: only its POLLHUP (the daemon's end
        // closed) is of interest here.
        pollfd fds[2] = {{net_fd, wanted, 0}, {plain_fd, 0, 0}};
        int ready;
        do {
            ready = ::poll(fds, 2, -1);
        } while (ready < 0 && errno == EINTR);
        if (ready < 0) {
            error = std::string("poll: ") + std::strerror(errno);
            return false;
        }
        if (fds[1].revents & (POLLHUP | POLLERR | POLLNVAL)) {
            error.clear();
            return false;
        }
    }
}

}  // namespace infervisor
