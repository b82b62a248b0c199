#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "notify/notify_message.h"
#include "notify/notify_socket.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

using ::testing::HasSubstr;

TEST(NotifyMessage, ParsesAssignments) {
    auto m = parse_notify_message("READY=1\nSTATUS=loading model 3/4\nWATCHDOG=1\n");
    ASSERT_TRUE(m.ok());
    EXPECT_TRUE(m->has("READY", "1"));
    EXPECT_TRUE(m->has("WATCHDOG", "1"));
    EXPECT_EQ(*m->get("STATUS"), "loading model 3/4");
    EXPECT_EQ(m->get("MAINPID"), nullptr);
}

TEST(NotifyMessage, RejectsMalformedInputWithAReason) {
    EXPECT_THAT(parse_notify_message("READY").error().what, HasSubstr("without '='"));
    EXPECT_THAT(parse_notify_message("ready=1").error().what, HasSubstr("invalid key"));
    EXPECT_THAT(parse_notify_message("=1").error().what, HasSubstr("invalid key"));
    EXPECT_THAT(parse_notify_message(std::string("READY=1\0x", 9)).error().what, HasSubstr("NUL"));
    EXPECT_THAT(parse_notify_message("STATUS=a\x1b[2Jb").error().what,
                HasSubstr("control characters"));
    EXPECT_THAT(parse_notify_message(std::string(5000, 'A')).error().what, HasSubstr("exceeds"));
    EXPECT_THAT(parse_notify_message("\n\n").error().what, HasSubstr("empty"));
}

int send_to(const std::string& path, const std::string& data) {
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    int r = static_cast<int>(
        sendto(fd, data.data(), data.size(), 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr));
    close(fd);
    return r;
}

TEST(NotifySocket, ReceivesWithKernelCredentials) {
    testing::TempDir dir;
    auto sock = NotifySocket::bind(dir.path() / "w", getuid(), getgid());
    ASSERT_TRUE(sock.ok()) << sock.error().message();
    EXPECT_FALSE(sock->receive()->has_value());  // nothing yet, never blocks
    ASSERT_GT(send_to((dir.path() / "w").string(), "READY=1"), 0);
    auto d = sock->receive();
    ASSERT_TRUE(d.ok() && d->has_value());
    EXPECT_EQ((*d)->data, "READY=1");
    EXPECT_EQ((*d)->pid, getpid());
    EXPECT_FALSE((*d)->truncated);
}

TEST(NotifySocket, FlagsOversizedDatagramsAsTruncated) {
    testing::TempDir dir;
    auto sock = NotifySocket::bind(dir.path() / "w", getuid(), getgid());
    ASSERT_GT(send_to((dir.path() / "w").string(), std::string(9000, 'A')), 0);
    auto d = sock->receive();
    ASSERT_TRUE(d.ok() && d->has_value());
    EXPECT_TRUE((*d)->truncated);
}

TEST(NotifySocket, RefusesToReplaceAFileThatIsNotASocket) {
    testing::TempDir dir;
    auto victim = dir.write("w", "precious");
    auto sock = NotifySocket::bind(victim, getuid(), getgid());
    ASSERT_FALSE(sock.ok());
    EXPECT_THAT(sock.error().what, HasSubstr("not a socket"));
    EXPECT_EQ(testing::slurp(victim), "precious");
}

TEST(NotifySocket, RemovesItsFileWhenDestroyed) {
    testing::TempDir dir;
    { auto sock = NotifySocket::bind(dir.path() / "w", getuid(), getgid()); }
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "w"));
}

TEST(NotifySocket, LeavesASuccessorsSocketAlone) {
    testing::TempDir dir;
    std::optional<NotifySocket> first;
    first.emplace(NotifySocket::bind(dir.path() / "w", getuid(), getgid()).value());
    auto second = NotifySocket::bind(dir.path() / "w", getuid(), getgid());
    ASSERT_TRUE(second.ok());
    first.reset();  // the old one goes after the new one was bound
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "w"));
    ASSERT_GT(send_to((dir.path() / "w").string(), "READY=1"), 0);
    auto d = second->receive();
    ASSERT_TRUE(d.ok() && d->has_value());
}

TEST(ProcessInCgroup, ComparesTheV2Path) {
    testing::TempDir proc;
    proc.write("42/cgroup", "0::/svc/workers/llama\n");
    proc.write("43/cgroup", "0::/svc/workers/llama/sub\n");
    proc.write("44/cgroup", "0::/svc/workers/llama2\n");
    EXPECT_TRUE(process_in_cgroup(proc.path(), 42, "/svc/workers/llama"));
    EXPECT_TRUE(process_in_cgroup(proc.path(), 43, "/svc/workers/llama"));
    EXPECT_FALSE(process_in_cgroup(proc.path(), 44, "/svc/workers/llama"));
    EXPECT_FALSE(process_in_cgroup(proc.path(), 45, "/svc/workers/llama"));
    EXPECT_FALSE(process_in_cgroup(proc.path(), 0, "/svc/workers/llama"));
}

}  // namespace
}  // namespace infervisor
