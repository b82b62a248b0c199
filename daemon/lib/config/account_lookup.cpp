#include "config/account_lookup.h"

#include <grp.h>
#include <pwd.h>

#include <cerrno>
#include <vector>

namespace infervisor {

namespace {

// True when the entry exists. A lookup that fails for another reason than
// "not found" (no directory service reachable, ...) counts as missing: the
// worker could not be started with it either.
bool exists(const std::string& name, bool is_user) {
    std::vector<char> buffer(16384);
    for (;;) {
        int rc;
        bool found;
        if (is_user) {
            struct passwd entry {
            }, *result = nullptr;
            rc = ::getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &result);
            found = result != nullptr;
        } else {
            struct group entry {
            }, *result = nullptr;
            rc = ::getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &result);
            found = result != nullptr;
        }
        if (rc == ERANGE && buffer.size() < (1u << 20)) {
            buffer.resize(buffer.size() * 2);
            continue;
        }
        return rc == 0 && found;
    }
}

}  // namespace

AccountLookup::Answer AccountLookup::lookup(std::map<std::string, Answer>& cache,
                                            const std::string& name, bool is_user) {
    if (auto it = cache.find(name); it != cache.end()) return it->second;
    Answer answer;
    if (looked_up_ >= max_names_) {
        answer = Answer::not_checked;
        ++not_checked_;
    } else {
        ++looked_up_;
        answer = exists(name, is_user) ? Answer::exists : Answer::missing;
    }
    cache.emplace(name, answer);
    return answer;
}

}  // namespace infervisor
