// The relay's pump: copies bytes between an established TLS connection and
// the plain side (the daemon's end of a socketpair), both ways at once.
//
// Contract: returns once both directions are done, or once the daemon's end
// is gone. Server to daemon is done when the TLS stream has ended (its
// close_notify, the peer closing without one, or a TLS error: each is passed
// on as the plain side's end, shutdown(SHUT_WR)) and everything read before
// it was delivered. Daemon to server is done when the daemon's side has
// ended (close_notify sent after everything it wrote) or the server can no
// longer be written to (what the daemon sends after that is dropped). Both
// fds are non-blocking. Memory is bounded: one 16 KiB buffer each way, plus
// OpenSSL's own record buffers; a side that does not read stops the other
// from being read (back-pressure), never a growing queue. No timeout of its
// own: the daemon kills the relay at its exchange's deadline.
#pragma once

#include <openssl/ssl.h>

namespace infervisor {

void pump_tls(SSL* ssl, int net_fd, int plain_fd);

}  // namespace infervisor
