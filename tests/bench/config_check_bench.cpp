// config_check_bench: what `Validate` (`infervisorctl config check`) costs
// for the hostile inputs of issue 10, defect 1: time to parse and validate,
// the daemon's peak RSS growth, and the number of errors reported.
//
//   config-check-bench            every shape at the sizes
//   config-check-bench SHAPE N    one shape (extra-dirs, repeated-dir,
//                                 unknown-groups, workers, shared-workdir,
//                                 long-key, environment) at size N
//
// Each case runs in a child process so that its peak RSS is its own.
// Figures only; nothing is asserted.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>

#include "config/config_loader.h"
#include "support/hostile_config.h"

using namespace infervisor;

namespace {

using Generator = std::function<std::string(std::size_t)>;

const std::map<std::string, Generator>& shapes() {
    static const std::map<std::string, Generator> all = {
        {"extra-dirs", testing::config_with_extra_dirs},
        {"repeated-dir", testing::config_with_repeated_extra_dir},
        {"unknown-groups", testing::config_with_unknown_groups},
        {"workers", testing::config_with_workers},
        {"shared-workdir", testing::config_with_shared_workdir},
        {"long-key", testing::config_with_long_unknown_key},
        {"environment", testing::config_with_environment},
    };
    return all;
}

long max_rss_kib() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

void run_case(const std::string& shape, std::size_t n) {
    pid_t child = fork();
    if (child == 0) {
        std::string text = shapes().at(shape)(n);
        long before = max_rss_kib();
        auto start = std::chrono::steady_clock::now();
        auto loaded = load_config_text(text, "hostile.yaml");
        double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::string formatted = loaded.errors.format();
        std::printf(
            "%-15s n=%-7zu %8zu KiB text  %8.3f s  peak RSS +%6ld MiB  %zu errors kept, "
            "%zu bytes of messages\n",
            shape.c_str(), n, text.size() / 1024, seconds, (max_rss_kib() - before) / 1024,
            loaded.errors.all().size(), formatted.size());
        std::fflush(stdout);
        _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 3) {
        if (!shapes().count(argv[1])) {
            std::fprintf(stderr, "unknown shape %s\n", argv[1]);
            return 2;
        }
        run_case(argv[1], std::strtoull(argv[2], nullptr, 10));
        return 0;
    }
    run_case("extra-dirs", 50000);
    run_case("repeated-dir", 4000);
    run_case("unknown-groups", 20000);
    run_case("workers", 5000);
    run_case("shared-workdir", 3000);
    run_case("long-key", 1000000);
    run_case("environment", 100000);
    run_case("workers", 1024);
    return 0;
}
