#include "base/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "base/unique_fd.h"

namespace infervisor {

namespace {
constexpr size_t kMaxKernelFile = 1 << 20;
}

Result<std::string> read_file(const std::filesystem::path& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return errno_error("open " + path.string());
    std::string out;
    char buf[8192];
    while (out.size() < kMaxKernelFile) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno_error("read " + path.string());
        }
        if (n == 0) break;
        out.append(buf, static_cast<size_t>(n));
    }
    return out;
}

Result<std::string> read_regular_file(const std::filesystem::path& path, size_t max_bytes,
                                      std::string_view what) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!fd) return errno_error("open " + path.string());
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return errno_error("stat " + path.string());
    if (!S_ISREG(st.st_mode)) return plain_error(path.string() + " is not a regular file");
    auto too_large = [&] {
        return plain_error(path.string() + " is larger than " + std::to_string(max_bytes >> 10) +
                           " KiB, the limit for " + std::string(what));
    };
    if (static_cast<uint64_t>(st.st_size) > max_bytes) return too_large();
    std::string out;
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno_error("read " + path.string());
        }
        if (n == 0) break;
        if (out.size() + static_cast<size_t>(n) > max_bytes) return too_large();  // it grew
        out.append(buf, static_cast<size_t>(n));
    }
    return out;
}

Result<void> write_file(const std::filesystem::path& path, std::string_view content) {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) return errno_error("open " + path.string());
    ssize_t n;
    do {
        n = ::write(fd.get(), content.data(), content.size());
    } while (n < 0 && errno == EINTR);
    if (n < 0) return errno_error("write '" + std::string(trim(content)) + "' to " + path.string());
    if (static_cast<size_t>(n) != content.size())
        return plain_error("short write to " + path.string());
    return {};
}

Result<void> replace_file(const std::filesystem::path& path, std::string_view content,
                          mode_t mode) {
    std::filesystem::path tmp = path.parent_path() / ("." + path.filename().string() + ".tmp");
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode));
    if (!fd) return errno_error("create " + tmp.string());
    if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
        auto e = errno_error("write " + tmp.string());
        ::unlink(tmp.c_str());
        return e;
    }
    fd.reset();
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        auto e = errno_error("rename " + tmp.string() + " to " + path.string());
        ::unlink(tmp.c_str());
        return e;
    }
    return {};
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    return s;
}

Result<long long> find_keyed_value(std::string_view text, std::string_view key) {
    size_t pos = 0;
    while (pos < text.size()) {
        size_t eol = text.find('\n', pos);
        if (eol == std::string_view::npos) eol = text.size();
        std::string_view line = text.substr(pos, eol - pos);
        pos = eol + 1;
        if (line.size() > key.size() && line.substr(0, key.size()) == key &&
            line[key.size()] == ' ') {
            std::string_view num = trim(line.substr(key.size() + 1));
            long long value = 0;
            auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), value);
            if (ec != std::errc() || ptr != num.data() + num.size())
                return plain_error("malformed value for '" + std::string(key) + "'");
            return value;
        }
    }
    return plain_error("no key '" + std::string(key) + "'");
}

Result<long long> read_keyed_value(const std::filesystem::path& path, std::string_view key) {
    auto text = read_file(path);
    if (!text) return text.error();
    auto value = find_keyed_value(*text, key);
    if (!value) return plain_error(path.string() + ": " + value.error().what);
    return value;
}

bool write_all(int fd, std::string_view data) {
    std::size_t done = 0;
    while (done < data.size()) {
        ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace infervisor
