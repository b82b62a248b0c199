// HttpExchange: one bounded HTTP/1.1 request and its answer on the event loop
// — the one HTTP client of the daemon. The http/https probes, the engine
// metrics scrape and the engine adapters (llama-server's slots, vLLM's sleep)
// all go through it.
//
// Contract: `done` is called exactly once, on the event loop thread, at the
// latest when the deadline passes (it covers connect, TLS handshake, send and
// the whole read), and never from within start_http_exchange() — unless
// cancel() came first, after which it is never called. One request per
// connection ("Connection: close"). The answer costs bounded memory: at most
// kMaxHttpHead bytes of status line and headers, and at most
// HttpRequest::max_body bytes of body (Content-Length, chunked, or up to the
// end of the connection); a longer answer is an error, not a truncation.
// `host` is an IP literal: nothing here resolves names (it would block the
// loop). TLS is 1.2 or later without certificate verification (a local
// server is asked whether it answers, not who it is), spoken by a short-lived
// unprivileged relay process on the connection the exchange made
// (probe/tls_relay.h), never in the daemon: the exchange speaks plain HTTP
// with the relay, which the end of the exchange (its answer, its deadline, a
// cancel()) kills and reaps.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"

namespace infervisor {

struct HttpRequest {
    std::string method = "GET";  // GET or POST
    std::string host = "127.0.0.1";
    int64_t port = 0;
    bool tls = false;
    std::string target = "/";  // path and query, e.g. "/slots/0?action=save"
    // Extra header lines, e.g. {"Authorization", "Bearer ..."}; Host,
    // Content-Length, Connection and User-Agent are the exchange's own.
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;  // sent with Content-Length (POST: even when empty)
    // Read at most this many bytes of the body; 0: the body is not read (the
    // exchange ends with a complete header block, as a health probe needs).
    size_t max_body = 0;
};

struct HttpAnswer {
    bool complete = false;  // a complete answer arrived (any status)
    int status = 0;         // once the status line was read
    std::string error;      // !complete: what went wrong, in words ("connect: Connection refused")
    std::string content_type;
    std::string body;  // the whole body (de-chunked) when max_body > 0
};

using HttpDone = std::function<void(HttpAnswer)>;

class HttpExchange {
  public:
    virtual ~HttpExchange() = default;
    virtual void cancel() = 0;
};

std::shared_ptr<HttpExchange> start_http_exchange(boost::asio::io_context& io, HttpRequest request,
                                                  Duration timeout, HttpDone done);

}  // namespace infervisor
