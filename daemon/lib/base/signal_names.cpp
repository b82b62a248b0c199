#include "base/signal_names.h"

#include <cctype>
#include <charconv>
#include <csignal>
#include <utility>

namespace infervisor {

namespace {

constexpr std::pair<int, const char*> kSignals[] = {
    {SIGHUP, "HUP"},       {SIGINT, "INT"},   {SIGQUIT, "QUIT"},   {SIGILL, "ILL"},
    {SIGTRAP, "TRAP"},     {SIGABRT, "ABRT"}, {SIGBUS, "BUS"},     {SIGFPE, "FPE"},
    {SIGKILL, "KILL"},     {SIGUSR1, "USR1"}, {SIGSEGV, "SEGV"},   {SIGUSR2, "USR2"},
    {SIGPIPE, "PIPE"},     {SIGALRM, "ALRM"}, {SIGTERM, "TERM"},   {SIGCHLD, "CHLD"},
    {SIGCONT, "CONT"},     {SIGSTOP, "STOP"}, {SIGTSTP, "TSTP"},   {SIGTTIN, "TTIN"},
    {SIGTTOU, "TTOU"},     {SIGURG, "URG"},   {SIGXCPU, "XCPU"},   {SIGXFSZ, "XFSZ"},
    {SIGVTALRM, "VTALRM"}, {SIGPROF, "PROF"}, {SIGWINCH, "WINCH"}, {SIGIO, "IO"},
    {SIGPWR, "PWR"},       {SIGSYS, "SYS"},
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
    for (auto [sig, sig_name] : kSignals)
        if (name == sig_name) return sig;
    return std::nullopt;
}

std::string signal_name(int sig) {
    for (auto [number, name] : kSignals)
        if (number == sig) return std::string("SIG") + name;
    return "SIG" + std::to_string(sig);
}

}  // namespace infervisor
