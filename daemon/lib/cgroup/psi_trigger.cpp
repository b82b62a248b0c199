#include "cgroup/psi_trigger.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace infervisor {

namespace {

constexpr Duration kMaxWindow{10'000};
constexpr Duration kOldKernelMinWindow{500};
constexpr Duration kUnprivilegedStep{2'000};

// The same stall/window ratio in a different window.
PsiTriggerSpec with_window(const PsiTriggerSpec& spec, Duration window) {
    PsiTriggerSpec out = spec;
    out.window = window;
    out.stall = Duration(spec.stall.count() * window.count() / spec.window.count());
    out.stall = std::clamp(out.stall, Duration(1), window);
    return out;
}

PsiTriggerSpec sanitized(PsiTriggerSpec spec) {
    spec.window = std::clamp(spec.window, Duration(1), kMaxWindow);
    spec.stall = std::clamp(spec.stall, Duration(1), spec.window);
    return spec;
}

Duration nearest_two_second_multiple(Duration window) {
    int64_t steps = (window.count() + kUnprivilegedStep.count() / 2) / kUnprivilegedStep.count();
    return std::clamp(kUnprivilegedStep * steps, kUnprivilegedStep, kMaxWindow);
}

// Returns errno of the write (0 on success).
int try_write(int fd, const std::string& text) {
    ssize_t n;
    do {
        n = ::write(fd, text.c_str(), text.size() + 1);  // with the NUL
    } while (n < 0 && errno == EINTR);
    return n < 0 ? errno : 0;
}

}  // namespace

std::string format_psi_trigger(const PsiTriggerSpec& spec) {
    auto us = [](Duration d) { return std::to_string(d.count() * 1000); };
    return std::string(spec.line == PsiLine::some ? "some " : "full ") + us(spec.stall) + " " +
           us(spec.window);
}

std::vector<PsiTriggerSpec> psi_trigger_candidates(const PsiTriggerSpec& requested) {
    const PsiTriggerSpec first = sanitized(requested);
    std::vector<PsiTriggerSpec> out{first};
    auto add = [&](const PsiTriggerSpec& spec) {
        if (std::find(out.begin(), out.end(), spec) == out.end()) out.push_back(spec);
    };
    if (first.window < kOldKernelMinWindow) add(with_window(first, kOldKernelMinWindow));
    add(with_window(first, nearest_two_second_multiple(first.window)));
    return out;
}

Result<PsiTrigger> open_psi_trigger(const std::filesystem::path& file,
                                    const PsiTriggerSpec& requested) {
    UniqueFd fd(::open(file.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC));
    if (!fd) return errno_error("open " + file.string() + " for a PSI trigger");
    std::string rejected;
    for (const auto& candidate : psi_trigger_candidates(requested)) {
        std::string text = format_psi_trigger(candidate);
        int err = try_write(fd.get(), text);
        if (err == 0) return PsiTrigger{std::move(fd), requested, candidate, rejected};
        if (err != EINVAL && err != EPERM) {
            errno = err;
            return errno_error("write PSI trigger '" + text + "' to " + file.string());
        }
        if (!rejected.empty()) rejected += ", ";
        rejected += text + " (" + strerrorname_np(err) + ")";
    }
    return plain_error("every PSI trigger window was refused by " + file.string() + ": " +
                       rejected);
}

}  // namespace infervisor
