#include "process/signal_disposition.h"

#include <signal.h>

#include <charconv>
#include <string>

#include "base/file_io.h"

namespace infervisor {

namespace {

// The value of the line "KEY:\t<hex mask>" as a 64-bit mask (never the
// first line of the file, which is Name:).
Result<uint64_t> mask_of(std::string_view status, std::string_view key) {
    std::string needle = "\n" + std::string(key) + ":";
    auto at = status.find(needle);
    if (at == std::string_view::npos) return plain_error("no " + std::string(key) + " line");
    auto value = status.substr(at + needle.size());
    value = value.substr(0, value.find('\n'));
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
        value.remove_prefix(1);
    uint64_t mask = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), mask, 16);
    if (ec != std::errc() || end != value.data() + value.size() || value.empty())
        return plain_error("malformed " + std::string(key) + " line");
    return mask;
}

}  // namespace

bool default_action_ends(int sig) {
    return sig != SIGCHLD && sig != SIGCONT && sig != SIGURG && sig != SIGWINCH;
}

Result<SignalDisposition> parse_signal_disposition(std::string_view status, int sig) {
    if (sig < 1 || sig > 64) return plain_error("signal " + std::to_string(sig) + " out of range");
    uint64_t bit = uint64_t{1} << (sig - 1);
    auto caught = mask_of(status, "SigCgt");
    auto ignored = mask_of(status, "SigIgn");
    auto blocked = mask_of(status, "SigBlk");
    if (!caught) return caught.error();
    if (!ignored) return ignored.error();
    if (!blocked) return blocked.error();
    SignalDisposition d;
    d.caught = *caught & bit;
    d.ignored = *ignored & bit;
    d.blocked = *blocked & bit;
    d.would_end_it = default_action_ends(sig) && !d.caught && !d.ignored && !d.blocked;
    return d;
}

Result<SignalDisposition> read_signal_disposition(const std::filesystem::path& procfs, pid_t pid,
                                                  int sig) {
    auto status = read_file(procfs / std::to_string(pid) / "status");
    if (!status) return status.error();
    return parse_signal_disposition(*status, sig);
}

}  // namespace infervisor
