// BusyCgroup: a test fixture owning a child of the real cgroup2 hierarchy
// (/sys/fs/cgroup/unified here) into which it can put busy-looping children.
// Skips when there is no cgroup2 or the directory cannot be made; kills the
// children and removes the directory afterwards.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/file_io.h"

namespace infervisor::testing {

class BusyCgroup : public ::testing::Test {
  protected:
    void SetUp() override {
        const std::filesystem::path root = "/sys/fs/cgroup/unified";
        if (!std::filesystem::exists(root / "cgroup.procs"))
            GTEST_SKIP() << "no cgroup2 at " << root;
        dir_ = root / ("infervisor-policy-test." + std::to_string(::getpid()));
        std::error_code ec;
        if (!std::filesystem::create_directory(dir_, ec)) {
            dir_.clear();
            GTEST_SKIP() << "cannot create a cgroup: " << ec.message();
        }
    }

    void TearDown() override {
        for (pid_t pid : spinners_) ::kill(pid, SIGKILL);
        for (pid_t pid : spinners_) ::waitpid(pid, nullptr, 0);
        // The cgroup empties asynchronously after its last task is reaped.
        if (!dir_.empty())
            for (int i = 0; i < 500 && ::rmdir(dir_.c_str()) != 0; ++i) ::usleep(10'000);
    }

    const std::filesystem::path& dir() const { return dir_; }

    // More processes than CPUs, so that they queue for CPU.
    static int busy_count() { return static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)) + 2; }

    void spin_inside(int count) {
        for (int i = 0; i < count; ++i) {
            pid_t pid = ::fork();
            if (pid == 0) {
                for (;;) {
                }
            }
            ASSERT_GT(pid, 0);
            spinners_.push_back(pid);
            ASSERT_TRUE(write_file(dir_ / "cgroup.procs", std::to_string(pid)).ok());
        }
    }

  private:
    std::filesystem::path dir_;
    std::vector<pid_t> spinners_;
};

}  // namespace infervisor::testing
