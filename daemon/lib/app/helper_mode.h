// The daemon's binary in helper mode: `infervisord --internal-helper NAME
// ARGS...`, started by run_helper() (process/helper_process.h) as a
// short-lived child, never by a person (it is not in --help). Dispatched
// from main() before anything of the daemon starts: no options parsed, no
// logging set up, no mlockall, no threads.
//
// Helpers: `config-check FILE-NAME` (config/config_check_protocol.h);
// `cuda-checkpoint LIBRARY ACTION TIMEOUT_MS PID...` (gpu/cuda_checkpoint.h:
// libcuda is loaded in the helper, never in the daemon).
// Each answers on its stdout; fd 1 is pointed at stderr while it works, so
// that a stray log line cannot corrupt the answer.
#pragma once

namespace infervisor {

// True when argv asks for helper mode (argv[1] is kHelperModeFlag).
bool is_helper_mode(int argc, char** argv);
// Runs the named helper; its exit code (2: no such helper or wrong arguments).
int run_helper_mode(int argc, char** argv);

}  // namespace infervisor
