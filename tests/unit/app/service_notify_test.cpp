#include "app/service_notify.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "base/unique_fd.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

struct ScopedEnv {
    ScopedEnv(const char* name, const std::string& value) : name_(name) {
        ::setenv(name, value.c_str(), 1);
    }
    ~ScopedEnv() { ::unsetenv(name_); }
    const char* name_;
};

// A datagram socket at `address` (a path, or "@name" for an abstract one).
UniqueFd listener(const std::string& address) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, address.data(), address.size());
    socklen_t length = offsetof(sockaddr_un, sun_path) + address.size();
    if (address[0] == '@')
        a.sun_path[0] = '\0';
    else
        ++length;
    EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), length), 0) << std::strerror(errno);
    return fd;
}

std::string receive(int fd) {
    char buffer[512];
    ssize_t n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
    return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "";
}

TEST(ServiceNotify, SendsTheStateToNotifySocket) {
    testing::TempDir dir;
    std::string path = (dir.path() / "notify").string();
    UniqueFd manager = listener(path);
    ScopedEnv env("NOTIFY_SOCKET", path);
    auto sent = notify_service_manager("READY=1\nSTATUS=supervising 2 worker(s)");
    ASSERT_TRUE(sent.ok()) << sent.error().message();
    EXPECT_TRUE(*sent);
    EXPECT_EQ(receive(manager.get()), "READY=1\nSTATUS=supervising 2 worker(s)");
    // Left in the environment for a re-executed daemon.
    EXPECT_NE(std::getenv("NOTIFY_SOCKET"), nullptr);
}

TEST(ServiceNotify, ReachesAnAbstractSocket) {
    std::string name = "@infervisor-notify-test-" + std::to_string(::getpid());
    UniqueFd manager = listener(name);
    ScopedEnv env("NOTIFY_SOCKET", name);
    auto sent = notify_service_manager("WATCHDOG=1");
    ASSERT_TRUE(sent.ok()) << sent.error().message();
    EXPECT_EQ(receive(manager.get()), "WATCHDOG=1");
}

size_t open_descriptors() {
    size_t n = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
        ++n;
    return n;
}

TEST(ServiceNotify, ManyMessagesToTwoManagersGoThroughOneKeptSocket) {
    testing::TempDir dir;
    UniqueFd first = listener((dir.path() / "first").string());
    UniqueFd second = listener((dir.path() / "second").string());
    {  // the first message makes the socket
        ScopedEnv env("NOTIFY_SOCKET", (dir.path() / "first").string());
        ASSERT_TRUE(notify_service_manager("WATCHDOG=1").ok());
        EXPECT_EQ(receive(first.get()), "WATCHDOG=1");
    }
    size_t before = open_descriptors();
    for (int i = 0; i < 20; ++i) {
        ScopedEnv env("NOTIFY_SOCKET", (dir.path() / (i % 2 ? "first" : "second")).string());
        ASSERT_TRUE(notify_service_manager("WATCHDOG=1").ok());
    }
    EXPECT_EQ(open_descriptors(), before) << "no descriptor per message, none left behind";
    int got_first = 0, got_second = 0;
    while (receive(first.get()) == "WATCHDOG=1") ++got_first;
    while (receive(second.get()) == "WATCHDOG=1") ++got_second;
    EXPECT_EQ(got_first, 10);
    EXPECT_EQ(got_second, 10);
}

TEST(ServiceNotify, NothingIsSentWithoutAManagerAndABadAddressIsAnError) {
    ::unsetenv("NOTIFY_SOCKET");
    auto unset = notify_service_manager("READY=1");
    ASSERT_TRUE(unset.ok());
    EXPECT_FALSE(*unset);
    ScopedEnv env("NOTIFY_SOCKET", "relative/path");
    EXPECT_FALSE(notify_service_manager("READY=1").ok());
}

TEST(ServiceNotify, TheWatchdogIntervalIsForThisProcessOnly) {
    ::unsetenv("WATCHDOG_PID");
    {
        ScopedEnv usec("WATCHDOG_USEC", "30000000");
        ASSERT_TRUE(service_watchdog_interval().has_value());
        EXPECT_EQ(service_watchdog_interval()->count(), 30000000);
        {
            ScopedEnv pid("WATCHDOG_PID", std::to_string(::getpid()));
            EXPECT_TRUE(service_watchdog_interval().has_value());
        }
        {
            ScopedEnv pid("WATCHDOG_PID", std::to_string(::getpid() + 1));
            EXPECT_FALSE(service_watchdog_interval().has_value());
        }
    }
    EXPECT_FALSE(service_watchdog_interval().has_value());
    ScopedEnv bad("WATCHDOG_USEC", "30s");
    EXPECT_FALSE(service_watchdog_interval().has_value());
}

}  // namespace
}  // namespace infervisor
