#include "cgroup/cgroup_discovery.h"

#include <sstream>
#include <vector>

#include "base/file_io.h"

namespace infervisor {

namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape_octal(std::string_view s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size()) {
            int v = (s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0');
            out += static_cast<char>(v);
            i += 3;
        } else {
            out += s[i];
        }
    }
    return out;
}

}  // namespace

Result<std::filesystem::path> find_cgroup2_mount(std::string_view mountinfo) {
    std::istringstream in{std::string(mountinfo)};
    std::string line;
    while (std::getline(in, line)) {
        // 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - cgroup2 cgroup2 rw
        auto sep = line.find(" - ");
        if (sep == std::string::npos) continue;
        std::istringstream after(line.substr(sep + 3));
        std::string fstype;
        after >> fstype;
        if (fstype != "cgroup2") continue;
        std::istringstream before(line.substr(0, sep));
        std::string id, parent, devno, root, mount_point;
        before >> id >> parent >> devno >> root >> mount_point;
        if (root != "/") continue;  // a bind mount of a subtree is not the hierarchy root
        return std::filesystem::path(unescape_octal(mount_point));
    }
    return plain_error("no cgroup2 file system is mounted (see /proc/self/mountinfo)");
}

Result<std::string> find_cgroup2_path(std::string_view proc_cgroup) {
    std::istringstream in{std::string(proc_cgroup)};
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("0::", 0) == 0) {
            std::string path = line.substr(3);
            if (path.empty() || path.front() != '/') break;
            return path;
        }
    }
    return plain_error("this process has no cgroup v2 membership (no '0::' line)");
}

Result<std::filesystem::path> discover_own_cgroup(const std::filesystem::path& procfs,
                                                  const std::string& pid) {
    auto mountinfo = read_file(procfs / pid / "mountinfo");
    if (!mountinfo) return mountinfo.error();
    auto mount = find_cgroup2_mount(*mountinfo);
    if (!mount) return mount.error();
    auto cgroup = read_file(procfs / pid / "cgroup");
    if (!cgroup) return cgroup.error();
    auto path = find_cgroup2_path(*cgroup);
    if (!path) return path.error();
    return *mount / std::filesystem::path(*path).relative_path();
}

}  // namespace infervisor
