// The dynamic users as systemd's userdb sees them: answers to the Varlink
// interface io.systemd.UserDatabase (GetUserRecord, GetGroupRecord,
// GetMemberships), so that nss-systemd resolves infervisor-w-NAME and the
// worker's uid both ways (ps, ls, id). Pure: a call and the current
// allocation in, the reply messages out.
//
// Records are JSON user/group records (systemd's "JSON User Records"):
// disposition "dynamic", no password, shell nologin, home the default work
// dir. A lookup by uid/gid or by name answers one record or NoRecordFound; a
// call with neither and "more": true enumerates (one message per record,
// "continues": true on all but the last). A "service" other than ours is
// BadService, as the interface requires.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace infervisor {

inline constexpr char kUserDbService[] = "io.infervisor.DynamicUser";

// `call` is a parsed Varlink call; `users` maps worker names to their uids.
std::vector<nlohmann::json> answer_userdb_call(const nlohmann::json& call,
                                               const std::map<std::string, uid_t>& users,
                                               const std::filesystem::path& state_dir);

}  // namespace infervisor
