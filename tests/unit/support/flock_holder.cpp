#include "support/flock_holder.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace infervisor::testing {

FlockHolder::FlockHolder(const std::filesystem::path& dir) {
    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) < 0) {
        ADD_FAILURE() << "pipe2 failed";
        return;
    }
    pid_ = ::fork();
    if (pid_ == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
        char ok = (fd >= 0 && ::flock(fd, LOCK_EX) == 0) ? '1' : '0';
        (void)!::write(ready[1], &ok, 1);
        for (;;) ::pause();
    }
    ::close(ready[1]);
    char ok = '0';
    if (::read(ready[0], &ok, 1) != 1 || ok != '1') ADD_FAILURE() << "could not lock " << dir;
    ::close(ready[0]);
}

FlockHolder::~FlockHolder() { release(); }

void FlockHolder::release() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
}

}  // namespace infervisor::testing
