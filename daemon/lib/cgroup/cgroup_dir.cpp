#include "cgroup/cgroup_dir.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

#include <charconv>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

#include "base/file_io.h"

namespace infervisor {

namespace fs = std::filesystem;

bool CgroupDir::exists() const {
    std::error_code ec;
    return fs::is_directory(path_, ec);
}

Result<std::string> CgroupDir::read(const std::string& file) const {
    return read_file(path_ / file);
}

Result<void> CgroupDir::write(const std::string& file, const std::string& value) const {
    return write_file(path_ / file, value);
}

Result<std::set<std::string>> CgroupDir::controllers() const {
    auto text = read("cgroup.controllers");
    if (!text) return text.error();
    std::set<std::string> out;
    std::istringstream in(*text);
    for (std::string name; in >> name;) out.insert(name);
    return out;
}

Result<void> CgroupDir::enable_controllers(const std::vector<std::string>& names) const {
    std::string line;
    for (const auto& n : names) line += (line.empty() ? "+" : " +") + n;
    return write("cgroup.subtree_control", line);
}

namespace {

// A line of cgroup.procs: a positive pid, else nullopt. 0 and -1 must never
// reach kill(2), where they mean "my process group" and "every process".
std::optional<pid_t> pid_of_line(std::string_view line) {
    pid_t pid = 0;
    auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), pid);
    if (ec != std::errc() || end != line.data() + line.size() || pid <= 0) return std::nullopt;
    return pid;
}

}  // namespace

Result<std::vector<pid_t>> CgroupDir::procs() const {
    auto text = read("cgroup.procs");
    if (!text) return text.error();
    std::vector<pid_t> out;
    std::istringstream in(*text);
    for (std::string line; std::getline(in, line);)
        if (auto pid = pid_of_line(line)) out.push_back(*pid);
    return out;
}

std::vector<pid_t> CgroupDir::procs_up_to(size_t max) const {
    std::vector<pid_t> pids;
    std::ifstream in(path_ / "cgroup.procs");
    std::string line;
    while (pids.size() < max && std::getline(in, line))
        if (auto pid = pid_of_line(line)) pids.push_back(*pid);
    return pids;
}

Result<void> CgroupDir::move_process(pid_t pid) const {
    return write("cgroup.procs", std::to_string(pid));
}

Result<bool> CgroupDir::populated() const {
    auto value = read_keyed_value(path_ / "cgroup.events", "populated");
    if (!value) return value.error();
    return *value != 0;
}

Result<void> CgroupDir::kill() const {
    std::error_code ec;
    if (fs::exists(path_ / "cgroup.kill", ec)) return write("cgroup.kill", "1");
    // Before 5.14: freeze so nothing forks between listing and killing.
    auto frozen = set_frozen(true);
    for (const auto& child : children()) (void)this->child(child).kill();
    auto pids = procs();
    if (pids)
        for (pid_t pid : *pids) ::kill(pid, SIGKILL);
    if (frozen) (void)set_frozen(false);
    if (!pids) return pids.error();
    return {};
}

Result<void> CgroupDir::set_frozen(bool frozen) const {
    return write("cgroup.freeze", frozen ? "1" : "0");
}

Result<bool> CgroupDir::freeze_requested() const {
    auto text = read("cgroup.freeze");
    if (!text) return text.error();
    return text->starts_with("1");
}

Result<bool> CgroupDir::frozen() const {
    auto value = read_keyed_value(path_ / "cgroup.events", "frozen");
    if (!value) return value.error();
    return *value != 0;
}

long long CgroupDir::memory_event(const std::string& key) const {
    auto value = read_keyed_value(path_ / "memory.events", key);
    return value ? *value : 0;
}

Result<void> CgroupDir::create() const {
    if (::mkdir(path_.c_str(), 0755) != 0) return errno_error("mkdir " + path_.string());
    // 0755 whatever the daemon's umask (the unit sets 0077): a worker reads
    // its own limits (memory.max) and monitoring tools read the tree.
    if (::chmod(path_.c_str(), 0755) != 0) return errno_error("chmod " + path_.string());
    return {};
}

Result<void> CgroupDir::remove() const {
    if (::rmdir(path_.c_str()) != 0) return errno_error("rmdir " + path_.string());
    return {};
}

Result<void> CgroupDir::remove_tree() const {
    for (const auto& name : children())
        if (auto r = child(name).remove_tree(); !r) return r;
    return remove();
}

std::vector<std::string> CgroupDir::children() const {
    // The error_code forms throughout: a cgroup can vanish while it is
    // listed, and the loop must not die of it (range-for's ++ would throw).
    std::vector<std::string> out;
    std::error_code ec;
    for (fs::directory_iterator it(path_, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_directory(ec) && !it->is_symlink(ec)) out.push_back(it->path().filename());
    return out;
}

Result<UniqueFd> CgroupDir::open_dir() const {
    UniqueFd fd(::open(path_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return errno_error("open " + path_.string());
    return fd;
}

}  // namespace infervisor
