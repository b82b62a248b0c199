#include "supervise/private_tmp.h"

namespace infervisor {

namespace {

std::optional<std::string> shared_root_of(const std::filesystem::path& path) {
    for (const char* root : {"/tmp", "/var/tmp"}) {
        auto rel = path.lexically_normal().lexically_relative(root);
        if (!rel.empty() && *rel.begin() != "..") return root;
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> why_no_private_tmp(const std::filesystem::path& workdir,
                                              const WorkDirSpec& spec) {
    if (auto root = shared_root_of(workdir))
        return "its work dir " + workdir.string() + " is under " + *root;
    for (const auto& extra : spec.extra_dirs)
        if (auto root = shared_root_of(extra.path))
            return "its extra dir " + extra.path.string() + " is under " + *root;
    return std::nullopt;
}

bool shares_host_tmp(const WorkerSpec& spec, const Paths& paths) {
    if (!spec.private_tmp || spec.checkpoint.method == CheckpointMethod::criu) return true;
    return why_no_private_tmp(resolve_workdir(spec.workdir, paths), spec.workdir).has_value();
}

}  // namespace infervisor
