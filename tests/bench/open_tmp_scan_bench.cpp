// What one SharedTmpGuard scan of a worker costs (open_tmp_files.h): a child
// process holds F files open and M mapped under a fresh dir in /tmp (plus
// what any process has: libc, the vdso...) and, for the worst case, X more
// descriptors (a pipe, dup'ed) and X more mappings (one page of a file
// outside /tmp, mapped again and again) that the scan reads and drops, and
// scan_open_tmp_files() of its pid runs R times with the default caps.
// Prints the mean and worst wall time per scan, the fds and maps bytes read.
// Reports figures; asserts nothing.
//
//   open-tmp-scan-bench [FDS [MAPPINGS [RUNS [X]]]]    (defaults 64 16 200 0)
//
// The scan runs on the guard's own thread, never on the event loop; this
// is the thread time one worker costs per sample_interval.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "workdir/open_tmp_files.h"

namespace {

namespace fs = std::filesystem;
using namespace infervisor;

// X descriptors and X mappings that are not under /tmp.
void hold_others(int others) {
    int pipe_fds[2];
    if (others <= 0 || ::pipe(pipe_fds) < 0) return;
    for (int i = 0; i < others; ++i) (void)::dup(pipe_fds[0]);
    int fd = ::open("/proc/self/exe", O_RDONLY);
    for (int i = 0; i < others && fd >= 0; ++i)
        (void)::mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
}

[[noreturn]] void hold(const fs::path& dir, int fds, int mappings, int others, int ready,
                       int release) {
    hold_others(others);
    for (int i = 0; i < fds; ++i) {
        std::string path = (dir / ("open-" + std::to_string(i))).string();
        if (::open(path.c_str(), O_RDWR | O_CREAT, 0600) < 0) ::_exit(1);
    }
    for (int i = 0; i < mappings; ++i) {
        std::string path = (dir / ("map-" + std::to_string(i))).string();
        int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0600);
        if (fd < 0 || ::ftruncate(fd, 4096) < 0) ::_exit(1);
        if (::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED) ::_exit(1);
        ::close(fd);
    }
    char c = 'y';
    (void)!::write(ready, &c, 1);
    (void)!::read(release, &c, 1);
    ::_exit(0);
}

}  // namespace

int main(int argc, char** argv) {
    int fds = argc > 1 ? std::atoi(argv[1]) : 64;
    int mappings = argc > 2 ? std::atoi(argv[2]) : 16;
    int runs = argc > 3 ? std::atoi(argv[3]) : 200;
    int others = argc > 4 ? std::atoi(argv[4]) : 0;
    char tmpl[] = "/tmp/open-tmp-scan-bench-XXXXXX";
    if (!::mkdtemp(tmpl)) return 1;
    fs::path dir = tmpl;
    int ready[2], release[2];
    if (::pipe(ready) < 0 || ::pipe(release) < 0) return 1;
    pid_t child = ::fork();
    if (child == 0) hold(dir, fds, mappings, others, ready[1], release[0]);
    ::close(ready[1]);  // so that a child that failed reads as EOF
    ::close(release[0]);
    char c = 0;
    if (::read(ready[0], &c, 1) != 1) {
        std::fprintf(stderr, "the child could not hold that much (ulimit -n?)\n");
        fs::remove_all(dir);
        return 1;
    }

    std::string ns = own_mount_namespace("/proc");
    OpenTmpFileScan last;
    double total_us = 0, worst_us = 0;
    for (int i = 0; i < runs; ++i) {
        auto start = std::chrono::steady_clock::now();
        last = scan_open_tmp_files("/proc", {child}, ns);
        double us =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                .count();
        total_us += us;
        if (us > worst_us) worst_us = us;
    }
    (void)!::write(release[1], "x", 1);
    ::waitpid(child, nullptr, 0);
    fs::remove_all(dir);
    std::printf(
        "held: %d open, %d mapped, %d other fds and mappings; scan: %zu fds, %zu maps bytes, %zu "
        "paths kept%s\n",
        fds, mappings, others, last.fds, last.maps_bytes, last.files.size(),
        last.truncated ? " (capped)" : "");
    std::printf("per scan: mean %.0f us, worst %.0f us over %d runs\n", total_us / runs, worst_us,
                runs);
    return 0;
}
