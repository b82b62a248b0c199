// TlsRelay: the daemon's side of infervisor-tls-relay (daemon/tls-relay/),
// the process that speaks TLS for one https exchange, so that OpenSSL is
// never mapped into the daemon (issue 28: every library the mlockall'd
// daemon maps costs locked RAM, and libcrypto's share alone is some 0.4 MiB).
//
// How: the daemon connects the TCP socket itself; start() spawns the relay
// (spawn_process) with that socket as its fd 0 and one end of a socketpair
// as its fd 1, and keeps the other end, plain(): once await_ready() said so,
// the exchange speaks plain HTTP on it and the relay does TLS on the wire
// (probe/tls_relay_protocol.h). The relay runs as nobody/nogroup (65534,
// when the daemon is root; an unprivileged daemon, as in the tests, has
// nothing to drop) with no supplementary groups, no_new_privs, a 64 MiB
// address-space limit, no core dumps, oom_score_adj 1000, none of the
// supervisor capabilities, an empty environment and no fds but its two (and
// /dev/null as stderr): it reads what a worker's server sends.
//
// Lifetime: stop() kills the relay (SIGKILL through its pidfd) and reaps it
// on the event loop once its pidfd says it exited; the TlsRelay keeps itself
// alive until then. The daemon's SIGCHLD handling is untouched: a pidfd
// reaps exactly this child (process/pidfd.h). Should the object go without
// stop() having reaped (the loop destroyed first), its destructor kills and
// reaps synchronously. So a relay never outlives its exchange and never
// stays a zombie. All of it runs on the event loop's thread.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace infervisor {

// The relay program every https exchange runs: Paths::tls_relay, set once by
// the daemon at start-up (before the first exchange) and by tests; the
// default is the installed one (INFERVISOR_TLS_RELAY).
void set_tls_relay_program(std::filesystem::path program);
const std::filesystem::path& tls_relay_program();

inline constexpr uid_t kTlsRelayUid = 65534;  // nobody
inline constexpr gid_t kTlsRelayGid = 65534;  // nogroup
inline constexpr std::uint64_t kTlsRelayMemoryLimit = std::uint64_t{64} << 20;

class TlsRelay : public std::enable_shared_from_this<TlsRelay> {
  public:
    // Spawns tls_relay_program() on `tcp_fd`, a connected TCP socket
    // (borrowed: the relay gets its own copy, and the caller should close
    // its one). The error names the program and why it did not start:
    // "TLS relay /usr/libexec/infervisor/infervisor-tls-relay: No such file
    // or directory".
    static Result<std::shared_ptr<TlsRelay>> start(boost::asio::io_context& io, int tcp_fd);

    // The error is empty once the handshake is done; `early` is what the
    // server sent right after it, before anything was asked (the start of
    // the answer, read with the status line). Otherwise the error is the
    // detail to report: "TLS handshake: <reason>", or what went wrong with
    // the relay itself.
    using Ready = std::function<void(std::string error, std::string early)>;
    // Reads the relay's status line and calls `ready` once, on the loop,
    // unless stop() came first.
    void await_ready(Ready ready);

    boost::asio::local::stream_protocol::socket& plain() { return plain_; }

    // Closes the plain side (pending operations on it end with
    // operation_aborted), kills the relay and reaps it once it has exited.
    // Idempotent.
    void stop();

    TlsRelay(boost::asio::io_context& io, UniqueFd plain, UniqueFd pidfd);
    ~TlsRelay();
    TlsRelay(const TlsRelay&) = delete;
    TlsRelay& operator=(const TlsRelay&) = delete;

  private:
    void on_status_line(const boost::system::error_code& ec, std::size_t line_end);
    void await_exit();

    boost::asio::local::stream_protocol::socket plain_;
    boost::asio::posix::stream_descriptor pidfd_;
    std::string status_;  // the status line and what came with it
    Ready ready_;
    bool stopped_ = false;
    bool reaped_ = false;
};

}  // namespace infervisor
