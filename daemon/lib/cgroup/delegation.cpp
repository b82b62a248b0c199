#include "cgroup/delegation.h"

#include <sys/xattr.h>

#include <cerrno>
#include <string_view>

namespace infervisor {

namespace {

enum class Attribute { one, other_value, missing, unreadable };

Attribute read_attribute(const std::filesystem::path& cgroup, const char* name) {
    char value[8];
    ssize_t n = ::getxattr(cgroup.c_str(), name, value, sizeof value);
    if (n >= 0)
        return std::string_view(value, static_cast<size_t>(n)) == "1" ? Attribute::one
                                                                      : Attribute::other_value;
    // ERANGE: a value longer than "1", which is not the mark either.
    if (errno == ENODATA || errno == ERANGE) return Attribute::missing;
    return Attribute::unreadable;
}

}  // namespace

DelegationMark delegation_mark(const std::filesystem::path& cgroup) {
    bool readable = false;
    for (const char* name : {"trusted.delegate", "user.delegate"}) {
        Attribute a = read_attribute(cgroup, name);
        if (a == Attribute::one) return DelegationMark::present;
        if (a != Attribute::unreadable) readable = true;
    }
    return readable ? DelegationMark::absent : DelegationMark::unknown;
}

}  // namespace infervisor
