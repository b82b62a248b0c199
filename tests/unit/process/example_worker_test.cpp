// The bundled example worker, started the way the daemon starts workers.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "process/pidfd.h"
#include "process/spawn.h"
#include "spawn_support.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

using testing::LineReader;

class ExampleWorker : public ::testing::Test {
  protected:
    void SetUp() override {
        path_ = testing::example_worker_path();
        if (path_.empty()) GTEST_SKIP() << "INFERVISOR_EXAMPLE_WORKER is not set";
    }

    // Starts the worker with `args`; its stdout and stderr are read by reader().
    void start(std::vector<std::string> args, std::vector<std::string> environment = {}) {
        SpawnRequest request;
        request.argv = {path_, "--name", "w"};
        request.argv.insert(request.argv.end(), args.begin(), args.end());
        request.environment = std::move(environment);
        testing::Pipe out = testing::make_pipe();
        request.stdout_fd = out.write.get();
        request.stderr_fd = out.write.get();
        auto spawned = spawn_process(request);
        ASSERT_TRUE(spawned.ok()) << spawned.error().message();
        process_ = std::move(spawned).value();
        reader_.emplace(std::move(out.read));
    }

    LineReader& reader() { return *reader_; }
    int pidfd() const { return process_.pidfd.get(); }
    ExitStatus wait() {
        auto status = wait_for_exit(pidfd());
        EXPECT_TRUE(status.ok()) << status.error().message();
        return status.value_or(ExitStatus::exited_with(-1));
    }

    void TearDown() override {
        if (process_.pidfd && reap(pidfd()).ok()) {
            (void)send_signal(pidfd(), SIGKILL);
            (void)wait_for_exit(pidfd());
        }
    }

    std::string path_;
    SpawnedProcess process_;
    std::optional<LineReader> reader_;
};

// A bound datagram socket standing in for the daemon's notify socket.
class NotifyListener {
  public:
    explicit NotifyListener(const std::filesystem::path& path) : path_(path) {
        fd_.reset(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
        sockaddr_un address = {};
        address.sun_family = AF_UNIX;
        std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
        EXPECT_EQ(::bind(fd_.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    }
    std::string environment() const { return "NOTIFY_SOCKET=" + path_.string(); }
    // Next datagram (blocking, up to a minute).
    std::string receive() {
        pollfd p{fd_.get(), POLLIN, 0};
        if (::poll(&p, 1, 60000) != 1) return "<nothing>";
        char buffer[4096];
        ssize_t n = ::recv(fd_.get(), buffer, sizeof buffer, 0);
        return n < 0 ? "<error>" : std::string(buffer, static_cast<size_t>(n));
    }
    std::string receive_containing(const std::string& needle) {
        for (int i = 0; i < 1000; ++i) {
            std::string message = receive();
            if (message.find(needle) != std::string::npos || message[0] == '<') return message;
        }
        return "<not seen>";
    }

  private:
    std::filesystem::path path_;
    UniqueFd fd_;
};

TEST_F(ExampleWorker, CrashesWithTheGivenExitCode) {
    start({"--crash-after-ms", "20", "--exit-code", "7"});
    EXPECT_EQ(wait(), ExitStatus::exited_with(7));
}

TEST_F(ExampleWorker, AbortsWhenAsked) {
    start({"--crash-after-ms", "20", "--abort"});
    ExitStatus status = wait();
    EXPECT_EQ(status.kind, ExitStatus::Kind::signaled);
    EXPECT_EQ(status.signal, SIGABRT);
}

TEST_F(ExampleWorker, StopsOnSigterm) {
    start({"--serve-interval-ms", "20"});
    ASSERT_TRUE(reader().line_containing("w: served request 1 (rss="));
    ASSERT_TRUE(send_signal(pidfd(), SIGTERM).ok());
    EXPECT_TRUE(reader().line_containing("w: stopping"));
    EXPECT_EQ(wait(), ExitStatus::exited_with(0));
}

// An ignored SIGTERM is discarded when sent; the checkpoint signal sent after
// it is answered, which proves the worker outlived the SIGTERM.
TEST_F(ExampleWorker, IgnoresSigtermWhenAsked) {
    start({"--ignore-sigterm", "--serve-interval-ms", "20"});
    ASSERT_TRUE(reader().line_containing("served request 1"));
    ASSERT_TRUE(send_signal(pidfd(), SIGTERM).ok());
    ASSERT_TRUE(send_signal(pidfd(), SIGUSR1).ok());
    EXPECT_TRUE(reader().line_containing("checkpoint requested"));
    EXPECT_TRUE(reader().line_containing("served request"));
    auto still_running = reap(pidfd());
    ASSERT_TRUE(still_running.ok());
    EXPECT_FALSE(still_running->has_value());
    ASSERT_TRUE(send_signal(pidfd(), SIGKILL).ok());
    EXPECT_EQ(wait(), ExitStatus::killed_by(SIGKILL));
}

TEST_F(ExampleWorker, SpeaksTheNotifyProtocol) {
    testing::TempDir dir;
    NotifyListener listener(dir.path() / "notify");
    start({"--serve-interval-ms", "20", "--model-mb", "1"},
          {listener.environment(), "WATCHDOG_USEC=40000"});
    EXPECT_EQ(listener.receive_containing("READY=1"), "READY=1\nSTATUS=serving");
    EXPECT_EQ(listener.receive_containing("STATUS=served"), "STATUS=served 1 requests");
    EXPECT_EQ(listener.receive_containing("WATCHDOG"), "WATCHDOG=1");
    ASSERT_TRUE(send_signal(pidfd(), SIGTERM).ok());
    EXPECT_EQ(listener.receive_containing("STOPPING"), "STOPPING=1");
    EXPECT_EQ(wait(), ExitStatus::exited_with(0));
}

TEST_F(ExampleWorker, WritesACheckpointOnTheCheckpointSignalAndResumesFromIt) {
    testing::TempDir dir;
    NotifyListener listener(dir.path() / "notify");
    start({"--serve-interval-ms", "20", "--checkpoint-signal", "SIGUSR2"},
          {listener.environment(), "INFERVISOR_CHECKPOINT_DIR=" + dir.path().string()});
    ASSERT_TRUE(reader().line_containing("served request 2"));
    ASSERT_TRUE(send_signal(pidfd(), SIGUSR2).ok());
    EXPECT_EQ(listener.receive_containing("CHECKPOINT"), "CHECKPOINT=1");
    ASSERT_TRUE(reader().line_containing("checkpoint written to"));
    std::string checkpoint = testing::slurp(dir.path() / "checkpoint");
    EXPECT_EQ(checkpoint.rfind("worker=w\nserved=", 0), 0u) << checkpoint;
    ASSERT_TRUE(send_signal(pidfd(), SIGTERM).ok());
    EXPECT_EQ(wait(), ExitStatus::exited_with(0));

    start({"--crash-after-ms", "0"}, {"INFERVISOR_RESTORE_FROM=" + dir.path().string()});
    auto resumed = reader().line_containing("resumed from");
    ASSERT_TRUE(resumed);
    EXPECT_NE(resumed->find("w: resumed from " + dir.path().string() + " (served "),
              std::string::npos)
        << *resumed;
    EXPECT_EQ(wait(), ExitStatus::exited_with(1));
}

TEST_F(ExampleWorker, ExitsWhenItsTempFileVanishes) {
    testing::TempDir dir;
    start({"--serve-interval-ms", "20", "--tmp-file", "model.bin"},
          {"TMPDIR=" + dir.path().string()});
    ASSERT_TRUE(reader().line_containing("served request 1"));
    ASSERT_TRUE(std::filesystem::exists(dir.path() / "model.bin"));
    std::filesystem::remove(dir.path() / "model.bin");
    auto error = reader().line_containing("vanished");
    ASSERT_TRUE(error);
    EXPECT_EQ(*error, "w: error: model file " + (dir.path() / "model.bin").string() +
                          " vanished: No such file or directory");
    EXPECT_EQ(wait(), ExitStatus::exited_with(66));
}

long leaked_mib(const std::optional<std::string>& line) {
    if (!line) return -1;
    return std::stol(line->substr(line->find("leaked ") + 7));
}

TEST_F(ExampleWorker, LeaksSteadily) {
    start({"--leak-mb-per-s", "20", "--serve-interval-ms", "100000"});
    long first = leaked_mib(reader().line_containing("MiB so far"));
    long second = leaked_mib(reader().line_containing("MiB so far"));
    EXPECT_GE(first, 1);
    EXPECT_GT(second, first);
    ASSERT_TRUE(send_signal(pidfd(), SIGKILL).ok());
    EXPECT_EQ(wait(), ExitStatus::killed_by(SIGKILL));
}

// The benchmark's spike: SIGUSR2 allocates the burst at once, stamped
// before and after (CLOCK_MONOTONIC), relative to $INFERVISOR_WORKDIR.
TEST_F(ExampleWorker, BurstsOnSigusr2AndStampsStartAndEnd) {
    testing::TempDir dir;
    start({"--serve-interval-ms", "20", "--touch-model", "--model-mb", "2", "--burst-mb", "4",
           "--burst-stamp", "stamp"},
          {"INFERVISOR_WORKDIR=" + dir.path().string()});
    ASSERT_TRUE(reader().line_containing("served request 2"));
    ASSERT_TRUE(send_signal(pidfd(), SIGUSR2).ok());
    ASSERT_TRUE(reader().line_containing("burst of 4 MiB"));
    std::istringstream stamp(testing::slurp(dir.path() / "stamp"));
    std::string start_word, end_word;
    long long start_ns = -1, end_ns = -1;
    stamp >> start_word >> start_ns >> end_word >> end_ns;
    EXPECT_EQ(start_word, "start");
    EXPECT_EQ(end_word, "end");
    EXPECT_GT(start_ns, 0);
    EXPECT_GE(end_ns, start_ns);
    EXPECT_TRUE(reader().line_containing("served request"));  // still serving after it
    ASSERT_TRUE(send_signal(pidfd(), SIGTERM).ok());
    EXPECT_EQ(wait(), ExitStatus::exited_with(0));
}

TEST_F(ExampleWorker, RejectsABurstStampWithoutABurst) {
    start({"--burst-stamp", "stamp"});
    EXPECT_TRUE(reader().line_containing("--burst-stamp needs --burst-mb"));
    EXPECT_EQ(wait(), ExitStatus::exited_with(2));
}

TEST_F(ExampleWorker, RejectsUnknownOptions) {
    start({"--frobnicate"});
    EXPECT_TRUE(reader().line_containing("unknown option '--frobnicate'"));
    EXPECT_EQ(wait(), ExitStatus::exited_with(2));
}

}  // namespace
}  // namespace infervisor
