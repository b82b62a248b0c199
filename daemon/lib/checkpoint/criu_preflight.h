// What criu(8) cannot dump, found before it is asked to: a clear reason
// instead of a failed (or, for a GPU, a hanging or corrupting) dump.
//
//  - established TCP connections: criu needs --tcp-established and a network
//    lock to take them, which infervisord does not do (a restored server could
//    not keep its peers' connections anyway); a listening socket is fine;
//  - GPU device files (/dev/nvidia*, /dev/dri/*, /dev/kfd) open or mapped:
//    criu 3.17 has no plugin for them in Debian 12 and the device state lives
//    in the GPU, not in the process;
//  - a worker under a seccomp filter while the daemon (and so criu, its
//    child) is under one too: criu must suspend the worker's filter
//    (PTRACE_O_SUSPEND_SECCOMP), which Linux refuses to a tracer under
//    seccomp. infervisord.service's SystemCallArchitectures=, LockPersonality=,
//    Protect{Clock,Hostname,KernelLogs,KernelModules}= install such filters,
//    and workers inherit them (etc/examples/criu.conf clears them);
//  - a process tree that is not all in the worker's cgroup is not checked
//    here: criu dumps the tree of the main process, and strays were never
//    part of it.
// The reading (read_criu_view) is blocking and bounded: at most
// kMaxCriuProcesses processes, kMaxCriuFds fds each, kMaxCriuMapLines lines of
// maps each, kMaxCriuTcpLines lines of /proc/PID/net/tcp{,6}; past a bound it
// says so, and the dump is refused (a worker must not make the daemon walk an
// unbounded /proc). No link is followed: readlink(2) of /proc/PID/fd/N only.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/result.h"

namespace infervisor {

inline constexpr size_t kMaxCriuProcesses = 4096;
inline constexpr size_t kMaxCriuFds = 65536;
inline constexpr size_t kMaxCriuMapLines = 262144;
inline constexpr size_t kMaxCriuTcpLines = 262144;

struct CriuProcessView {
    pid_t pid = 0;
    int seccomp = 0;  // Seccomp: of /proc/PID/status (0 none, 1 strict, 2 filter)
    std::vector<std::pair<int, std::string>> fds;  // fd, readlink target
    std::vector<std::string> mapped_devices;       // /dev/ paths in /proc/PID/maps
};

struct CriuView {
    std::vector<CriuProcessView> processes;
    // Inodes of TCP sockets (v4 and v6) in state ESTABLISHED in the worker's
    // network namespace.
    std::set<unsigned long long> established_tcp;
    int own_seccomp = 0;    // the daemon's own Seccomp: (criu inherits it)
    std::string truncated;  // non-empty: a bound was hit; says which
};

// The first thing criu cannot dump, in words ("pid 42 has an established TCP
// connection (fd 7)"), or nullopt.
std::optional<std::string> criu_obstacle(const CriuView& view);

// True for a GPU device path.
bool is_gpu_device(const std::string& path);

// Parses /proc/PID/net/tcp or tcp6 text; adds the inodes in state 01
// (ESTABLISHED) to `out`. Returns false when more than `max_lines` lines.
bool parse_established_tcp(const std::string& text, std::set<unsigned long long>& out,
                           size_t max_lines = kMaxCriuTcpLines);
// The path column of one /proc/PID/maps line, if it names a file
// ("/dev/dri/card0"); nullopt for anonymous and [special] mappings.
std::optional<std::string> mapped_path_of(const std::string& maps_line);

// The Seccomp: field of a /proc/PID/status text; 0 when absent.
int parse_seccomp_mode(const std::string& status);

// Blocking: reads the fds, maps and seccomp mode of `pids`, the TCP table of
// the first one's network namespace below `procfs`, and this process's own
// seccomp mode. A process that has exited meanwhile is skipped.
Result<CriuView> read_criu_view(const std::filesystem::path& procfs,
                                const std::vector<pid_t>& pids);

}  // namespace infervisor
