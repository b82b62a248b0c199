#include "workdir/open_tmp_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "base/unique_fd.h"

namespace infervisor {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kDeleted = " (deleted)";
constexpr size_t kMapsChunk = 64 * 1024;

// readlinkat() into a string; empty on any error or when the link text
// does not fit PATH_MAX (such a path could not name a file anyway).
std::string read_link_at(int dir_fd, const char* name) {
    char buffer[PATH_MAX];
    ssize_t n = ::readlinkat(dir_fd, name, buffer, sizeof buffer);
    if (n <= 0 || static_cast<size_t>(n) >= sizeof buffer) return {};
    return std::string(buffer, static_cast<size_t>(n));
}

bool has_dot_component(std::string_view path) {
    size_t start = 1;
    while (start <= path.size()) {
        size_t end = path.find('/', start);
        if (end == std::string_view::npos) end = path.size();
        std::string_view part = path.substr(start, end - start);
        if (part.empty() || part == "." || part == "..") return true;
        start = end + 1;
    }
    return false;
}

// The kernel's seq_file escaping of maps paths: "\012" for a newline.
std::string decode_maps_path(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        if (text.compare(i, 4, "\\012") == 0) {
            out += '\n';
            i += 3;
        } else {
            out += text[i];
        }
    }
    return out;
}

class Scanner {
  public:
    Scanner(const ScanLimits& limits, OpenTmpFileScan& out) : limits_(limits), out_(out) {}

    bool full() const { return out_.files.size() >= limits_.max_paths; }

    void keep(std::string_view target, pid_t pid, bool mapped) {
        auto path = shared_tmp_path(target);
        if (!path) return;
        if (out_.files.count(*path)) return;
        if (full()) {
            out_.truncated = true;
            return;
        }
        out_.files.emplace(std::move(*path), OpenTmpFile{pid, mapped});
    }

    void scan_fds(int pid_dir, pid_t pid) {
        UniqueFd fd_dir(::openat(pid_dir, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!fd_dir) return;
        int raw = fd_dir.get();
        DIR* dir = ::fdopendir(fd_dir.release());
        if (!dir) {
            ::close(raw);
            return;
        }
        while (dirent* entry = ::readdir(dir)) {
            if (entry->d_name[0] == '.') continue;
            if (out_.fds >= limits_.max_fds || full()) {
                out_.truncated = true;
                break;
            }
            ++out_.fds;
            std::string target = read_link_at(::dirfd(dir), entry->d_name);
            if (!target.empty()) keep(target, pid, false);
        }
        ::closedir(dir);
    }

    void scan_maps(int pid_dir, pid_t pid) {
        UniqueFd maps(::openat(pid_dir, "maps", O_RDONLY | O_CLOEXEC));
        if (!maps) return;
        std::string pending;
        char chunk[kMapsChunk];
        for (;;) {
            size_t budget = limits_.max_maps_bytes - out_.maps_bytes;
            if (budget == 0 || full()) {
                out_.truncated = true;
                return;  // a partial last line is dropped with the rest
            }
            ssize_t n = ::read(maps.get(), chunk, std::min(budget, sizeof chunk));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            out_.maps_bytes += static_cast<size_t>(n);
            pending.append(chunk, static_cast<size_t>(n));
            size_t start = 0;
            for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1)
                if (auto path = maps_line_path(std::string_view(pending).substr(start, nl - start)))
                    keep(*path, pid, true);
            pending.erase(0, start);
        }
    }

  private:
    const ScanLimits& limits_;
    OpenTmpFileScan& out_;
};

}  // namespace

std::optional<std::string> shared_tmp_path(std::string_view target) {
    if (target.size() >= kDeleted.size() &&
        target.substr(target.size() - kDeleted.size()) == kDeleted)
        return std::nullopt;
    for (std::string_view root : {std::string_view("/tmp/"), std::string_view("/var/tmp/")}) {
        if (target.size() <= root.size() || target.substr(0, root.size()) != root) continue;
        if (has_dot_component(target) || target.back() == '/') return std::nullopt;
        if (target.find('\0') != std::string_view::npos) return std::nullopt;
        return std::string(target);
    }
    return std::nullopt;
}

std::optional<std::string> maps_line_path(std::string_view line) {
    // "start-end perms offset dev inode   path": five fields, then the path.
    size_t pos = 0;
    for (int field = 0; field < 5; ++field) {
        while (pos < line.size() && line[pos] == ' ') ++pos;
        if (pos == line.size()) return std::nullopt;
        while (pos < line.size() && line[pos] != ' ') ++pos;
    }
    while (pos < line.size() && line[pos] == ' ') ++pos;
    if (pos == line.size() || line[pos] != '/') return std::nullopt;
    return decode_maps_path(line.substr(pos));
}

std::string own_mount_namespace(const fs::path& procfs) {
    return read_link_at(AT_FDCWD, (procfs / "self/ns/mnt").c_str());
}

OpenTmpFileScan scan_open_tmp_files(const fs::path& procfs, const std::vector<pid_t>& pids,
                                    const std::string& mount_ns, const ScanLimits& limits) {
    OpenTmpFileScan out;
    Scanner scanner(limits, out);
    for (pid_t pid : pids) {
        if (out.pids >= limits.max_pids) {
            out.truncated = true;
            break;
        }
        ++out.pids;
        // The pid's directory, held: if the pid exits and is reused during
        // the scan, reads through it fail (ESRCH) rather than show the new one.
        UniqueFd pid_dir(
            ::open((procfs / std::to_string(pid)).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!pid_dir || mount_ns.empty() || read_link_at(pid_dir.get(), "ns/mnt") != mount_ns) {
            ++out.pids_elsewhere;
            continue;
        }
        scanner.scan_fds(pid_dir.get(), pid);
        scanner.scan_maps(pid_dir.get(), pid);
    }
    return out;
}

}  // namespace infervisor
