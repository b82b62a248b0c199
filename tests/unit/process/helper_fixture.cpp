// helper-fixture: a stand-in for a helper program (process/helper_process.h)
// in tests of run_helper. One mode per argument:
//   echo            copy stdin to stdout
//   allocate MIB    allocate and touch MIB MiB (std::bad_alloc under a limit)
//   hang            sleep until killed
//   ids             "uid euid suid gid egid sgid" then the supplementary groups
//   fds             the open fds, one per line
//   flood           write to stdout without end
//   ignore-input    exit 0 at once, reading nothing
//   complain        "something broke" on stderr, exit 3
#include <dirent.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "process/helper_process.h"

namespace {

int echo() {
    char buffer[65536];
    ssize_t n;
    while ((n = ::read(0, buffer, sizeof buffer)) > 0)
        if (::write(1, buffer, static_cast<size_t>(n)) != n) return 1;
    return 0;
}

int allocate(long mib) {
    std::vector<std::vector<char>> blocks;
    for (long i = 0; i < mib; ++i) blocks.emplace_back(std::size_t{1} << 20, 'x');
    std::printf("allocated %zu MiB\n", blocks.size());
    return 0;
}

int ids() {
    uid_t r, e, s;
    gid_t rg, eg, sg;
    getresuid(&r, &e, &s);
    getresgid(&rg, &eg, &sg);
    std::printf("%u %u %u %u %u %u\n", r, e, s, rg, eg, sg);
    gid_t groups[256];
    int n = getgroups(256, groups);
    for (int i = 0; i < n; ++i) std::printf("%u\n", groups[i]);
    return 0;
}

int fds() {
    DIR* dir = opendir("/proc/self/fd");
    if (!dir) return 1;
    int own = dirfd(dir);
    while (dirent* e = readdir(dir)) {
        if (e->d_name[0] == '.' || std::atoi(e->d_name) == own) continue;
        std::printf("%s\n", e->d_name);
    }
    closedir(dir);
    return 0;
}

int flood() {
    std::string chunk(65536, 'y');
    for (;;)
        if (::write(1, chunk.data(), chunk.size()) < 0) return 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    std::string mode = argv[1];
    return infervisor::run_helper_main([&] {
        if (mode == "echo") return echo();
        if (mode == "allocate" && argc == 3) return allocate(std::atol(argv[2]));
        if (mode == "hang") {
            for (;;) ::pause();
        }
        if (mode == "ids") return ids();
        if (mode == "fds") return fds();
        if (mode == "flood") return flood();
        if (mode == "ignore-input") return 0;
        if (mode == "complain") {
            std::fputs("something broke\n", stderr);
            return 3;
        }
        return 2;
    });
}
