#include "checkpoint/criu_preflight.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "checkpoint/criu_command.h"

namespace infervisor {

namespace fs = std::filesystem;

bool is_gpu_device(const std::string& path) {
    return path.starts_with("/dev/nvidia") || path.starts_with("/dev/dri/") || path == "/dev/kfd";
}

std::optional<std::string> criu_obstacle(const CriuView& view) {
    if (!view.truncated.empty()) return "too much to inspect: " + view.truncated;
    for (const auto& p : view.processes) {
        if (p.seccomp != 0 && view.own_seccomp != 0)
            return "pid " + std::to_string(p.pid) +
                   " is under a seccomp filter and so is infervisord (criu, its child, cannot "
                   "suspend the worker's filter to dump it); clear the unit's seccomp "
                   "settings with the drop-in /usr/share/doc/infervisor/examples/criu.conf "
                   "(see infervisor.yaml(5))";
        for (const auto& [fd, target] : p.fds) {
            if (is_gpu_device(target))
                return "pid " + std::to_string(p.pid) + " has the GPU device " + target +
                       " open (fd " + std::to_string(fd) + "); criu cannot dump GPU state";
            auto ino = anon_inode_of(target, "socket");
            if (ino && view.established_tcp.contains(*ino))
                return "pid " + std::to_string(p.pid) + " has an established TCP connection (fd " +
                       std::to_string(fd) +
                       "); criu does not dump established connections without "
                       "--tcp-established, which infervisord does not use";
        }
        for (const auto& path : p.mapped_devices)
            if (is_gpu_device(path))
                return "pid " + std::to_string(p.pid) + " has the GPU device " + path +
                       " mapped; criu cannot dump GPU state";
    }
    return std::nullopt;
}

int parse_seccomp_mode(const std::string& status) {
    std::istringstream in(status);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("Seccomp:", 0) == 0) return std::atoi(line.c_str() + 8);
    return 0;
}

bool parse_established_tcp(const std::string& text, std::set<unsigned long long>& out,
                           size_t max_lines) {
    std::istringstream in(text);
    std::string line;
    size_t lines = 0;
    while (std::getline(in, line)) {
        if (++lines > max_lines) return false;
        // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...
        std::istringstream fields(line);
        std::string sl, local, remote, st, queues, timer, retr, uid, timeout, inode;
        if (!(fields >> sl >> local >> remote >> st >> queues >> timer >> retr >> uid >> timeout >>
              inode))
            continue;
        if (st != "01") continue;  // TCP_ESTABLISHED
        if (inode.empty() || inode.find_first_not_of("0123456789") != std::string::npos ||
            inode.size() > 20)
            continue;
        out.insert(std::stoull(inode));
    }
    return true;
}

std::optional<std::string> mapped_path_of(const std::string& line) {
    // address perms offset dev inode [path]; the path may hold spaces.
    std::istringstream fields(line);
    std::string address, perms, offset, dev, inode;
    if (!(fields >> address >> perms >> offset >> dev >> inode)) return std::nullopt;
    std::string rest;
    std::getline(fields, rest);
    size_t start = rest.find_first_not_of(' ');
    if (start == std::string::npos || rest[start] != '/') return std::nullopt;
    return rest.substr(start);
}

namespace {

// Reads `path` line by line into `each` (return false to stop); false when
// it has more than `max_lines` lines. A missing file is empty.
template <class Each>
bool for_each_line(const fs::path& path, size_t max_lines, Each each) {
    std::ifstream in(path);
    std::string line;
    size_t n = 0;
    while (std::getline(in, line)) {
        if (++n > max_lines) return false;
        each(line);
    }
    return true;
}

std::string read_capped(const fs::path& path, size_t max_lines, bool& over) {
    std::string text;
    over = !for_each_line(path, max_lines, [&](const std::string& line) {
        text += line;
        text += '\n';
    });
    return text;
}

}  // namespace

Result<CriuView> read_criu_view(const fs::path& procfs, const std::vector<pid_t>& pids) {
    CriuView view;
    if (pids.size() > kMaxCriuProcesses) {
        view.truncated = std::to_string(pids.size()) + " processes (at most " +
                         std::to_string(kMaxCriuProcesses) + ")";
        return view;
    }
    for (pid_t pid : pids) {
        fs::path dir = procfs / std::to_string(pid);
        CriuProcessView p;
        p.pid = pid;
        DIR* fds = ::opendir((dir / "fd").c_str());
        if (!fds) continue;  // exited meanwhile
        while (dirent* e = ::readdir(fds)) {
            if (e->d_name[0] == '.') continue;
            if (p.fds.size() >= kMaxCriuFds) {
                view.truncated = "pid " + std::to_string(pid) + " has more than " +
                                 std::to_string(kMaxCriuFds) + " open files";
                break;
            }
            char target[4096];
            ssize_t n = ::readlinkat(::dirfd(fds), e->d_name, target, sizeof target - 1);
            if (n < 0) continue;
            p.fds.emplace_back(std::atoi(e->d_name), std::string(target, size_t(n)));
        }
        ::closedir(fds);
        if (!view.truncated.empty()) return view;
        std::sort(p.fds.begin(), p.fds.end());
        bool status_over = false;
        p.seccomp = parse_seccomp_mode(read_capped(dir / "status", 256, status_over));
        bool maps_ok = for_each_line(dir / "maps", kMaxCriuMapLines, [&](const std::string& line) {
            auto path = mapped_path_of(line);
            if (path && path->starts_with("/dev/") && p.mapped_devices.size() < 64)
                p.mapped_devices.push_back(*path);
        });
        if (!maps_ok) {
            view.truncated = "pid " + std::to_string(pid) + " has more than " +
                             std::to_string(kMaxCriuMapLines) + " mappings";
            return view;
        }
        view.processes.push_back(std::move(p));
    }
    bool own_over = false;
    view.own_seccomp = parse_seccomp_mode(read_capped(procfs / "self" / "status", 256, own_over));
    if (!view.processes.empty()) {
        fs::path net = procfs / std::to_string(view.processes.front().pid) / "net";
        for (const char* table : {"tcp", "tcp6"}) {
            bool over = false;
            std::string text = read_capped(net / table, kMaxCriuTcpLines, over);
            if (over || !parse_established_tcp(text, view.established_tcp)) {
                view.truncated = std::string("/proc/PID/net/") + table + " has more than " +
                                 std::to_string(kMaxCriuTcpLines) + " lines";
                return view;
            }
        }
    }
    return view;
}

}  // namespace infervisor
