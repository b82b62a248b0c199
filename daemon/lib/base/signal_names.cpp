#include "base/signal_names.h"

#include <string.h>  // sigabbrev_np (glibc 2.32+)

#include <cctype>
#include <charconv>
#include <csignal>
#include <utility>

namespace infervisor {

namespace {

// Names glibc does not give (sigabbrev_np has one name per number) but that
// people write: kill -l says IO for 29, where glibc says POLL.
constexpr std::pair<const char*, int> kAliases[] = {
    {"IO", SIGIO},
    {"IOT", SIGABRT},
    {"CLD", SIGCHLD},
};

}  // namespace

std::optional<int> parse_signal(std::string_view text) {
    int number = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (ec == std::errc() && ptr == text.data() + text.size()) {
        if (number >= 1 && number <= SIGRTMAX) return number;
        return std::nullopt;
    }
    std::string upper;
    for (char c : text) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    std::string_view name = upper;
    if (name.substr(0, 3) == "SIG") name.remove_prefix(3);
    if (name.empty()) return std::nullopt;
    for (int sig = 1; sig < SIGRTMIN; ++sig)
        if (const char* abbrev = ::sigabbrev_np(sig); abbrev && name == abbrev) return sig;
    for (auto [alias, sig] : kAliases)
        if (name == alias) return sig;
    return std::nullopt;
}

std::string signal_name(int sig) {
    if (sig == SIGIO) return "SIGIO";  // as kill -l and most people name it, not POLL
    if (const char* abbrev = ::sigabbrev_np(sig)) return std::string("SIG") + abbrev;
    return "SIG" + std::to_string(sig);
}

}  // namespace infervisor
