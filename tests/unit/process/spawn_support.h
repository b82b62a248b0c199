// Helpers for tests that start real processes: pipes, capturing output, and a
// throw-away cgroup2 directory.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "process/exit_status.h"
#include "process/spawn.h"

namespace infervisor::testing {

struct Pipe {
    UniqueFd read;
    UniqueFd write;
};
Pipe make_pipe();  // O_CLOEXEC on both ends

struct Finished {
    std::string output;  // stdout and stderr interleaved
    ExitStatus status;
};

// Spawns `request` with stdout and stderr into one pipe, reads to EOF, reaps.
// Fails the test (and returns nullopt) if the spawn fails.
std::optional<Finished> run_captured(SpawnRequest request);

// Reads a child's output line by line; gives up after `patience` of silence
// (a hung child fails the test instead of hanging it).
class LineReader {
  public:
    explicit LineReader(UniqueFd fd, std::chrono::milliseconds patience = std::chrono::seconds(60))
        : fd_(std::move(fd)), patience_(patience) {}
    // Next line without '\n'; nullopt at EOF or timeout.
    std::optional<std::string> next_line();
    // Reads until a line contains `needle`, returning it.
    std::optional<std::string> line_containing(const std::string& needle);

  private:
    UniqueFd fd_;
    std::chrono::milliseconds patience_;
    std::string buffer_;
};

// The value of $INFERVISOR_EXAMPLE_WORKER, or "" (the test should then skip).
std::string example_worker_path();

// A uniquely named child of this test process's own cgroup2 directory.
// Processes left in it are killed (cgroup.kill) before it is removed.
class TestCgroup {
  public:
    // nullopt, with the reason in *why, when no cgroup can be created here.
    static std::optional<TestCgroup> create(std::string* why);
    TestCgroup(TestCgroup&& other) noexcept;
    ~TestCgroup();

    const std::filesystem::path& path() const { return path_; }
    const std::string& relative() const { return relative_; }  // as in /proc/PID/cgroup "0::" line
    int fd() const { return fd_.get(); }                       // O_DIRECTORY | O_PATH
    void kill_all() const;

  private:
    TestCgroup(std::filesystem::path path, std::string relative, UniqueFd fd);
    std::filesystem::path path_;
    std::string relative_;
    UniqueFd fd_;
};

// The path from the "0::" line of /proc/<pid>/cgroup (pid 0: self).
std::string cgroup2_path_of(pid_t pid);

}  // namespace infervisor::testing
