#include "options.h"

#include <signal.h>
#include <string.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace example_worker {

namespace {

constexpr const char* kUsage = R"USAGE(Usage: infervisor-example-worker [OPTION]...
A fake model server for testing infervisor. It speaks the sd_notify protocol
on $NOTIFY_SOCKET (path, or abstract when it starts with '@') without libsystemd.

Lifecycle (times count from process start):
  --name NAME               name in output lines (default: $INFERVISOR_WORKER, else "example")
  --load-ms N               "load the model" for N ms before becoming ready (default 0)
  --model-mb M              then allocate and touch M MiB, so it is resident (default 0);
                            then send READY=1 and STATUS=serving
  --serve-interval-ms N     every N ms print "NAME: served request K (rss=X MiB)" and send
                            STATUS=served K requests (default 1000)
                            If $WATCHDOG_USEC is set, WATCHDOG=1 is sent every half of it.
  --heartbeat-ms N          send WATCHDOG=1 every N ms whatever $WATCHDOG_USEC says (a
                            worker that sends heartbeats on its own)

Health endpoint, for HTTP probes:
  --http-port N             listen on 127.0.0.1:N; GET /health answers 503 while loading and
                            200 once serving (other paths 404). It is served from the worker's
                            own loop, so after --spin-after-ms it stops answering

Misbehaviour, to exercise the supervisor:
  --leak-mb-per-s R         allocate and touch R MiB per second, forever (context explosion)
  --leak-after-ms N         with --leak-mb-per-s: serve steadily for N ms after ready first
  --leak-max-mb N           with --leak-mb-per-s: stop after N MiB and say "leak done" (a
                            second model loaded at that rate; a batch job's working set)
  --spin-after-ms N         after N ms spin in a busy loop: no output, no heartbeats, no
                            health answers (infinite loop); SIGTERM then kills it (default
                            action)
  --crash-after-ms N        after N ms exit with the --exit-code
  --exit-after-requests N   after serving request N say "done" and exit 0 (a batch job
                            that finishes its work)
  --exit-code C             exit code for --crash-after-ms (default 1)
  --abort                   with --crash-after-ms: abort() instead of exiting
  --ignore-sigterm          ignore SIGTERM
  --double-fork             at start, leave behind a detached grandchild (setsid, double fork)
                            that prints "NAME: orphan grandchild pid P" and sleeps forever,
                            ignoring SIGTERM: only killing the cgroup gets rid of it
  --tmp-file NAME           write a "model file" NAME into $TMPDIR (default /tmp; an absolute
                            NAME is used as is) at start and re-read it every serve tick;
                            exit 66 if it has vanished (the temp-file trap)
  --hold-tmp-file HOW       with --tmp-file: keep it held for the whole run, HOW = open (a
                            file descriptor) or map (a shared mapping, its descriptor closed)

Memory, for policy tests and benchmarks:
  --touch-model             on every serve tick read one byte of each page of the model (and
                            of a burst), as an inference pass reads all its weights: a model
                            swapped out comes back in (swap-in), so workers that overcommit
                            the host thrash it
  --burst-mb M              on SIGUSR2 allocate and touch M MiB at once (a sudden spike that
                            crosses a memory threshold at a known moment); on SIGHUP free
                            it again (the worker shrinks back)
  --burst-stamp FILE        with --burst-mb: write "start NS" before the burst and "end NS"
                            after it into FILE (CLOCK_MONOTONIC nanoseconds), each line with
                            its own write(2); a relative FILE is in $INFERVISOR_WORKDIR
                            (else the current directory)

Checkpoints:
  --checkpoint-signal SIG   on SIG (default SIGUSR1) write $INFERVISOR_CHECKPOINT_DIR/checkpoint
                            (served=K) and send CHECKPOINT=1
  On start, if $INFERVISOR_RESTORE_FROM names a checkpoint file (or a directory holding one),
  the worker says it resumed from it and continues counting from there.

SIGTERM (unless ignored): print "NAME: stopping", send STOPPING=1, exit 0.
Exit codes: 0 stopped by SIGTERM, C from --exit-code, 66 model file vanished,
73 model file could not be written, 71 health endpoint could not listen, 2 bad usage.
  --help                    show this help
)USAGE";

[[noreturn]] void usage_error(const std::string& message) {
    std::fprintf(stderr, "infervisor-example-worker: %s (try --help)\n", message.c_str());
    std::exit(2);
}

long parse_long(std::string_view option, const std::string& text) {
    char* end = nullptr;
    errno = 0;
    long value = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || value < 0)
        usage_error(std::string(option) + ": expected a non-negative integer, got '" + text + "'");
    return value;
}

double parse_double(std::string_view option, const std::string& text) {
    char* end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(value >= 0))
        usage_error(std::string(option) + ": expected a non-negative number, got '" + text + "'");
    return value;
}

std::string parse_hold(std::string_view option, const std::string& text) {
    if (text != "open" && text != "map")
        usage_error(std::string(option) + ": expected open or map, got '" + text + "'");
    return text;
}

int parse_signal(std::string_view option, const std::string& text) {
    std::string name = text;
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (name.rfind("SIG", 0) == 0) name.erase(0, 3);
    for (int sig = 1; sig < SIGRTMIN; ++sig) {
        const char* abbrev = ::sigabbrev_np(sig);
        if (abbrev && name == abbrev && sig != SIGKILL && sig != SIGSTOP) return sig;
    }
    char* end = nullptr;
    long number = std::strtol(text.c_str(), &end, 10);
    if (!text.empty() && *end == '\0' && number > 0 && number <= SIGRTMAX && number != SIGKILL &&
        number != SIGSTOP)
        return static_cast<int>(number);
    usage_error(std::string(option) + ": not a catchable signal: '" + text + "'");
}

// Options taking a value accept "--opt VALUE" and "--opt=VALUE".
class ArgCursor {
  public:
    ArgCursor(int argc, char** argv) : argc_(argc), argv_(argv) {}
    bool next() {
        if (++index_ >= argc_) return false;
        std::string_view arg = argv_[index_];
        size_t eq = arg.find('=');
        option_ = std::string(arg.substr(0, eq));
        inline_value_ = eq == std::string_view::npos
                            ? std::nullopt
                            : std::optional(std::string(arg.substr(eq + 1)));
        return true;
    }
    const std::string& option() const { return option_; }
    std::string value() {
        if (inline_value_) return *inline_value_;
        if (++index_ >= argc_) usage_error(option_ + " needs a value");
        return argv_[index_];
    }
    void no_value() const {
        if (inline_value_) usage_error(option_ + " takes no value");
    }

  private:
    int argc_;
    char** argv_;
    int index_ = 0;
    std::string option_;
    std::optional<std::string> inline_value_;
};

bool parse_flag(ArgCursor& args, Options& o) {
    const std::string& opt = args.option();
    bool* flag = opt == "--abort"            ? &o.abort
                 : opt == "--ignore-sigterm" ? &o.ignore_sigterm
                 : opt == "--double-fork"    ? &o.double_fork
                 : opt == "--touch-model"    ? &o.touch_model
                                             : nullptr;
    if (!flag) return false;
    args.no_value();
    *flag = true;
    return true;
}

bool parse_valued(ArgCursor& args, Options& o) {
    const std::string& opt = args.option();
    if (opt == "--name")
        o.name = args.value();
    else if (opt == "--load-ms")
        o.load_ms = parse_long(opt, args.value());
    else if (opt == "--model-mb")
        o.model_mb = parse_long(opt, args.value());
    else if (opt == "--serve-interval-ms")
        o.serve_interval_ms = parse_long(opt, args.value());
    else if (opt == "--leak-mb-per-s")
        o.leak_mb_per_s = parse_double(opt, args.value());
    else if (opt == "--leak-after-ms")
        o.leak_after_ms = parse_long(opt, args.value());
    else if (opt == "--leak-max-mb")
        o.leak_max_mb = parse_long(opt, args.value());
    else if (opt == "--spin-after-ms")
        o.spin_after_ms = parse_long(opt, args.value());
    else if (opt == "--heartbeat-ms")
        o.heartbeat_ms = parse_long(opt, args.value());
    else if (opt == "--crash-after-ms")
        o.crash_after_ms = parse_long(opt, args.value());
    else if (opt == "--exit-code")
        o.exit_code = static_cast<int>(parse_long(opt, args.value()) & 0xff);
    else if (opt == "--checkpoint-signal")
        o.checkpoint_signal = parse_signal(opt, args.value());
    else if (opt == "--tmp-file")
        o.tmp_file = args.value();
    else if (opt == "--hold-tmp-file")
        o.hold_tmp_file = parse_hold(opt, args.value());
    else if (opt == "--burst-mb")
        o.burst_mb = parse_long(opt, args.value());
    else if (opt == "--burst-stamp")
        o.burst_stamp = args.value();
    else if (opt == "--http-port")
        o.http_port = static_cast<int>(parse_long(opt, args.value()));
    else if (opt == "--exit-after-requests")
        o.exit_after_requests = parse_long(opt, args.value());
    else
        return false;
    return true;
}

}  // namespace

Options parse_options(int argc, char** argv) {
    Options o;
    const char* env_name = std::getenv("INFERVISOR_WORKER");
    o.name = env_name && *env_name ? env_name : "example";
    o.checkpoint_signal = SIGUSR1;
    ArgCursor args(argc, argv);
    while (args.next()) {
        if (args.option() == "--help" || args.option() == "-h") {
            std::fputs(kUsage, stdout);
            std::exit(0);
        }
        if (!parse_flag(args, o) && !parse_valued(args, o))
            usage_error("unknown option '" + args.option() + "'");
    }
    if (o.serve_interval_ms == 0) usage_error("--serve-interval-ms must be positive");
    if (!o.hold_tmp_file.empty() && o.tmp_file.empty())
        usage_error("--hold-tmp-file needs --tmp-file");
    if (o.http_port > 65535) usage_error("--http-port must be at most 65535");
    if (o.abort && !o.crash_after_ms) usage_error("--abort needs --crash-after-ms");
    if (!o.burst_stamp.empty() && o.burst_mb == 0) usage_error("--burst-stamp needs --burst-mb");
    if (o.burst_mb > 0 && o.checkpoint_signal == SIGUSR2)
        usage_error("--burst-mb takes SIGUSR2: choose another --checkpoint-signal");
    return o;
}

}  // namespace example_worker
