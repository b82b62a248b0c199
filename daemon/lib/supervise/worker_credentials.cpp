#include "supervise/worker_credentials.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/unique_fd.h"
#include "workdir/safe_path.h"
#include "workdir/tree_removal.h"

namespace infervisor {

namespace {

namespace fs = std::filesystem;

constexpr mode_t kDirMode = 0711;
constexpr mode_t kFileMode = 0400;

Result<UniqueFd> open_parent(const Paths& paths) {
    WalkOptions walk;
    walk.create = CreateMissing::yes;
    walk.create_mode = 0711;
    auto parent = open_trusted_dir(paths.runtime_dir / "credentials", walk);
    if (!parent) return parent.error();
    UniqueFd fd(::openat(parent->get(), ".", kOpenDirNoFollow));
    if (!fd) return errno_error("open " + (paths.runtime_dir / "credentials").string());
    return fd;
}

// The whole source file, refused if it is not a regular file or too large.
Result<std::string> read_source(const fs::path& source) {
    UniqueFd fd(::open(source.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
    if (!fd) return errno_error("open credential " + source.string());
    struct stat st;
    if (::fstat(fd.get(), &st) < 0) return errno_error("stat credential " + source.string());
    if (!S_ISREG(st.st_mode))
        return plain_error("credential " + source.string() + " is not a file");
    std::string data;
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno_error("read credential " + source.string());
        if (n == 0) return data;
        data.append(buf, static_cast<size_t>(n));
        if (data.size() > kMaxCredentialSize)
            return plain_error("credential " + source.string() + " is larger than " +
                               std::to_string(kMaxCredentialSize) + " bytes");
    }
}

Result<void> write_credential(int dir_fd, const std::string& name, const std::string& data,
                              uid_t uid, const fs::path& shown) {
    UniqueFd fd(
        ::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400));
    if (!fd) return errno_error("create " + shown.string());
    size_t done = 0;
    while (done < data.size()) {
        ssize_t n = ::write(fd.get(), data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno_error("write " + shown.string());
        done += static_cast<size_t>(n);
    }
    if (::fchown(fd.get(), uid, 0) < 0 || ::fchmod(fd.get(), kFileMode) < 0)
        return errno_error("chown " + shown.string());
    return {};
}

}  // namespace

Result<std::string> read_credential_secret(const fs::path& source) {
    auto data = read_source(source);
    if (!data) return data.error();
    std::string secret = std::move(*data);
    while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r' ||
                               secret.back() == ' ' || secret.back() == '\t'))
        secret.pop_back();
    return secret;
}

fs::path credentials_dir(const Paths& paths, const std::string& worker) {
    return paths.runtime_dir / "credentials" / worker;
}

Result<void> remove_credentials(const Paths& paths, const std::string& worker) {
    if (!is_plain_name(worker)) return plain_error("bad worker name '" + worker + "'");
    UniqueFd parent(::open((paths.runtime_dir / "credentials").c_str(), kOpenDirNoFollow));
    if (!parent) return errno == ENOENT ? Result<void>() : errno_error("open credentials dir");
    return remove_workdir_tree(parent.get(), worker);
}

Result<fs::path> install_credentials(const Paths& paths, const std::string& worker,
                                     const std::map<std::string, fs::path>& credentials,
                                     uid_t uid) {
    if (auto r = remove_credentials(paths, worker); !r) return r.error();
    if (credentials.empty()) return fs::path();
    fs::path dir = credentials_dir(paths, worker);
    auto parent = open_parent(paths);
    if (!parent) return parent.error();
    if (::mkdirat(parent->get(), worker.c_str(), 0700) < 0)
        return errno_error("create " + dir.string());
    UniqueFd fd(::openat(parent->get(), worker.c_str(), kOpenDirNoFollow));
    if (!fd) return errno_error("open " + dir.string());
    for (const auto& [name, source] : credentials) {
        if (!is_valid_credential_name(name))
            return plain_error("credential name '" + name + "' is not a plain file name");
        auto data = read_source(source);
        if (!data) return data.error();
        if (auto r = write_credential(fd.get(), name, *data, uid, dir / name); !r) return r.error();
    }
    if (::fchown(fd.get(), 0, 0) < 0 || ::fchmod(fd.get(), kDirMode) < 0)
        return errno_error("chown " + dir.string());
    return dir;
}

}  // namespace infervisor
