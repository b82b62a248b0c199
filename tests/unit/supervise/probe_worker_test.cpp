// Workers with health probes, on this machine's real kernel: the example
// worker's HTTP endpoint, real exec probes in real cgroups. Outcomes and the
// order of events are asserted; the probes' own timeouts are generous, so a
// loaded machine only delays what happens.
#include <gmock/gmock.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "supervisor_fixture.h"

namespace infervisor::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using K = EventKind;
namespace fs = std::filesystem;

// A port that was free a moment ago.
int free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ::close(fd);
    return ntohs(a.sin_port);
}

ProbeSpec http_probe(int port, Duration interval, Duration timeout, int64_t failures) {
    ProbeSpec p;
    p.kind = ProbeKind::http;
    p.port = port;
    p.path = "/health";
    p.interval = interval;
    p.timeout = timeout;
    p.failure_threshold = failures;
    return p;
}

ProbeSpec exec_probe(std::vector<std::string> command, Duration interval, Duration timeout) {
    ProbeSpec p;
    p.kind = ProbeKind::exec;
    p.command = std::move(command);
    p.interval = interval;
    p.timeout = timeout;
    return p;
}

class ProbedWorker : public SupervisorFixture {};

TEST_F(ProbedWorker, IsStartingUntilItsEndpointAnswers200) {
    const int port = free_port();
    WorkerSpec spec = example("loader", {"--http-port", std::to_string(port), "--load-ms", "1500"});
    spec.probes.startup = http_probe(port, 300ms, 250ms, 0);
    supervisor_->apply(config({spec}));
    run_until_event("loader", K::started);
    Worker* w = supervisor_->find("loader");
    ASSERT_TRUE(w);
    EXPECT_EQ(w->state(), WorkerState::starting);
    run_until_event("loader", K::ready);
    EXPECT_EQ(w->state(), WorkerState::running);
    EXPECT_THAT(kinds_of("loader"), ElementsAre(K::started, K::probe_changed, K::ready));
    EXPECT_THAT(last("loader", K::ready)->message, HasSubstr("startup probe passed: HTTP 200"));
    const Event* change = last("loader", K::probe_changed);
    EXPECT_EQ(field(*change, "PROBE"), "startup");
    EXPECT_EQ(field(*change, "PROBE_VERDICT"), "passing");
    EXPECT_EQ(field(*change, "PROBE_HTTP_STATUS"), "200");
    auto probes = w->probes();
    ASSERT_EQ(probes.size(), 1u);
    EXPECT_FALSE(probes[0].active);     // a startup probe stops once passed
    EXPECT_GE(probes[0].failures, 1u);  // it was asked while loading, and said 503
    EXPECT_EQ(probes[0].last_failure->http_status, 503);
}

TEST_F(ProbedWorker, AHungWorkerIsKilledByItsLivenessProbeAndRestarted) {
    const int port = free_port();
    WorkerSpec spec =
        example("spinner", {"--http-port", std::to_string(port), "--spin-after-ms", "1000"});
    spec.probes.startup = http_probe(port, 200ms, 150ms, 0);
    spec.probes.liveness = http_probe(port, 1s, 500ms, 2);
    supervisor_->apply(config({spec}));
    run_until_event("spinner", K::probe_failed);
    const Event* failed = last("spinner", K::probe_failed);
    EXPECT_EQ(field(*failed, "PROBE"), "liveness");
    EXPECT_EQ(field(*failed, "PROBE_STREAK"), "2");
    EXPECT_THAT(field(*failed, "PROBE_DETAIL"), HasSubstr("no answer within 500ms"));
    EXPECT_THAT(failed->message, HasSubstr("GET http://127.0.0.1:" + std::to_string(port)));
    run_until_event("spinner", K::started, 2);
    const Event* exited = last("spinner", K::exited);
    EXPECT_THAT(field(*exited, "EXIT_REASON"),
                HasSubstr("killed: liveness probe failed 2 times in a row"));
    EXPECT_EQ(count("spinner", K::restarting), 1u);
}

// The probe runs inside the worker's cgroup (its limits hold it, and a
// worker that ptraces it gains nothing outside them), in a child of its own
// that gets no caps, and with the worker's oom_score_adj, not the daemon's.
TEST_F(ProbedWorker, AReadinessExecProbeGatesLoadingAndRunsInsideTheWorkersCgroup) {
    const fs::path seen = dir_->path() / "probe-saw";
    WorkerSpec spec = example("checked", {});
    spec.oom_score_adj = 345;  // the daemon's (this test's) is another
    spec.probes.readiness = exec_probe(
        {"/bin/sh", "-c",
         "{ grep '^0::' /proc/self/cgroup; cat /proc/self/oom_score_adj; } > " + seen.string()},
        300ms, 10s);
    supervisor_->apply(config({spec}));
    run_until_event("checked", K::ready);
    EXPECT_THAT(last("checked", K::ready)->message,
                HasSubstr("readiness probe passed: exited with code 0"));
    const std::string worker_cgroup = field(*last("checked", K::started), "CGROUP");
    ASSERT_NE(slurp("/proc/self/oom_score_adj"), "345\n");
    EXPECT_EQ(slurp(seen), "0::" + worker_cgroup + "/probe-readiness\n345\n");
    // Only the worker's own limits were written: the probe's cgroup has none.
    EXPECT_EQ(limits_written_.size(), 1u);
    EXPECT_EQ(limits_written_.count("checked"), 1u);
}

TEST_F(ProbedWorker, AHangingExecProbeIsKilledAtItsTimeoutAndLeavesNothing) {
    WorkerSpec spec = example("stuck", {});
    spec.probes.startup = exec_probe({"/bin/sleep", "1000"}, 300ms, 200ms);
    supervisor_->apply(config({spec}));
    Worker* w = supervisor_->find("stuck");
    ASSERT_TRUE(w);
    run_until([&] {
        auto p = w->probes();
        return !p.empty() && p[0].failures >= 2;
    });
    EXPECT_EQ(w->state(), WorkerState::starting);
    EXPECT_EQ(w->probes()[0].last_failure->detail, "no exit within 200ms; killed");
    bool stopped = false;
    supervisor_->stop_all([&] { stopped = true; });
    run_until([&] { return stopped; });
    CgroupDir probe = CgroupTree(cgroup_root_).worker_probe("stuck", "startup");
    run_until([&] { return !probe.exists(); });  // killed, reaped and removed
}

}  // namespace
}  // namespace infervisor::testing
