#include "supervise/worker_launch.h"

#include <grp.h>
#include <pwd.h>

#include <map>

namespace infervisor {

namespace {

Result<void> resolve_groups(const WorkerSpec& spec, WorkerIdentity& who) {
    if (!spec.group.empty()) {
        const group* gr = ::getgrnam(spec.group.c_str());
        if (!gr) return plain_error("group '" + spec.group + "' does not exist");
        who.gid = gr->gr_gid;
    }
    for (const auto& name : spec.supplementary_groups) {
        const group* gr = ::getgrnam(name.c_str());
        if (!gr) return plain_error("group '" + name + "' does not exist");
        who.supplementary_groups.push_back(gr->gr_gid);
    }
    return {};
}

}  // namespace

DynamicUsers dynamic_users(const Paths& paths) {
    return DynamicUsers(paths.state_dir / "dynamic-users");
}

Result<WorkerIdentity> resolve_identity(const WorkerSpec& spec, const Paths& paths) {
    WorkerIdentity who;
    if (spec.user == kDynamicUser) {
        auto uid = dynamic_users(paths).acquire(spec.name);
        if (!uid) return uid.error();
        who.uid = who.gid = *uid;
        who.user_name = dynamic_user_name(spec.name);
        who.dynamic = true;
    } else {
        const passwd* pw = ::getpwnam(spec.user.c_str());
        if (!pw) return plain_error("user '" + spec.user + "' does not exist");
        who.uid = pw->pw_uid;
        who.gid = pw->pw_gid;
        who.user_name = spec.user;
        who.home = pw->pw_dir ? pw->pw_dir : "/";
    }
    if (auto r = resolve_groups(spec, who); !r) return r.error();
    return who;
}

std::optional<uid_t> known_uid(const WorkerSpec& spec, const Paths& paths) {
    if (spec.user == kDynamicUser) return dynamic_users(paths).lookup(spec.name);
    const passwd* pw = ::getpwnam(spec.user.c_str());
    if (!pw) return std::nullopt;
    return pw->pw_uid;
}

std::vector<std::string> worker_environment(const WorkerSpec& spec, const WorkerIdentity& who,
                                            const WorkerPaths& paths,
                                            const std::map<std::string, std::string>& assigned) {
    std::map<std::string, std::string> env = {
        {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
        {"HOME", who.home.empty() ? paths.workdir.string() : who.home},
        {"USER", who.user_name},
        {"LOGNAME", who.user_name},
        {"LANG", "C.UTF-8"},
    };
    for (const auto& [key, value] : spec.environment) env[key] = value;
    for (const auto& [key, value] : assigned) env[key] = value;
    env["NOTIFY_SOCKET"] = paths.notify_socket.string();
    env["INFERVISOR_WORKER"] = spec.name;
    env["INFERVISOR_WORKDIR"] = paths.workdir.string();
    env["TMPDIR"] = paths.tmpdir.string();
    env["INFERVISOR_CHECKPOINT_DIR"] = paths.checkpoint_dir.string();
    if (!paths.credentials_dir.empty())
        env["CREDENTIALS_DIRECTORY"] = paths.credentials_dir.string();
    else
        env.erase("CREDENTIALS_DIRECTORY");  // never a path the daemon did not make
    env.erase("INFERVISOR_RESTORE_FROM");    // only ever a complete checkpoint of ours
    if (paths.restore_from) env["INFERVISOR_RESTORE_FROM"] = paths.restore_from->string();
    if (spec.watchdog.count() > 0)
        env["WATCHDOG_USEC"] = std::to_string(spec.watchdog.count() * 1000);
    std::vector<std::string> out;
    for (const auto& [key, value] : env) out.push_back(key + "=" + value);
    return out;
}

CgroupLimits limits_of(const WorkerSpec& spec) {
    return {spec.memory.max, spec.memory.high, spec.memory.swap_max, spec.pids_max,
            spec.cpu_weight};
}

}  // namespace infervisor
