#include "app/helper_mode.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"
#include "config/config_check_protocol.h"
#include "gpu/cuda_checkpoint.h"
#include "process/helper_process.h"

namespace infervisor {

bool is_helper_mode(int argc, char** argv) {
    return argc >= 2 && std::string_view(argv[1]) == kHelperModeFlag;
}

int run_helper_mode(int argc, char** argv) {
    if (argc == 3 && std::string_view(argv[2]) == kConfigCheckHelper) {
        UniqueFd answer(::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3));
        if (!answer || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) return 1;
        return run_helper_main(
            [&] { return config_check_helper_main(STDIN_FILENO, answer.get()); });
    }
    if (argc >= 3 && std::string_view(argv[2]) == kCudaCheckpointHelper) {
        UniqueFd answer(::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3));
        if (!answer || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) return 1;
        std::vector<std::string_view> args(argv + 3, argv + argc);
        return run_helper_main([&] { return cuda_checkpoint_helper_main(args, answer.get()); });
    }
    std::fprintf(stderr, "infervisord: %s is for the daemon's own use\n", kHelperModeFlag);
    return 2;
}

}  // namespace infervisor
