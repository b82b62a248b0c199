// What criu cannot dump, found before it runs: on parsed /proc text and on
// this test's own process (a real established TCP connection over loopback).
#include "checkpoint/criu_preflight.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/unique_fd.h"

namespace infervisor {
namespace {

CriuView view_with(std::vector<std::pair<int, std::string>> fds,
                   std::vector<std::string> devices = {}) {
    CriuView view;
    view.processes.push_back({42, 0, std::move(fds), std::move(devices)});
    return view;
}

TEST(CriuPreflight, AnOrdinaryWorkerIsFine) {
    auto view = view_with({{0, "/dev/null"},
                           {1, "socket:[1732]"},
                           {2, "socket:[1732]"},
                           {3, "socket:[1740]"},
                           {4, "/srv/models/m.gguf"}});
    view.established_tcp = {999};
    EXPECT_EQ(criu_obstacle(view), std::nullopt);
}

TEST(CriuPreflight, EstablishedTcpIsRefusedWithItsFd) {
    auto view = view_with({{0, "/dev/null"}, {7, "socket:[555]"}});
    view.established_tcp = {555};
    auto why = criu_obstacle(view);
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("pid 42 has an established TCP connection (fd 7)"), std::string::npos)
        << *why;
}

TEST(CriuPreflight, GpuDevicesOpenOrMappedAreRefused) {
    auto open = criu_obstacle(view_with({{5, "/dev/nvidia0"}}));
    ASSERT_TRUE(open);
    EXPECT_NE(open->find("/dev/nvidia0 open (fd 5)"), std::string::npos) << *open;
    auto mapped = criu_obstacle(view_with({}, {"/dev/dri/renderD128"}));
    ASSERT_TRUE(mapped);
    EXPECT_NE(mapped->find("/dev/dri/renderD128 mapped"), std::string::npos) << *mapped;
    EXPECT_TRUE(criu_obstacle(view_with({{3, "/dev/kfd"}})));
    EXPECT_FALSE(criu_obstacle(view_with({{3, "/dev/zero"}}, {"/dev/shm/x"})));
}

TEST(CriuPreflight, SeccompOnBothSidesIsRefused) {
    auto view = view_with({{0, "/dev/null"}});
    view.processes[0].seccomp = 2;
    EXPECT_EQ(criu_obstacle(view), std::nullopt);  // criu can suspend the worker's filter
    view.own_seccomp = 2;
    auto why = criu_obstacle(view);
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("pid 42 is under a seccomp filter and so is infervisord"),
              std::string::npos)
        << *why;
    EXPECT_NE(why->find("examples/criu.conf"), std::string::npos) << *why;
    view.processes[0].seccomp = 0;
    EXPECT_EQ(criu_obstacle(view), std::nullopt);  // nothing to suspend
}

TEST(CriuPreflight, ParsesTheSeccompMode) {
    EXPECT_EQ(parse_seccomp_mode("Name:\tx\nSeccomp:\t2\nSeccomp_filters:\t4\n"), 2);
    EXPECT_EQ(parse_seccomp_mode("Seccomp:\t0\n"), 0);
    EXPECT_EQ(parse_seccomp_mode("Name:\tx\n"), 0);
}

TEST(CriuPreflight, ABoundHitIsAnObstacle) {
    CriuView view;
    view.truncated = "pid 1 has more than 65536 open files";
    auto why = criu_obstacle(view);
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("too much to inspect"), std::string::npos);
}

TEST(CriuPreflight, ParsesEstablishedTcp) {
    std::string tcp =
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
        "timeout inode\n"
        "   0: 0100007F:15B3 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0 "
        "       0 2001 1 0000000000000000 100 0 0 10 0\n"
        "   1: 0100007F:15B3 0100007F:A1C2 01 00000000:00000000 00:00000000 00000000     0 "
        "       0 2002 1 0000000000000000 20 4 30 10 -1\n"
        "garbage line\n";
    std::set<unsigned long long> established;
    EXPECT_TRUE(parse_established_tcp(tcp, established));
    EXPECT_EQ(established, std::set<unsigned long long>{2002});
    std::set<unsigned long long> none;
    EXPECT_FALSE(parse_established_tcp(tcp, none, 2));  // over the bound
}

TEST(CriuPreflight, MappedPaths) {
    EXPECT_EQ(mapped_path_of("7f00-7f01 rw-s 00000000 00:05 12 /dev/dri/card0"), "/dev/dri/card0");
    EXPECT_EQ(mapped_path_of("7f00-7f01 r--p 00000000 08:01 3 /srv/my model.bin"),
              "/srv/my model.bin");
    EXPECT_EQ(mapped_path_of("7f00-7f01 rw-p 00000000 00:00 0 "), std::nullopt);
    EXPECT_EQ(mapped_path_of("7ffd-7ffe rw-p 00000000 00:00 0   [stack]"), std::nullopt);
    EXPECT_EQ(mapped_path_of("short"), std::nullopt);
}

// This process, with a real loopback TCP connection: the reader finds its
// fds and the kernel's TCP table, and the connection is refused.
TEST(CriuPreflight, ReadsThisProcessAndFindsItsEstablishedConnection) {
    UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ASSERT_TRUE(listener);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(listener.get(), 1), 0);
    socklen_t len = sizeof addr;
    ASSERT_EQ(::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len), 0);

    auto before = read_criu_view("/proc", {::getpid()});
    ASSERT_TRUE(before) << before.error().message();
    ASSERT_EQ(before->processes.size(), 1u);
    EXPECT_FALSE(before->processes[0].fds.empty());
    EXPECT_EQ(before->processes[0].seccomp, before->own_seccomp);  // the same process
    EXPECT_EQ(criu_obstacle(*before), std::nullopt);               // a listening socket is fine

    UniqueFd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ASSERT_EQ(::connect(client.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    UniqueFd accepted(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    ASSERT_TRUE(accepted);
    auto after = read_criu_view("/proc", {::getpid()});
    ASSERT_TRUE(after) << after.error().message();
    auto why = criu_obstacle(*after);
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("established TCP connection"), std::string::npos) << *why;
}

TEST(CriuPreflight, AProcessThatIsGoneIsSkipped) {
    auto view = read_criu_view("/proc", {999999999});
    ASSERT_TRUE(view);
    EXPECT_TRUE(view->processes.empty());
    EXPECT_EQ(criu_obstacle(*view), std::nullopt);
}

}  // namespace
}  // namespace infervisor
