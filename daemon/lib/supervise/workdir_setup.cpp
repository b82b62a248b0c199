#include "supervise/workdir_setup.h"

#include "workdir/owned_dir.h"
#include "workdir/safe_path.h"

namespace infervisor {

Result<std::filesystem::path> prepare_checkpoint_dir(const Paths& paths, const std::string& name,
                                                     uid_t uid, gid_t gid) {
    auto parent_path = paths.state_dir / "checkpoints";
    WalkOptions walk;
    walk.create = CreateMissing::yes;
    walk.create_mode = 0711;
    auto parent = open_trusted_dir(parent_path, walk);
    if (!parent) return parent.error();
    auto dir = ensure_owned_dir(parent->get(), name, parent_path / name,
                                DirOwner{uid, gid, 0700, name, true});
    if (!dir) return dir.error();
    return parent_path / name;
}

}  // namespace infervisor
