#include "control/control_socket.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "control/varlink_client.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

using testing::TempDir;

TEST(ControlSocket, CreatesTheDirectoryAndTheSocketWithItsMode) {
    TempDir dir;
    auto path = dir.path() / "run" / "io.infervisor";
    auto bound = bind_control_socket(path, 0660);
    ASSERT_TRUE(bound.ok()) << bound.error().message();
    struct stat st {};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0660u);
    EXPECT_TRUE(VarlinkClient::connect(path).ok());
}

TEST(ControlSocket, ReplacesAStaleSocket) {
    TempDir dir;
    auto path = dir.path() / "io.infervisor";
    {
        auto old = bind_control_socket(path, 0666);
        ASSERT_TRUE(old.ok());
    }  // its daemon died; the file stayed
    ASSERT_TRUE(std::filesystem::exists(path));
    auto bound = bind_control_socket(path, 0666);
    ASSERT_TRUE(bound.ok()) << bound.error().message();
}

TEST(ControlSocket, RefusesALiveListener) {
    TempDir dir;
    auto path = dir.path() / "io.infervisor";
    auto first = bind_control_socket(path, 0666);
    ASSERT_TRUE(first.ok());
    auto second = bind_control_socket(path, 0666);
    ASSERT_FALSE(second.ok());
    EXPECT_NE(second.error().message().find("another process"), std::string::npos);
    EXPECT_TRUE(VarlinkClient::connect(path).ok());  // the first one is untouched
}

TEST(ControlSocket, NeverReplacesSomethingThatIsNotASocket) {
    TempDir dir;
    auto file = dir.write("io.infervisor", "precious");
    EXPECT_FALSE(bind_control_socket(file, 0666).ok());
    EXPECT_EQ(testing::slurp(file), "precious");
    std::filesystem::create_symlink(file, dir.path() / "link");
    EXPECT_FALSE(bind_control_socket(dir.path() / "link", 0666).ok());
    EXPECT_TRUE(std::filesystem::is_symlink(dir.path() / "link"));
}

TEST(ControlSocket, UnlinksOnlyItsOwnSocket) {
    TempDir dir;
    auto path = dir.path() / "io.infervisor";
    auto first = bind_control_socket(path, 0666);
    ASSERT_TRUE(first.ok());
    // Someone removed it while we ran and another daemon took the name. (Our
    // socket stays open, so its inode cannot be reused for the new one.)
    ASSERT_EQ(::unlink(path.c_str()), 0);
    auto successor = bind_control_socket(path, 0666);
    ASSERT_TRUE(successor.ok());
    unlink_control_socket(path, *first);
    EXPECT_TRUE(std::filesystem::exists(path));
    unlink_control_socket(path, *successor);
    EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(ControlSocket, RejectsPathsTooLongForSockaddr) {
    auto bound = bind_control_socket("/tmp/" + std::string(200, 'x'), 0666);
    ASSERT_FALSE(bound.ok());
    EXPECT_EQ(bound.error().code, ENAMETOOLONG);
}

}  // namespace
}  // namespace infervisor
