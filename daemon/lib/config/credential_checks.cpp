#include "config/credential_checks.h"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstring>

namespace infervisor {

namespace fs = std::filesystem;

bool is_valid_credential_name(std::string_view name) {
    if (name.empty() || name.size() > 64 || name.front() == '.') return false;
    for (char c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
            return false;
    return true;
}

std::string credential_source_problem(const fs::path& source, bool as_caller) {
    if (!source.is_absolute()) return "must be an absolute path, not '" + source.string() + "'";
    struct stat st;
    if (::stat(source.c_str(), &st) < 0) {
        if (as_caller && (errno == EACCES || errno == EPERM)) return {};
        return "cannot use " + source.string() + ": " + std::strerror(errno);
    }
    if (!S_ISREG(st.st_mode)) return source.string() + " is not a regular file";
    if (static_cast<size_t>(st.st_size) > kMaxCredentialSize)
        return source.string() + " is larger than " + std::to_string(kMaxCredentialSize) + " bytes";
    return {};
}

}  // namespace infervisor
