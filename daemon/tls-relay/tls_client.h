// The relay's TLS client: the settings the daemon's https exchanges have
// always used, and the handshake on a non-blocking socket.
#pragma once

#include <openssl/ssl.h>

#include <string>

namespace infervisor {

// TLS 1.2 or later, OpenSSL's bug workarounds (SSL_OP_ALL), no compression,
// no certificate verification (a local server is asked whether it answers,
// not who it is), no SNI (the host is an IP literal). nullptr on failure.
SSL_CTX* make_tls_client_context();

// What failed, in the words the daemon has always reported after
// "TLS handshake: " (Boost.Asio's for the same errors): OpenSSL's reason
// ("wrong version number"), the system's ("Connection reset by peer"), or
// "stream truncated" for a peer that closed. `saved_errno`: errno right
// after the failed call.
std::string tls_error_text(SSL* ssl, int result, int saved_errno);

// The client handshake on `net_fd` (non-blocking, already SSL_set_fd'ed),
// waiting with poll(2) as long as it takes: the daemon's deadline bounds it
// by killing this process. Watches `plain_fd` too: once the daemon has
// closed its end nobody waits for the answer, and the handshake ends as if
// it failed (`error` empty). Returns true once the handshake is done.
bool tls_handshake(SSL* ssl, int net_fd, int plain_fd, std::string& error);

}  // namespace infervisor
