#include "checkpoint/checkpoint_seal.h"

#include <endian.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/unique_fd.h"
#include "workdir/disk_usage.h"
#include "workdir/tree_walk.h"

namespace infervisor {

namespace {

// The kernel's POSIX ACL xattr format (linux/posix_acl_xattr.h), little-endian.
constexpr uint32_t kAclVersion = 2;
constexpr uint16_t kAclUserObj = 0x01, kAclUser = 0x02, kAclGroupObj = 0x04, kAclMask = 0x10,
                   kAclOther = 0x20;
constexpr uint32_t kAclUndefinedId = 0xffffffff;
constexpr char kAclAccessName[] = "system.posix_acl_access";

void append_acl_entry(std::vector<unsigned char>& out, uint16_t tag, uint16_t perm, uint32_t id) {
    uint16_t le_tag = htole16(tag), le_perm = htole16(perm);
    uint32_t le_id = htole32(id);
    const size_t at = out.size();
    out.resize(at + 8);
    std::memcpy(out.data() + at, &le_tag, 2);
    std::memcpy(out.data() + at + 2, &le_perm, 2);
    std::memcpy(out.data() + at + 4, &le_id, 4);
}

// u::(owner bits) u:reader:r(x) g::--- m::r(x) o::---
std::vector<unsigned char> reader_acl(mode_t mode, uid_t reader) {
    uint16_t owner = static_cast<uint16_t>((mode >> 6) & 07);
    uint16_t read = static_cast<uint16_t>(4 | (S_ISDIR(mode) || (mode & S_IXUSR) ? 1 : 0));
    std::vector<unsigned char> acl(4);
    uint32_t version = htole32(kAclVersion);
    std::memcpy(acl.data(), &version, 4);
    append_acl_entry(acl, kAclUserObj, owner, kAclUndefinedId);
    append_acl_entry(acl, kAclUser, read, static_cast<uint32_t>(reader));
    append_acl_entry(acl, kAclGroupObj, 0, kAclUndefinedId);
    append_acl_entry(acl, kAclMask, read, kAclUndefinedId);
    append_acl_entry(acl, kAclOther, 0, kAclUndefinedId);
    return acl;
}

// Makes the open entry `fd` root's, mode u=rwX at most, readable by `reader`.
Result<void> seal_one(int fd, const std::string& shown, uid_t reader) {
    struct stat st;
    if (::fstat(fd, &st) < 0) return errno_error("stat " + shown);
    if (::fchown(fd, 0, 0) < 0) return errno_error("chown " + shown + " to root");
    mode_t mode = st.st_mode & 0700;
    if (::fchmod(fd, mode) < 0) return errno_error("chmod " + shown);
    if (reader == 0) return {};
    auto acl = reader_acl(st.st_mode & ~07077, reader);
    if (::fsetxattr(fd, kAclAccessName, acl.data(), acl.size(), 0) < 0) {
        if (errno == EOPNOTSUPP)
            return plain_error("the checkpoint file system does not support POSIX ACLs, so uid " +
                               std::to_string(reader) + " could not read " + shown +
                               " once it is root's");
        return errno_error("set the ACL of " + shown);
    }
    return {};
}

// True when some process has the regular file `fd` open for writing (or
// mapped shared and writable): the kernel refuses a read lease exactly then.
// False also where leases are unavailable (see the header).
bool open_for_writing(int fd) {
    if (::fcntl(fd, F_SETLEASE, F_RDLCK) == 0) {
        (void)::fcntl(fd, F_SETLEASE, F_UNLCK);
        return false;
    }
    return errno == EAGAIN;
}

class SealVisitor final : public TreeVisitor {
  public:
    SealVisitor(std::string shown, uid_t writer, uid_t reader)
        : shown_(std::move(shown)), writer_(writer), reader_(reader) {}

    Result<Next> visit(int dir_fd, const char* name, const struct statx& sx, int) override {
        std::string shown = shown_ + "/.../" + name;
        // Every entry must be the writer's: a worker writes nothing as root,
        // so a root's entry in its tree is a hard link to a file of root's
        // (one it may write, e.g. through a group, or any with
        // fs.protected_hardlinks=0), which the seal must not take from its
        // owner nor open to the worker.
        if (sx.stx_uid != writer_)
            return plain_error(shown + " belongs to uid " + std::to_string(sx.stx_uid) +
                               ", not to the worker");
        if (S_ISLNK(sx.stx_mode)) {
            if (::fchownat(dir_fd, name, 0, 0, AT_SYMLINK_NOFOLLOW) < 0 && errno != ENOENT)
                return errno_error("chown " + shown + " to root");
            return Next::skip;
        }
        if (!S_ISDIR(sx.stx_mode) && !S_ISREG(sx.stx_mode))
            return plain_error(shown +
                               " is neither a file, a directory nor a symbolic link; refusing it");
        int flags = S_ISDIR(sx.stx_mode)
                        ? kOpenDirNoFollow
                        : O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
        UniqueFd fd(::openat(dir_fd, name, flags | O_NOATIME));
        if (!fd && errno == EPERM) fd.reset(::openat(dir_fd, name, flags));
        if (!fd) {
            if (errno == ELOOP || errno == ENOTDIR) return plain_error(shown + " was replaced");
            return errno_error("open " + shown);  // a lease the worker holds: EWOULDBLOCK
        }
        struct stat st;
        if (::fstat(fd.get(), &st) < 0) return errno_error("stat " + shown);
        if (st.st_ino != sx.stx_ino || (st.st_mode & S_IFMT) != (sx.stx_mode & S_IFMT))
            return plain_error(shown + " was replaced");
        if (auto r = seal_one(fd.get(), shown, reader_); !r) return r.error();
        if (S_ISDIR(st.st_mode)) return Next::descend;
        if (open_for_writing(fd.get()))
            return plain_error(shown + " is still open for writing by a process");
        return Next::skip;
    }
    Result<void> replaced(int, const char* name) override {
        return plain_error(shown_ + "/.../" + name + " was replaced");
    }
    Result<void> too_deep(int, const char* name) override {
        return plain_error(shown_ + "/.../" + name + " is deeper than " +
                           std::to_string(kMaxUsageDepth) + " levels");
    }

  private:
    std::string shown_;
    uid_t writer_;
    uid_t reader_;
};

}  // namespace

Result<void> seal_checkpoint_tree(int dir_fd, const std::string& shown, uid_t writer,
                                  uid_t reader) {
    struct stat st;
    if (::fstat(dir_fd, &st) < 0) return errno_error("stat " + shown);
    if (!S_ISDIR(st.st_mode)) return plain_error(shown + " is not a directory");
    if (st.st_uid != writer && st.st_uid != 0)
        return plain_error(shown + " belongs to uid " + std::to_string(st.st_uid) +
                           ", not to the worker");
    if (auto r = seal_one(dir_fd, shown, reader); !r) return r;
    SealVisitor visitor(shown, writer, reader);
    TreeWalkOptions options;
    options.statx_mask = STATX_TYPE | STATX_UID | STATX_INO;
    options.max_depth = kMaxUsageDepth;
    return walk_tree(dir_fd, shown, visitor, options);
}

}  // namespace infervisor
