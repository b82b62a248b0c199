#include "process/dynamic_users.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <ctime>
#include <set>

#include "base/unique_fd.h"

namespace infervisor {

namespace {

namespace fs = std::filesystem;

// A worker name usable as the file name: the config allows more than this
// (validation refuses such names for dynamic users, see config_validator).
bool is_store_name(const std::string& name) {
    if (name.empty() || name.size() > 200 || name[0] == '.') return false;
    return name.find('/') == std::string::npos;
}

Result<void> ensure_store_dir(const fs::path& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return Error{ec.value(), "create " + dir.string()};
    struct stat st;
    if (::lstat(dir.c_str(), &st) < 0) return errno_error("stat " + dir.string());
    if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022))
        return plain_error(dir.string() +
                           " must be a directory of the daemon's user, not writable "
                           "by group or others");
    if ((st.st_mode & 07777) != 0700 && ::chmod(dir.c_str(), 0700) < 0)
        return errno_error("chmod " + dir.string());
    return {};
}

std::optional<uid_t> parse_uid(std::string_view text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
    uid_t uid = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), uid);
    if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return uid;
}

std::optional<uid_t> read_uid_file(const fs::path& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return std::nullopt;
    char buf[32];
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n <= 0) return std::nullopt;
    return parse_uid(std::string_view(buf, static_cast<size_t>(n)));
}

Result<void> write_uid_file(const fs::path& dir, const std::string& name, uid_t uid) {
    fs::path tmp = dir / ("." + name + ".tmp");
    fs::path final_path = dir / name;
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) return errno_error("create " + tmp.string());
    std::string text = std::to_string(uid) + "\n";
    if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
        ::fsync(fd.get()) < 0) {
        auto e = errno_error("write " + tmp.string());
        ::unlink(tmp.c_str());
        return e;
    }
    if (::rename(tmp.c_str(), final_path.c_str()) < 0) {
        auto e = errno_error("rename " + tmp.string());
        ::unlink(tmp.c_str());
        return e;
    }
    return {};
}

}  // namespace

std::string dynamic_user_name(const std::string& worker) { return "infervisor-w-" + worker; }

bool id_known_to_nss(uid_t id) { return ::getpwuid(id) != nullptr || ::getgrgid(id) != nullptr; }

DynamicUsers::DynamicUsers(fs::path dir, uid_t first, uid_t last, TakenOnHost taken)
    : dir_(std::move(dir)), first_(first), last_(last), taken_(std::move(taken)) {
    if (!taken_) taken_ = id_known_to_nss;
}

std::optional<uid_t> DynamicUsers::lookup(const std::string& worker) const {
    if (!is_store_name(worker)) return std::nullopt;
    auto uid = read_uid_file(dir_ / worker);
    if (!uid || *uid < first_ || *uid > last_) return std::nullopt;
    return uid;
}

Result<uid_t> DynamicUsers::acquire(const std::string& worker) const {
    if (!is_store_name(worker))
        return plain_error("worker name '" + worker + "' cannot name a dynamic user");
    if (auto uid = lookup(worker)) return *uid;
    return allocate(worker);
}

Result<uid_t> DynamicUsers::allocate(const std::string& worker) const {
    if (auto r = ensure_store_dir(dir_); !r) return r.error();
    auto existing = list();
    if (!existing) return existing.error();
    std::set<uid_t> used;
    for (const auto& [name, uid] : *existing) used.insert(uid);
    for (uid_t uid = first_; uid <= last_; ++uid) {
        if (used.count(uid) || taken_(uid)) continue;
        if (auto r = write_uid_file(dir_, worker, uid); !r) return r.error();
        return uid;
    }
    return plain_error("no free uid left in " + std::to_string(first_) + "-" +
                       std::to_string(last_) + " for worker '" + worker + "' (" +
                       std::to_string(used.size()) + " allocated in " + dir_.string() + ")");
}

Result<void> DynamicUsers::release(const std::string& worker) const {
    if (!is_store_name(worker)) return {};
    if (::unlink((dir_ / worker).c_str()) < 0 && errno != ENOENT)
        return errno_error("remove " + (dir_ / worker).string());
    return {};
}

Result<std::map<std::string, uid_t>> DynamicUsersCache::list() {
    struct stat st;
    if (::stat(users_.dir().c_str(), &st) < 0) {
        key_.reset();
        if (errno == ENOENT) return std::map<std::string, uid_t>();
        return errno_error("stat " + users_.dir().string());
    }
    auto ns = [](const timespec& t) {
        return static_cast<long long>(t.tv_sec) * 1000000000LL + t.tv_nsec;
    };
    Key key{ns(st.st_mtim), ns(st.st_ctim), static_cast<unsigned long long>(st.st_ino)};
    if (key_ && *key_ == key && trusted_) return cached_;
    auto fresh = users_.list();
    if (!fresh) return fresh.error();
    ++reads_;
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    trusted_ = ns(now) - key.mtime_ns > 1000000000LL;
    key_ = key;
    cached_ = std::move(*fresh);
    return cached_;
}

Result<std::map<std::string, uid_t>> DynamicUsers::list() const {
    std::map<std::string, uid_t> out;
    DIR* d = ::opendir(dir_.c_str());
    if (!d) {
        if (errno == ENOENT) return out;
        return errno_error("open " + dir_.string());
    }
    // Bounded: one file per uid of the range, plus slack for stray files.
    const size_t cap = static_cast<size_t>(last_ - first_) + 1 + 1024;
    size_t seen = 0;
    while (const dirent* e = ::readdir(d)) {
        if (++seen > cap) break;
        std::string name = e->d_name;
        if (!is_store_name(name)) continue;
        if (auto uid = read_uid_file(dir_ / name); uid && *uid >= first_ && *uid <= last_)
            out.emplace(name, *uid);
    }
    ::closedir(d);
    return out;
}

}  // namespace infervisor
