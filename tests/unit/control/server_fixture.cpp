#include "server_fixture.h"

#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <chrono>
#include <future>
#include <stdexcept>

namespace infervisor::testing {

ServerFixture::ServerFixture(ControlServerOptions options) {
    ::chmod(dir_.path().c_str(), 0755);
    path_ = dir_.path() / "run" / "io.infervisor";
    options.path = path_;
    fake_.add_worker("llama", "running").main_pid = 4242;
    fake_.add_worker("whisper", "stopped");
    server_ = std::make_unique<ControlServer>(io_, fake_, options);
    if (auto started = server_->start(); !started)
        throw std::runtime_error(started.error().message());
    thread_ = std::thread([this] { io_.run(); });
}

ServerFixture::~ServerFixture() { stop(); }

void ServerFixture::stop() {
    if (!thread_.joinable()) return;
    boost::asio::post(io_, [this] { server_->stop(); });
    thread_.join();
}

void ServerFixture::on_loop(const std::function<void(FakeSupervisor&)>& fn) {
    std::promise<void> done;
    boost::asio::post(io_, [&] {
        fn(fake_);
        done.set_value();
    });
    done.get_future().wait();
}

std::size_t ServerFixture::connection_count() {
    std::size_t count = 0;
    std::promise<void> done;
    boost::asio::post(io_, [&] {
        count = server_->connection_count();
        done.set_value();
    });
    done.get_future().wait();
    return count;
}

bool ServerFixture::eventually(const std::function<bool(FakeSupervisor&, ControlServer&)>& pred) {
    for (int i = 0; i < 2000; ++i) {
        bool holds = false;
        std::promise<void> done;
        boost::asio::post(io_, [&] {
            holds = pred(fake_, *server_);
            done.set_value();
        });
        done.get_future().wait();
        if (holds) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

int run_as_nobody(const std::vector<gid_t>& groups, const std::function<int()>& fn) {
    pid_t pid = ::fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (::setgroups(groups.size(), groups.data()) != 0 ||
            ::setresgid(kNobody, kNobody, kNobody) != 0 ||
            ::setresuid(kNobody, kNobody, kNobody) != 0)
            ::_exit(120);
        ::_exit(fn());
    }
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

}  // namespace infervisor::testing
