#include "workdir/workdir_spec.h"

namespace infervisor {

std::filesystem::path resolve_workdir(const WorkDirSpec& spec, const Paths& paths) {
    if (!spec.workdir.empty()) return spec.workdir;
    return paths.state_dir / "workers" / spec.worker;
}

}  // namespace infervisor
