#include "process/prepared_child.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#include "process/fd_limit.h"

namespace infervisor {

namespace {

std::vector<char*> c_string_array(const std::vector<std::string>& strings) {
    std::vector<char*> out;
    out.reserve(strings.size() + 1);
    // execve takes char* const[] but never writes through it.
    for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
    out.push_back(nullptr);
    return out;
}

// A private O_CLOEXEC copy numbered >= 3, so that dup2 onto 0..2 in the child
// never meets its own source (dup2(fd, fd) would keep O_CLOEXEC).
Result<UniqueFd> stdio_source(int fd, const char* name) {
    UniqueFd dev_null;
    if (fd < 0) {
        dev_null.reset(::open("/dev/null", O_RDWR | O_CLOEXEC));
        if (!dev_null) return errno_error("open /dev/null");
        fd = dev_null.get();
    }
    UniqueFd copy(::fcntl(fd, F_DUPFD_CLOEXEC, 3));
    if (!copy) return errno_error(std::string("duplicate ") + name + " fd " + std::to_string(fd));
    return copy;
}

int close_loop_bound() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) < 0) return 1024;
    return static_cast<int>(std::min<rlim_t>(limit.rlim_cur, 1 << 20));
}

}  // namespace

Result<void> prepare_child(const SpawnRequest& request, PreparedChild& child) {
    const char* names[3] = {"stdin", "stdout", "stderr"};
    const int fds[3] = {request.stdin_fd, request.stdout_fd, request.stderr_fd};
    for (int i = 0; i < 3; ++i) {
        auto source = stdio_source(fds[i], names[i]);
        if (!source) return source.error();
        child.stdio[i] = std::move(source).value();
        child.plan.stdio[i] = child.stdio[i].get();
    }
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) < 0) return errno_error("create error pipe");
    child.error_read.reset(pipe_fds[0]);
    child.error_write.reset(pipe_fds[1]);

    child.argv = c_string_array(request.argv);
    child.envp = c_string_array(request.environment);
    ChildPlan& plan = child.plan;
    plan.path = request.argv[0].c_str();
    plan.argv = child.argv.data();
    plan.envp = child.envp.data();
    if (!request.working_directory.empty())
        plan.working_directory = request.working_directory.c_str();
    plan.error_pipe = child.error_write.get();
    plan.cgroup_fd = request.cgroup_fd;
    plan.change_credentials = request.uid.has_value() || request.gid.has_value();
    if (request.uid) plan.uid = *request.uid;
    if (request.gid) plan.gid = *request.gid;
    plan.groups = request.supplementary_groups.data();
    plan.group_count = request.supplementary_groups.size();
    plan.no_new_privileges = request.no_new_privileges;
    plan.keep_supervisor_capabilities = request.keep_supervisor_capabilities;
    if (request.oom_score_adj) {
        child.oom_score_adj = std::to_string(*request.oom_score_adj);
        plan.oom_score_adj = child.oom_score_adj.c_str();
    }
    plan.max_fd = close_loop_bound();
    if (auto fd_limit = fd_limit_for_children()) {
        plan.fd_limit_soft = fd_limit->rlim_cur;
        plan.fd_limit_hard = fd_limit->rlim_max;
    }
    plan.address_space_limit = request.address_space_limit;
    plan.no_core_dump = request.no_core_dump;
    if (request.private_tmp_fd >= 0) {
        for (auto& tree : child.private_tmp_trees) {
            tree.reset(::open_tree(request.private_tmp_fd, "",
                                   OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH));
            if (!tree) return errno_error("clone the private tmp dir (open_tree)");
        }
        plan.private_tmp_tree = child.private_tmp_trees[0].get();
        plan.private_var_tmp_tree = child.private_tmp_trees[1].get();
    }
    return {};
}

namespace {

std::string id_list(const std::vector<gid_t>& ids) {
    std::string out;
    for (gid_t id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
    return out;
}

std::string working_directory(const SpawnRequest& request) {
    return request.working_directory.empty() ? "/" : request.working_directory.string();
}

std::string optional_id(const auto& id) { return id ? std::to_string(*id) : std::string("-1"); }

}  // namespace

std::string describe_child_step(ChildStep step, const SpawnRequest& request) {
    switch (step) {
        case ChildStep::open_cgroup_procs:
            return "open cgroup.procs of the target cgroup";
        case ChildStep::write_cgroup_procs:
            return "write to cgroup.procs of the target cgroup";
        case ChildStep::reset_signal_mask:
            return "reset signal mask";
        case ChildStep::oom_score_adj:
            return "write oom_score_adj " +
                   (request.oom_score_adj ? std::to_string(*request.oom_score_adj) : std::string());
        case ChildStep::setsid:
            return "setsid";
        case ChildStep::private_tmp:
            return "set up a private /tmp and /var/tmp (mount namespace)";
        case ChildStep::dup2_stdin:
            return "dup2 stdin";
        case ChildStep::dup2_stdout:
            return "dup2 stdout";
        case ChildStep::dup2_stderr:
            return "dup2 stderr";
        case ChildStep::setgroups:
            return "setgroups(" + id_list(request.supplementary_groups) + ")";
        case ChildStep::setresgid:
            return "setresgid(" + optional_id(request.gid) + ")";
        case ChildStep::setresuid:
            return "setresuid(" + optional_id(request.uid) + ")";
        case ChildStep::verify_credentials:
            return "verify credentials (uid " + optional_id(request.uid) + ", gid " +
                   optional_id(request.gid) + ")";
        case ChildStep::drop_capabilities:
            return "prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN/CAP_SYS_PTRACE/CAP_NET_ADMIN/"
                   "CAP_SYS_CHROOT/CAP_SYS_TIME/CAP_SETPCAP)";
        case ChildStep::no_new_privileges:
            return "prctl(PR_SET_NO_NEW_PRIVS)";
        case ChildStep::chdir:
            return "chdir(" + working_directory(request) + ")";
        case ChildStep::close_fds:
            return "close inherited fds";
        case ChildStep::execve:
            return "execve";
        case ChildStep::set_rlimits:
            return "set RLIMIT_AS " + std::to_string(request.address_space_limit) +
                   (request.no_core_dump ? ", RLIMIT_CORE 0" : "") + " and RLIMIT_NOFILE";
    }
    return "step " + std::to_string(static_cast<int>(step));
}

}  // namespace infervisor
