// UserDbServer: serves the dynamic users (process/dynamic_users.h) on
// systemd's userdb Varlink interface, at /run/systemd/userdb/
// io.infervisor.DynamicUser, where nss-systemd (and userdbctl) look for
// user databases: with libnss-systemd and "systemd" in nsswitch.conf's
// passwd and group lines, `ps`, `ls -l` and `id` show infervisor-w-NAME.
// Without them nothing breaks; the numbers show instead.
//
// Anyone may connect (the socket is 0666, as systemd's own are) and the
// answers hold nothing secret. Every client is bounded: at most
// kMaxConnections at once (more are closed at once), a message of at most
// 64 KiB, calls answered one at a time, and a connection idle for 10 s (or
// not reading its replies that long) is closed. Answers read the store's
// directory (one small file per worker). Nothing blocks the event loop.
//
// The daemon's own NSS lookups must not ask this server (it would wait for
// itself): run_daemon sets SYSTEMD_BYPASS_USERDB=io.infervisor.DynamicUser,
// which nss-systemd honours.
#pragma once

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <memory>

#include "base/paths.h"
#include "base/result.h"
#include "services/service.h"

namespace infervisor {

// <runtime_dir>/../systemd/userdb/io.infervisor.DynamicUser: for the
// default runtime dir /run/infervisor, where systemd looks; a test's runtime
// dir has no systemd/userdb beside it, so no server starts there.
std::filesystem::path userdb_socket_path(const Paths& paths);

class UserDbServer final : public Service {
  public:
    static constexpr size_t kMaxConnections = 64;

    UserDbServer(boost::asio::io_context& io, Paths paths);
    ~UserDbServer();
    UserDbServer(const UserDbServer&) = delete;
    UserDbServer& operator=(const UserDbServer&) = delete;

    std::string_view name() const override { return "userdb"; }
    void configure(const Config&) override {}  // nothing of it is configured
    // listen(); a host without systemd's userdb directory is logged (info).
    void start() override;
    // Binds the socket (its parent must exist: no userdb directory, no
    // systemd userdb on this host) and starts accepting.
    Result<void> listen();
    // Closes the socket and every connection; idempotent. listen() may follow.
    void stop() override;

    struct State;

  private:
    boost::asio::io_context& io_;
    Paths paths_;
    std::shared_ptr<State> state_;  // a fresh one for each listen() after a stop()
};

}  // namespace infervisor
