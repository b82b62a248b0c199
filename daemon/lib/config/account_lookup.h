// AccountLookup: whether the users and groups a configuration names exist on
// this host, for validation.
//
// Each name is looked up once (answers are cached: a thousand workers with
// the same user cost one lookup), through the reentrant getpwnam_r /
// getgrnam_r (validation runs on a background thread while the event loop
// resolves users for launches), and at most `max_names` distinct names are
// looked up at all: a lookup of an unknown name may read all of /etc/group
// or ask a directory service, so a configuration naming thousands of them
// would cost minutes. Names past the limit are answered `not_checked`.
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace infervisor {

class AccountLookup {
  public:
    enum class Answer { exists, missing, not_checked };

    explicit AccountLookup(std::size_t max_names) : max_names_(max_names) {}

    Answer user(const std::string& name) { return lookup(users_, name, true); }
    Answer group(const std::string& name) { return lookup(groups_, name, false); }
    // Distinct names that were not looked up because of the limit.
    std::size_t not_checked() const { return not_checked_; }

  private:
    Answer lookup(std::map<std::string, Answer>& cache, const std::string& name, bool is_user);

    std::size_t max_names_;
    std::size_t looked_up_ = 0;
    std::size_t not_checked_ = 0;
    std::map<std::string, Answer> users_, groups_;
};

}  // namespace infervisor
