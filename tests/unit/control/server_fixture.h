// ServerFixture: a real ControlServer with a FakeSupervisor on a temporary
// socket, its io_context running on a thread of its own, as in the daemon.
//
// The socket's directory is world-searchable so that a child process with
// uid 65534 can reach it. Touch the FakeSupervisor only through on_loop().
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <thread>

#include "control/control_server.h"
#include "fake_supervisor.h"
#include "support/temp_dir.h"

namespace infervisor::testing {

class ServerFixture {
  public:
    explicit ServerFixture(ControlServerOptions options = {});
    ~ServerFixture();

    const std::filesystem::path& socket_path() const { return path_; }

    // Runs `fn` on the loop thread and waits for it.
    void on_loop(const std::function<void(FakeSupervisor&)>& fn);
    std::size_t connection_count();
    // Polls (on the loop) until pred holds; false if it never did within ~20 s.
    bool eventually(const std::function<bool(FakeSupervisor&, ControlServer&)>& pred);

    // Stops the server and waits for the loop to drain by itself.
    void stop();

  private:
    TempDir dir_;
    std::filesystem::path path_;
    boost::asio::io_context io_;
    FakeSupervisor fake_;
    std::unique_ptr<ControlServer> server_;
    std::thread thread_;
};

// Runs `fn` in a forked child as uid/gid 65534 with the given supplementary
// groups and returns its exit status (fn's return value), or -1.
int run_as_nobody(const std::vector<gid_t>& groups, const std::function<int()>& fn);

inline constexpr uid_t kNobody = 65534;

}  // namespace infervisor::testing
