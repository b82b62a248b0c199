#include "services/userdb_records.h"

#include <optional>

#include "process/dynamic_users.h"

namespace infervisor {

namespace {

using nlohmann::json;

struct Query {
    std::optional<uint64_t> id;
    std::optional<std::string> name;
};

json error(const std::string& name) { return {{"error", "io.systemd.UserDatabase." + name}}; }

json user_record(const std::string& worker, uid_t uid, const std::filesystem::path& state_dir) {
    return {{"userName", dynamic_user_name(worker)},
            {"uid", uid},
            {"gid", uid},
            {"realName", "infervisor worker " + worker},
            {"homeDirectory", (state_dir / "workers" / worker).string()},
            {"shell", "/usr/sbin/nologin"},
            {"locked", true},
            {"disposition", "dynamic"},
            {"service", kUserDbService}};
}

json group_record(const std::string& worker, uid_t gid) {
    return {{"groupName", dynamic_user_name(worker)},
            {"gid", gid},
            {"disposition", "dynamic"},
            {"service", kUserDbService}};
}

// The parameters named `id_key` and `name_key`, if present with the right type.
std::optional<Query> read_query(const json& params, const char* id_key, const char* name_key) {
    Query q;
    if (params.contains(id_key)) {
        const json& id = params[id_key];
        if (!id.is_number_integer() || id.get<int64_t>() < 0) return std::nullopt;
        q.id = id.get<uint64_t>();
    }
    if (params.contains(name_key)) {
        if (!params[name_key].is_string()) return std::nullopt;
        q.name = params[name_key].get<std::string>();
    }
    return q;
}

bool matches(const Query& q, const std::string& worker, uid_t id) {
    if (q.id && *q.id != id) return false;
    if (q.name && *q.name != dynamic_user_name(worker)) return false;
    return true;
}

std::vector<json> answer_lookup(const json& call, const Query& q,
                                const std::map<std::string, uid_t>& users,
                                const std::function<json(const std::string&, uid_t)>& record) {
    bool enumerate = !q.id && !q.name;
    if (enumerate && !call.value("more", false)) return {error("EnumerationNotSupported")};
    std::vector<json> out;
    for (const auto& [worker, id] : users)
        if (matches(q, worker, id))
            out.push_back(
                {{"parameters", {{"record", record(worker, id)}, {"incomplete", false}}}});
    if (out.empty()) return {error("NoRecordFound")};
    if (!enumerate) out.resize(1);
    for (size_t i = 0; i + 1 < out.size(); ++i) out[i]["continues"] = true;
    return out;
}

}  // namespace

std::vector<json> answer_userdb_call(const json& call, const std::map<std::string, uid_t>& users,
                                     const std::filesystem::path& state_dir) {
    if (!call.is_object() || !call.contains("method") || !call["method"].is_string())
        return {{{"error", "org.varlink.service.InvalidParameter"},
                 {"parameters", {{"parameter", "method"}}}}};
    const std::string method = call["method"].get<std::string>();
    const json params = call.value("parameters", json::object());
    if (!params.is_object() || params.value("service", "") != kUserDbService)
        return {error("BadService")};
    if (method == "io.systemd.UserDatabase.GetUserRecord") {
        auto q = read_query(params, "uid", "userName");
        if (!q) return {error("NoRecordFound")};
        return answer_lookup(call, *q, users, [&](const std::string& w, uid_t id) {
            return user_record(w, id, state_dir);
        });
    }
    if (method == "io.systemd.UserDatabase.GetGroupRecord") {
        auto q = read_query(params, "gid", "groupName");
        if (!q) return {error("NoRecordFound")};
        return answer_lookup(call, *q, users, group_record);
    }
    if (method == "io.systemd.UserDatabase.GetMemberships")
        return {error("NoRecordFound")};  // a dynamic user's only group is its own
    return {
        {{"error", "org.varlink.service.MethodNotFound"}, {"parameters", {{"method", method}}}}};
}

}  // namespace infervisor
