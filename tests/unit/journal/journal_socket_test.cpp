#include "journal/journal_socket.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "support/temp_dir.h"

namespace infervisor {
namespace {

// A socket of `type` bound at `path`, as journald's would be.
UniqueFd bound_socket(const std::string& path, int type) {
    UniqueFd fd(::socket(AF_UNIX, type | SOCK_CLOEXEC, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    return fd;
}

// One datagram, and the descriptor that came with it (-1 when none).
struct Received {
    std::string bytes;
    UniqueFd passed;
};

Received receive(int fd) {
    Received out;
    std::string buffer(1 << 20, '\0');
    iovec part{buffer.data(), buffer.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr message{};
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    ssize_t n = ::recvmsg(fd, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    EXPECT_GE(n, 0) << std::strerror(errno);
    if (n > 0) out.bytes.assign(buffer.data(), static_cast<std::size_t>(n));
    for (cmsghdr* h = CMSG_FIRSTHDR(&message); h; h = CMSG_NXTHDR(&message, h)) {
        if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
        int passed = -1;
        std::memcpy(&passed, CMSG_DATA(h), sizeof passed);
        out.passed.reset(passed);
    }
    return out;
}

TEST(JournalSocket, EncodesPlainFieldsAsLinesAndMultiLineValuesWithTheirLength) {
    std::string entry = encode_journal_entry(
        {"MESSAGE=w1: killed", "INFERVISOR_DETAIL=a\nb", "no equals sign", "=x"});
    std::string expected = "MESSAGE=w1: killed\nINFERVISOR_DETAIL\n";
    expected += std::string("\x03\0\0\0\0\0\0\0", 8);
    expected += "a\nb\n";
    EXPECT_EQ(entry, expected);
}

TEST(JournalSocket, SendsAnEntryAsOneDatagram) {
    testing::TempDir dir;
    std::string path = (dir.path() / "socket").string();
    UniqueFd journal = bound_socket(path, SOCK_DGRAM);
    ASSERT_TRUE(send_journal_entry({"MESSAGE=hello", "PRIORITY=6"}, path.c_str()).ok());
    Received got = receive(journal.get());
    EXPECT_EQ(got.bytes, "MESSAGE=hello\nPRIORITY=6\n");
    EXPECT_FALSE(got.passed);
}

// Larger than a datagram may be: a sealed memfd holds it, as journald
// requires, and the datagram carries only the descriptor.
TEST(JournalSocket, SendsAnEntryTooLargeForADatagramAsASealedMemfd) {
    testing::TempDir dir;
    std::string path = (dir.path() / "socket").string();
    UniqueFd journal = bound_socket(path, SOCK_DGRAM);
    int receive_buffer = 64 << 20;
    ::setsockopt(journal.get(), SOL_SOCKET, SO_RCVBUFFORCE, &receive_buffer, sizeof receive_buffer);
    std::string large = "MESSAGE=" + std::string(16 << 20, 'x');
    auto sent = send_journal_entry({large}, path.c_str());
    ASSERT_TRUE(sent.ok()) << sent.error().message();
    Received got = receive(journal.get());
    ASSERT_TRUE(got.passed);
    EXPECT_TRUE(got.bytes.empty());
    int seals = ::fcntl(got.passed.get(), F_GET_SEALS);
    EXPECT_TRUE(seals & F_SEAL_WRITE);
    EXPECT_TRUE(seals & F_SEAL_SEAL);
    struct stat st {};
    ASSERT_EQ(::fstat(got.passed.get(), &st), 0);
    EXPECT_EQ(static_cast<std::size_t>(st.st_size), large.size() + 1);
    char head[9] = {};
    ASSERT_EQ(::pread(got.passed.get(), head, 8, 0), 8);
    EXPECT_STREQ(head, "MESSAGE=");
}

TEST(JournalSocket, NoJournalIsAnErrorThatNamesTheSocket) {
    testing::TempDir dir;
    std::string path = (dir.path() / "absent").string();
    auto sent = send_journal_entry({"MESSAGE=hello"}, path.c_str());
    ASSERT_FALSE(sent.ok());
    EXPECT_NE(sent.error().message().find(path), std::string::npos) << sent.error().message();
}

TEST(JournalSocket, AStreamStartsWithTheHeaderJournaldReads) {
    testing::TempDir dir;
    std::string path = (dir.path() / "stdout").string();
    UniqueFd journal = bound_socket(path, SOCK_STREAM);
    ASSERT_EQ(::listen(journal.get(), 1), 0);
    auto stream = open_journal_stream("infervisor-worker-w1", 6, path.c_str());
    ASSERT_TRUE(stream.ok()) << stream.error().message();
    UniqueFd peer(::accept4(journal.get(), nullptr, nullptr, SOCK_CLOEXEC));
    ASSERT_TRUE(peer);
    ASSERT_EQ(::write(stream->get(), "first line\n", 11), 11);
    stream->reset();
    std::string got;
    char buffer[256];
    for (ssize_t n; (n = ::read(peer.get(), buffer, sizeof buffer)) > 0;)
        got.append(buffer, static_cast<std::size_t>(n));
    // Identifier, no unit id, priority 6, level prefix on, no forwarding.
    EXPECT_EQ(got, "infervisor-worker-w1\n\n6\n1\n0\n0\n0\nfirst line\n");
}

TEST(JournalSocket, AStreamRefusesAnIdentifierOfTwoLinesOrABadPriority) {
    EXPECT_FALSE(open_journal_stream("a\nb", 6, "/nonexistent").ok());
    EXPECT_FALSE(open_journal_stream("a", 8, "/nonexistent").ok());
}

}  // namespace
}  // namespace infervisor
