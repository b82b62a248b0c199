#include "workdir/lock_holder.h"

#include <sys/sysmacros.h>

#include <charconv>
#include <sstream>

#include "base/file_io.h"

namespace infervisor {

namespace {

// "fe:01:123456" (major and minor in hex, inode in decimal).
bool same_file(std::string_view field, dev_t dev, ino_t ino) {
    auto first = field.find(':');
    auto second = field.find(':', first + 1);
    if (first == std::string_view::npos || second == std::string_view::npos) return false;
    unsigned major = 0, minor = 0;
    unsigned long long inode = 0;
    auto hex = [](std::string_view s, unsigned& out) {
        return std::from_chars(s.data(), s.data() + s.size(), out, 16).ec == std::errc{};
    };
    auto rest = field.substr(second + 1);
    if (!hex(field.substr(0, first), major) ||
        !hex(field.substr(first + 1, second - first - 1), minor) ||
        std::from_chars(rest.data(), rest.data() + rest.size(), inode).ec != std::errc{})
        return false;
    return major == ::major(dev) && minor == ::minor(dev) && inode == ino;
}

// One line: "1: FLOCK  ADVISORY  WRITE 13642 fe:00:10953803 0 EOF"; waiters
// have "->" after the number and hold nothing.
std::optional<pid_t> flock_pid_of_line(const std::string& line, dev_t dev, ino_t ino) {
    std::istringstream in(line);
    std::string id, type, advisory, access, pid, file;
    if (!(in >> id >> type) || type != "FLOCK") return std::nullopt;
    if (!(in >> advisory >> access >> pid >> file)) return std::nullopt;
    if (!same_file(file, dev, ino)) return std::nullopt;
    pid_t value = 0;
    if (std::from_chars(pid.data(), pid.data() + pid.size(), value).ec != std::errc{})
        return std::nullopt;
    return value;
}

}  // namespace

std::string LockHolder::describe() const {
    if (pid <= 0) return "an unknown process";
    if (command.empty()) return "pid " + std::to_string(pid);
    return "pid " + std::to_string(pid) + " (" + command + ")";
}

std::optional<pid_t> find_flock_pid(std::string_view locks, dev_t dev, ino_t ino) {
    std::istringstream in{std::string(locks)};
    std::string line;
    while (std::getline(in, line))
        if (auto pid = flock_pid_of_line(line, dev, ino)) return pid;
    return std::nullopt;
}

std::optional<LockHolder> find_lock_holder(const std::filesystem::path& procfs, dev_t dev,
                                           ino_t ino) {
    auto locks = read_file(procfs / "locks");
    if (!locks) return std::nullopt;
    auto pid = find_flock_pid(*locks, dev, ino);
    if (!pid) return std::nullopt;
    LockHolder holder{*pid, {}};
    if (auto comm = read_file(procfs / std::to_string(*pid) / "comm"))
        holder.command = std::string(trim(*comm));
    return holder;
}

}  // namespace infervisor
