// write_textfile_atomically (metrics/textfile_writer.h). Issue 26, defect
// 11: under the unit's UMask=0077 the file came out 0600, and node_exporter
// (user prometheus) could not read it.
#include "metrics/textfile_writer.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/temp_dir.h"

namespace infervisor {
namespace {

using testing::TempDir;

class UmaskGuard {
  public:
    explicit UmaskGuard(mode_t mask) : saved_(::umask(mask)) {}
    ~UmaskGuard() { ::umask(saved_); }

  private:
    mode_t saved_;
};

TEST(TextfileWriter, TheFileIsWorldReadableUnderTheDaemonsUmask) {
    TempDir dir;
    ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
    auto path = dir.path() / "infervisor.prom";
    {
        UmaskGuard daemon_umask(0077);
        ASSERT_TRUE(write_textfile_atomically(path, "up 1\n").ok());
    }
    struct stat st;
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0644u);
    EXPECT_EQ(testing::slurp(path), "up 1\n");

    // Read as another user, as node_exporter does.
    if (::geteuid() != 0) GTEST_SKIP() << "reading as another uid needs root";
    pid_t pid = ::fork();
    if (pid == 0) {
        if (::setgroups(0, nullptr) < 0 || ::setresgid(65534, 65534, 65534) < 0 ||
            ::setresuid(65534, 65534, 65534) < 0)
            ::_exit(100);
        ::_exit(::open(path.c_str(), O_RDONLY) >= 0 ? 0 : 1);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace infervisor
