// The network probes: a TCP connect, and an HTTP GET through the daemon's
// one HTTP client (probe/http_exchange.h), over TLS for scheme https (one
// request, "Connection: close", only the status line and headers read, at
// most kMaxHttpHead bytes of them; the body is never read).
//
// Contract: see ProbeAttempt. `spec.host` is an IP literal (validated with
// the configuration), so nothing here resolves names. The deadline covers
// the whole attempt: connect, TLS handshake, send and read.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>

#include "base/clock.h"
#include "probe/probe_attempt.h"
#include "probe/probe_spec.h"

namespace infervisor {

// kind tcp or http; passes on a connect (tcp) or a status within
// [status_min, status_max] and a complete header block (http).
std::shared_ptr<ProbeAttempt> start_socket_probe(boost::asio::io_context& io, const ProbeSpec& spec,
                                                 Duration timeout, ProbeDone done);

}  // namespace infervisor
