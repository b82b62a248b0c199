#include "supervise/workdir_setup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/unique_fd.h"

namespace infervisor {

namespace {

// mkdir + open without following links, then fchown/fchmod the opened dir.
Result<UniqueFd> ensure_dir(int parent, const std::string& name, uid_t uid, gid_t gid, mode_t mode,
                            const std::string& shown) {
    if (::mkdirat(parent, name.c_str(), mode) != 0 && errno != EEXIST)
        return errno_error("mkdir " + shown);
    UniqueFd fd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return errno_error("open " + shown + " (a symlink or not a directory?)");
    if (::fchown(fd.get(), uid, gid) != 0) return errno_error("chown " + shown);
    if (::fchmod(fd.get(), mode) != 0) return errno_error("chmod " + shown);
    return fd;
}

}  // namespace

Result<WorkerDirs> prepare_worker_dirs(const Paths& paths, const std::string& name, uid_t uid, gid_t gid) {
    WorkerDirs dirs{paths.state_dir / "workers" / name, paths.state_dir / "workers" / name / "tmp",
                    paths.state_dir / "checkpoints" / name};
    std::error_code ec;
    std::filesystem::create_directories(paths.state_dir / "workers", ec);
    std::filesystem::create_directories(paths.state_dir / "checkpoints", ec);
    UniqueFd workers(::open((paths.state_dir / "workers").c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    UniqueFd checkpoints(::open((paths.state_dir / "checkpoints").c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!workers || !checkpoints) return errno_error("open " + paths.state_dir.string());
    auto work = ensure_dir(workers.get(), name, uid, gid, 0700, dirs.workdir.string());
    if (!work) return work.error();
    auto tmp = ensure_dir(work->get(), "tmp", uid, gid, 0700, dirs.tmpdir.string());
    if (!tmp) return tmp.error();
    auto ckpt = ensure_dir(checkpoints.get(), name, uid, gid, 0700, dirs.checkpoint_dir.string());
    if (!ckpt) return ckpt.error();
    return dirs;
}

}  // namespace infervisor
