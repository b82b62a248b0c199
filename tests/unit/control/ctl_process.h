// Runs the real infervisorctl (path from $INFERVISORCTL) as a child process,
// capturing its output and exit code, optionally as uid 65534 or on a pty.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace infervisor::testing {

struct CtlResult {
    int exit_code = -1;  // -1: killed or could not run
    std::string out;
    std::string err;
};

struct CtlOptions {
    bool as_nobody = false;
    bool stdout_on_pty = false;  // stdout (and stderr) a terminal
    bool stdin_on_pty = false;   // stdin too: stdin_text is typed into the terminal
    std::string stdin_text;
    std::map<std::string, std::string> env;  // added to a minimal environment
};

CtlResult run_ctl(const std::vector<std::string>& args, const CtlOptions& options = {});

// Starts infervisorctl with stdout on a pipe and leaves it running.
struct RunningCtl {
    pid_t pid = -1;
    int out_fd = -1;
    int err_fd = -1;
    // Reads one line (bounded wait, 20 s); "" when none came.
    std::string read_line();
    // Waits (20 s at most) for it to end by itself: its exit code, the rest
    // of its stdout and its stderr.
    CtlResult wait();
    // SIGTERMs and reaps it.
    void stop();
};
RunningCtl start_ctl(const std::vector<std::string>& args);

}  // namespace infervisor::testing
