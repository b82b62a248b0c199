// What infervisor-tls-relay (daemon/tls-relay/) and the daemon's side of it
// (probe/tls_relay.h) agree on. Header-only: the relay links nothing of the
// daemon's libraries.
//
// The relay is started with the connected TCP socket as its fd 0 and one end
// of a socketpair (the "plain side") as its fd 1; fd 2 is /dev/null. It does
// the TLS client handshake on fd 0 and writes exactly one status line to fd 1:
//
//   "OK\n"                        the handshake is done; from here on every
//                                 byte on the plain side is the connection's
//                                 plaintext, both ways, until its end
//   "TLS handshake: <reason>\n"   the handshake failed; the relay exits 1
//   "TLS relay: <problem>\n"      the relay could not start its work (bad
//                                 fds, no TLS context); it exits 2
//
// A status line is at most kTlsRelayMaxStatusLine bytes with its newline,
// printable ASCII before it. The end of the TLS stream (close_notify, or the
// peer closing without one, which many servers do) reaches the plain side as
// its end (SHUT_WR); so does a TLS error after the handshake: the HTTP
// framing (Content-Length, the last chunk) says whether the answer is whole,
// as it did when the daemon spoke TLS itself.
#pragma once

#include <cstddef>

namespace infervisor {

inline constexpr char kTlsRelayReady[] = "OK";
inline constexpr std::size_t kTlsRelayMaxStatusLine = 256;
inline constexpr int kTlsRelayPlainFd = 1;
inline constexpr int kTlsRelayNetFd = 0;

}  // namespace infervisor
