// top [--iterations N]: the status table, redrawn every second until q or Ctrl-C.
#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <ctime>
#include <iostream>
#include <memory>
#include <optional>

#include "commands.h"
#include "control/status_json.h"
#include "status_table.h"

namespace infervisor::cli {

namespace {

using nlohmann::json;

volatile std::sig_atomic_t interrupted = 0;
void on_interrupt(int) { interrupted = 1; }

// Keys without Enter and without echo while top runs; restored on any exit.
class RawKeyboard {
  public:
    RawKeyboard() {
        if (::tcgetattr(STDIN_FILENO, &saved_) != 0) return;
        termios raw = saved_;
        raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        active_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    ~RawKeyboard() {
        if (active_) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
    }
    RawKeyboard(const RawKeyboard&) = delete;
    RawKeyboard& operator=(const RawKeyboard&) = delete;

  private:
    termios saved_{};
    bool active_ = false;
};

// Waits up to a second; true when the user asked to quit (q, Q, Ctrl-C).
bool wait_for_quit(bool keyboard) {
    pollfd pfd{STDIN_FILENO, POLLIN, 0};
    int rc = ::poll(&pfd, keyboard ? 1 : 0, 1000);
    if (interrupted) return true;
    if (rc <= 0) return false;
    char key = 0;
    if (::read(STDIN_FILENO, &key, 1) != 1) return true;  // stdin closed
    return key == 'q' || key == 'Q';
}

// Draws one screen; a failed List is returned, not printed: the screen it
// would be printed on is about to be left.
std::optional<Result<VarlinkReply>> draw(VarlinkClient& client, const CliContext& ctx,
                                         bool terminal, TableWidth width) {
    auto reply = client.call("io.infervisor.supervisor.List");
    if (!reply || reply->failed()) return reply;
    std::vector<WorkerView> workers;
    for (const auto& item : reply->parameters.value("workers", json::array()))
        workers.push_back(worker_view_from_json(item));
    if (terminal) std::cout << "\x1b[H\x1b[2J";  // home, clear
    std::time_t now = std::time(nullptr);
    char clock[16];
    std::strftime(clock, sizeof clock, "%H:%M:%S", std::localtime(&now));
    std::cout << "infervisor: " << workers.size() << " workers, " << clock
              << (terminal ? "   (q to quit)" : "") << "\n\n";
    print_status_table(std::cout, workers, ctx.colour, ctx.legend, width);
    if (width == TableWidth::narrow && ctx.legend) print_status_notes(std::cout, workers);
    if (auto cards = host_gpus(client); cards && ctx.legend) print_gpu_cards(std::cout, *cards);
    std::cout << std::flush;
    return std::nullopt;
}

// After the screen is restored: why top ended, if not by the user. The
// daemon's stop or restart is expected (said, exit 0), as for events -f.
void report(CliContext& ctx, const Result<VarlinkReply>& failed) {
    if (!failed && (failed.error().code == ECONNRESET || failed.error().code == EPIPE)) {
        std::cerr << "-- infervisord closed the connection (it stopped or restarted) --\n";
        return;
    }
    if (!failed) return ctx.fail_transport(failed.error());
    ctx.fail_reply(*failed);
}

void run_top(CliContext& ctx, int iterations, TableWidth width) {
    auto client = ctx.connect();
    if (!client) return;
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;  // no SA_RESTART: poll() returns at once
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
    bool terminal = ::isatty(STDOUT_FILENO) == 1;
    bool keyboard = ::isatty(STDIN_FILENO) == 1;
    std::unique_ptr<RawKeyboard> raw;
    if (keyboard) raw = std::make_unique<RawKeyboard>();
    if (terminal) std::cout << "\x1b[?1049h";  // alternate screen
    std::optional<Result<VarlinkReply>> failed;
    for (int i = 0; iterations == 0 || i < iterations; ++i) {
        if ((failed = draw(*client, ctx, terminal, width))) break;
        if (iterations != 0 && i + 1 == iterations) break;
        if (wait_for_quit(keyboard)) break;
    }
    if (terminal) std::cout << "\x1b[?1049l" << std::flush;
    if (failed) report(ctx, *failed);
}

}  // namespace

void add_top_command(CLI::App& app, CliContext& ctx) {
    auto iterations = std::make_shared<int>(0);
    auto output = std::make_shared<std::string>();
    auto* top =
        app.add_subcommand("top", "Watch the workers: the status table, redrawn every second");
    add_count_option(top, "-i,--iterations", *iterations,
                     "Stop after N redraws (default 0: until q)", 0, 1000000);
    top->add_option("-o,--output", *output, "'wide': every column, as status -o wide")
        ->check(CLI::IsMember({"wide"}));
    top->footer(
        "Press q or Ctrl-C to quit.\n\n"
        "Examples:\n  infervisorctl top\n  infervisorctl top --iterations 1 > snapshot.txt");
    top->callback([&ctx, iterations, output] {
        if (ctx.refuses_json("top", "'infervisorctl status --json' prints the same as JSON"))
            return;
        run_top(ctx, *iterations, *output == "wide" ? TableWidth::wide : TableWidth::narrow);
    });
}

}  // namespace infervisor::cli
