#include "workdir_test_support.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>

namespace infervisor::testing {

namespace fs = std::filesystem;

struct stat lstat_of(const fs::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) < 0) ADD_FAILURE() << "lstat " << path << " failed";
    return st;
}

bool exists_nofollow(const fs::path& path) {
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0;
}

void make_old(const fs::path& path, long seconds_ago) {
    struct timespec t[2];
    t[0].tv_sec = t[1].tv_sec = std::time(nullptr) - seconds_ago;
    t[0].tv_nsec = t[1].tv_nsec = 0;
    // All names are collected first: reading a directory would refresh the
    // access time just set back.
    std::vector<fs::path> all = {path};
    std::error_code ec;
    if (fs::is_directory(fs::symlink_status(path, ec)))
        for (auto it = fs::recursive_directory_iterator(path, ec);
             it != fs::recursive_directory_iterator(); it.increment(ec))
            all.push_back(it->path());
    for (const auto& p : all) ::utimensat(AT_FDCWD, p.c_str(), t, AT_SYMLINK_NOFOLLOW);
}

UniqueFd open_dir(const fs::path& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) ADD_FAILURE() << "open " << path << " failed";
    return fd;
}

ProgramRun run_program(const std::vector<std::string>& argv) {
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) < 0) return {};
    pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(pipe_fds[1], 1);
        ::dup2(pipe_fds[1], 2);
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        ::execv(args[0], args.data());
        ::_exit(127);
    }
    ::close(pipe_fds[1]);
    ProgramRun run;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(pipe_fds[0], buf, sizeof buf)) > 0) run.output.append(buf, size_t(n));
    ::close(pipe_fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFEXITED(status)) run.exit_status = WEXITSTATUS(status);
    return run;
}

std::optional<fs::path> find_systemd_tmpfiles() {
    if (const char* env = std::getenv("INFERVISOR_SYSTEMD_TMPFILES"); env && *env)
        return fs::path(env);
    for (const char* candidate : {"/usr/bin/systemd-tmpfiles", "/bin/systemd-tmpfiles"})
        if (::access(candidate, X_OK) == 0) return fs::path(candidate);
    return std::nullopt;
}

bool running_as_root() { return ::geteuid() == 0; }

int run_in_mount_namespace(const std::function<int()>& body) {
    pid_t pid = ::fork();
    if (pid == 0) {
        if (::unshare(CLONE_NEWNS) < 0) ::_exit(kCannotMount);
        if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) ::_exit(kCannotMount);
        ::_exit(body());
    }
    int status = 0;
    if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

}  // namespace infervisor::testing
