#include "spawn_support.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "process/pidfd.h"

namespace infervisor::testing {

Pipe make_pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) < 0) ADD_FAILURE() << "pipe2: " << std::strerror(errno);
    return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

std::optional<Finished> run_captured(SpawnRequest request) {
    Pipe pipe = make_pipe();
    request.stdout_fd = pipe.write.get();
    request.stderr_fd = pipe.write.get();
    auto spawned = spawn_process(request);
    pipe.write.reset();
    if (!spawned) {
        ADD_FAILURE() << spawned.error().message();
        return std::nullopt;
    }
    Finished finished;
    LineReader reader(std::move(pipe.read));
    while (auto line = reader.next_line()) finished.output += *line + "\n";
    auto status = wait_for_exit(spawned->pidfd.get());
    if (!status) {
        ADD_FAILURE() << status.error().message();
        return std::nullopt;
    }
    finished.status = *status;
    return finished;
}

std::optional<std::string> LineReader::next_line() {
    for (;;) {
        size_t eol = buffer_.find('\n');
        if (eol != std::string::npos) {
            std::string line = buffer_.substr(0, eol);
            buffer_.erase(0, eol + 1);
            return line;
        }
        pollfd p{fd_.get(), POLLIN, 0};
        int ready = ::poll(&p, 1, static_cast<int>(patience_.count()));
        if (ready == 0) {
            ADD_FAILURE() << "no output for " << patience_.count() << " ms; have '" << buffer_
                          << "'";
            return std::nullopt;
        }
        char chunk[4096];
        ssize_t n = ::read(fd_.get(), chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (buffer_.empty()) return std::nullopt;
            return std::exchange(buffer_, std::string());
        }
        buffer_.append(chunk, static_cast<size_t>(n));
    }
}

std::optional<std::string> LineReader::line_containing(const std::string& needle) {
    while (auto line = next_line()) {
        if (line->find(needle) != std::string::npos) return line;
    }
    return std::nullopt;
}

std::string example_worker_path() {
    const char* path = std::getenv("INFERVISOR_EXAMPLE_WORKER");
    return path ? path : "";
}

std::string cgroup2_path_of(pid_t pid) {
    std::ifstream in(pid == 0 ? "/proc/self/cgroup" : "/proc/" + std::to_string(pid) + "/cgroup");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("0::", 0) == 0) return line.substr(3);
    }
    return "";
}

namespace {

std::optional<std::filesystem::path> cgroup2_mount() {
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    while (std::getline(in, line)) {
        // "... mount-point options - fstype source super-options"
        size_t dash = line.find(" - ");
        if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
        std::istringstream fields(line.substr(0, dash));
        std::string id, parent, devno, root, mount_point;
        fields >> id >> parent >> devno >> root >> mount_point;
        return std::filesystem::path(mount_point);
    }
    return std::nullopt;
}

std::string unique_name() {
    std::random_device random;
    return "infervisor-test-" + std::to_string(::getpid()) + "-" +
           std::to_string(random() % 1000000);
}

}  // namespace

std::optional<TestCgroup> TestCgroup::create(std::string* why) {
    auto mount = cgroup2_mount();
    if (!mount) {
        *why = "no cgroup2 hierarchy in /proc/self/mountinfo";
        return std::nullopt;
    }
    std::string own = cgroup2_path_of(0);
    if (own.empty()) {
        *why = "no 0:: line in /proc/self/cgroup";
        return std::nullopt;
    }
    std::string relative = (own == "/" ? "" : own) + "/" + unique_name();
    std::filesystem::path path = mount->string() + relative;
    if (::mkdir(path.c_str(), 0755) < 0) {
        *why = "cannot create a test cgroup: mkdir " + path.string() + ": " + std::strerror(errno);
        return std::nullopt;
    }
    UniqueFd fd(::open(path.c_str(), O_DIRECTORY | O_PATH | O_CLOEXEC));
    if (!fd) {
        *why = "open " + path.string() + ": " + std::strerror(errno);
        ::rmdir(path.c_str());
        return std::nullopt;
    }
    return TestCgroup(path, relative, std::move(fd));
}

TestCgroup::TestCgroup(std::filesystem::path path, std::string relative, UniqueFd fd)
    : path_(std::move(path)), relative_(std::move(relative)), fd_(std::move(fd)) {}

TestCgroup::TestCgroup(TestCgroup&& other) noexcept
    : path_(std::exchange(other.path_, {})),
      relative_(std::move(other.relative_)),
      fd_(std::move(other.fd_)) {}

void TestCgroup::kill_all() const { std::ofstream(path_ / "cgroup.kill") << "1"; }

TestCgroup::~TestCgroup() {
    if (path_.empty()) return;
    fd_.reset();
    for (int attempt = 0; attempt < 1000; ++attempt) {
        if (::rmdir(path_.c_str()) == 0 || errno != EBUSY) return;
        kill_all();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "could not remove test cgroup " << path_;
}

}  // namespace infervisor::testing
