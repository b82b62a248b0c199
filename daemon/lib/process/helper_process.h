// run_helper: one piece of work done in a short-lived child process instead
// of in the daemon.
//
// Why: the daemon is root, multi-threaded and mlockall'd. Work that any
// local user can ask for (checking a configuration text), that runs code
// the daemon does not want in its own address space (a vendor library such
// as libcuda), or that is needed rarely (a TLS stack) costs the daemon
// memory it never gives back, locked, and runs with all of root's rights. A
// helper has its own address space (its memory leaves with it), a memory
// limit, a deadline, no inherited fds, none of the daemon's supervisor
// capabilities, no_new_privs, and, for work done on behalf of a caller, the
// caller's uid, gid and groups, so that what it touches it touches with the
// caller's rights.
//
// How: spawn_process (process/spawn.h): clone, then only async-signal-safe
// steps in the child (stdio, rlimits, credentials with raw system calls,
// close-on-exec for every other fd), then execve. Nothing of the daemon's
// code runs in the forked copy of this multi-threaded process. The program
// is usually the daemon's own binary, /proc/self/exe (the very image that
// runs, even when an upgrade has replaced the file on disk), in a hidden
// helper mode (app/helper_mode.h: `infervisord --internal-helper NAME`);
// any absolute path works (tests use small programs).
//
// Contract of run_helper(request): writes request.input to the helper's
// stdin and closes it, collects its stdout (at most max_output bytes) and
// the last kMaxDiagnostics bytes of its stderr, and returns once the helper
// has exited and been reaped, always: past `deadline` it is killed
// (SIGKILL) and reaped. Blocking: call it from a background thread (e.g. a
// ConfigLoadRunner job), never from the event loop. Thread-safe; nothing is
// shared between calls.
//
// The helper's side: a helper that runs out of memory under its limit
// should exit with kHelperExitOutOfMemory (run_helper_main() does that for
// std::bad_alloc), so that the caller can tell "too big" from a crash.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "process/exit_status.h"

namespace infervisor {

inline constexpr const char* kSelfExe = "/proc/self/exe";
// argv[1] of the daemon's binary in helper mode; argv[2] names the helper.
inline constexpr const char* kHelperModeFlag = "--internal-helper";
inline constexpr int kHelperExitOutOfMemory = 86;

// Whom the helper runs as. The supplementary groups replace the daemon's.
struct HelperIdentity {
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;
};

struct HelperRequest {
    std::vector<std::string> argv;         // argv[0]: an absolute path (kSelfExe for the daemon)
    std::vector<std::string> environment;  // the whole environment; nothing inherited
    std::string input;                     // its stdin, then EOF
    // nullopt: the daemon's own credentials (root), less the supervisor
    // capabilities that spawn_process drops for every child.
    std::optional<HelperIdentity> identity;
    std::uint64_t memory_limit = std::uint64_t{256} << 20;  // RLIMIT_AS; 0: none
    Duration deadline = std::chrono::seconds(10);           // then SIGKILL; zero: none
    std::size_t max_output = std::size_t{4} << 20;          // more stdout: killed
    // The host's OOM killer should pick a helper before anything else.
    int oom_score_adj = 1000;
};

struct HelperResult {
    enum class Outcome {
        succeeded,         // exited with 0; `output` is its answer
        failed,            // exited with another code
        out_of_memory,     // exited with kHelperExitOutOfMemory
        crashed,           // killed by a signal it was not sent by us
        timed_out,         // killed past its deadline
        output_too_large,  // wrote more than max_output; killed
        not_started,       // spawn failed (`what` says why)
    };
    static constexpr std::size_t kMaxDiagnostics = 4096;

    Outcome outcome = Outcome::not_started;
    std::string output;       // its stdout
    std::string diagnostics;  // the end of its stderr
    std::optional<ExitStatus> status;
    std::string what;  // for not_started: the spawn error

    bool ok() const { return outcome == Outcome::succeeded; }
    // For a reader: "ran out of memory (limit 256 MiB)", "killed after its
    // deadline of 10s", "exited with code 2: <the end of its stderr>".
    std::string describe(const HelperRequest& request) const;
};

HelperResult run_helper(const HelperRequest& request);

// The helper's main: runs `body`, mapping std::bad_alloc to
// kHelperExitOutOfMemory and any other exception to exit code 70, each with
// a line on stderr.
int run_helper_main(const std::function<int()>& body);

}  // namespace infervisor
