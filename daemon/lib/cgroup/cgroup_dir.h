// CgroupDir: one cgroup v2 directory and the interface files the daemon uses.
//
// Contract: every operation is a single read or write of a kernel interface
// file under path(); nothing is cached, so a CgroupDir is cheap to copy and
// always reflects the kernel's current state. Works unchanged on a temp-dir
// fixture that holds the same files.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace infervisor {

class CgroupDir {
  public:
    explicit CgroupDir(std::filesystem::path path) : path_(std::move(path)) {}

    const std::filesystem::path& path() const { return path_; }
    // Its path relative to the cgroup2 mount `mount`, with a leading '/', as
    // /proc/PID/cgroup and the GPU readings name it.
    std::string path_in_mount(const std::filesystem::path& mount) const {
        return "/" + path_.lexically_relative(mount).string();
    }
    std::string name() const { return path_.filename().string(); }
    CgroupDir child(const std::string& name) const { return CgroupDir(path_ / name); }
    bool exists() const;

    Result<std::string> read(const std::string& file) const;
    Result<void> write(const std::string& file, const std::string& value) const;

    // Controllers available here (cgroup.controllers).
    Result<std::set<std::string>> controllers() const;
    // Writes "+a +b" to cgroup.subtree_control.
    Result<void> enable_controllers(const std::vector<std::string>& names) const;

    // The pids of cgroup.procs. Lines that are not a positive pid are
    // skipped (a fake or broken cgroupfs listing 0 or -1 must not make a
    // caller signal its process group or every process).
    Result<std::vector<pid_t>> procs() const;
    // Up to `max` pids of cgroup.procs, read line by line (so a cgroup with a
    // huge number of processes costs no more than `max` lines); lines that
    // are not a positive pid are skipped; empty if it cannot be read.
    std::vector<pid_t> procs_up_to(size_t max) const;
    Result<void> move_process(pid_t pid) const;

    // `populated` from cgroup.events: true while any process lives in the subtree.
    Result<bool> populated() const;
    // SIGKILLs every process in the subtree: cgroup.kill (5.14+), or, where it
    // is missing, freeze + kill each listed process + thaw.
    Result<void> kill() const;
    Result<void> set_frozen(bool frozen) const;
    // cgroup.freeze: true once a freeze was asked for (it may still be in
    // progress; frozen() says when it took effect).
    Result<bool> freeze_requested() const;
    // `frozen` from cgroup.events: true once every process of the subtree is
    // frozen (cgroup.freeze takes effect asynchronously).
    Result<bool> frozen() const;

    // A memory.events counter (high, max, oom, oom_kill, oom_group_kill); 0 if absent.
    long long memory_event(const std::string& key) const;

    Result<void> create() const;  // mkdir; an existing directory is an error
    Result<void> remove() const;  // rmdir; fails while populated or with children
    // Removes empty child cgroups depth-first, then this one (a root worker
    // may have made sub-cgroups). Never waits; fails while populated.
    Result<void> remove_tree() const;
    // Names of child cgroups (subdirectories).
    std::vector<std::string> children() const;

    // O_PATH|O_DIRECTORY fd, for clone3(CLONE_INTO_CGROUP).
    Result<UniqueFd> open_dir() const;

  private:
    std::filesystem::path path_;
};

}  // namespace infervisor
