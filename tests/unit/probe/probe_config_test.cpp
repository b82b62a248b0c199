#include "probe/probe_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config_loader.h"

namespace infervisor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string> errors_of(const std::string& text) {
    auto loaded = load_config_text(text, "p.yaml");
    std::vector<std::string> out;
    for (const auto& e : loaded.errors.all()) out.push_back(e.format());
    return out;
}

std::string worker_with(const std::string& probes) {
    return "workers:\n  - name: w\n    command: [/bin/true]\n    memory: {max: 64M}\n"
           "    probes:\n" +
           probes;
}

TEST(ProbeConfig, ParsesEveryKind) {
    auto loaded = load_config_text(
        worker_with(R"(      startup: {kind: http, port: 8080, path: /health, interval: 2s}
      readiness: {kind: tcp, host: "::1", port: 11434, success_threshold: 2}
      liveness:
        kind: exec
        command: [/usr/bin/check, --quick]
        interval: 30s
        timeout: 5s
        failure_threshold: 5
)"),
        "p.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    const ProbesSpec& p = loaded.config.workers.at(0).probes;
    ASSERT_TRUE(p.startup && p.readiness && p.liveness);
    EXPECT_EQ(p.startup->kind, ProbeKind::http);
    EXPECT_EQ(p.startup->host, "127.0.0.1");
    EXPECT_EQ(p.startup->port, 8080);
    EXPECT_EQ(p.startup->path, "/health");
    EXPECT_EQ(p.startup->status_min, 200);
    EXPECT_EQ(p.startup->status_max, 399);
    EXPECT_EQ(p.startup->interval, 2s);
    EXPECT_EQ(p.startup->failure_threshold, 0);  // startup: start_timeout is the budget
    EXPECT_EQ(p.readiness->kind, ProbeKind::tcp);
    EXPECT_EQ(p.readiness->host, "::1");
    EXPECT_EQ(p.readiness->success_threshold, 2);
    EXPECT_EQ(p.readiness->interval, 10s);
    EXPECT_EQ(p.readiness->timeout, 1s);
    EXPECT_EQ(p.readiness->failure_threshold, 3);
    EXPECT_EQ(p.liveness->kind, ProbeKind::exec);
    EXPECT_THAT(p.liveness->command, ElementsAre("/usr/bin/check", "--quick"));
    EXPECT_EQ(p.liveness->timeout, 5s);
    EXPECT_EQ(p.liveness->failure_threshold, 5);
    EXPECT_EQ(p.gate(), ProbeRole::startup);
}

// The caps of the probe's own cgroup are gone with it (the probe runs inside
// the worker's cgroup): a configuration that still sets them loads, with a
// warning at each key.
TEST(ProbeConfig, AnExecProbesOwnCapsAreAcceptedWithAWarning) {
    auto loaded = load_config_text(worker_with(R"(      liveness:
        kind: exec
        command: [/bin/true]
        memory_max: 16M
        pids_max: 4
)"),
                                   "p.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    EXPECT_THAT(loaded.errors.warning_lines(),
                ElementsAre("p.yaml:9:21: 'memory_max' no longer applies: an exec probe runs "
                            "inside the worker's cgroup, within the worker's memory and pids "
                            "limits",
                            "p.yaml:10:19: 'pids_max' no longer applies: an exec probe runs "
                            "inside the worker's cgroup, within the worker's memory and pids "
                            "limits"));
}

TEST(ProbeConfig, StatusIsOneCodeOrARange) {
    auto loaded = load_config_text(worker_with("      readiness: {port: 80, status: 204}\n"
                                               "      liveness: {port: 80, status: 200-499}\n"),
                                   "p.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    const ProbesSpec& p = loaded.config.workers.at(0).probes;
    EXPECT_EQ(p.readiness->status_min, 204);
    EXPECT_EQ(p.readiness->status_max, 204);
    EXPECT_EQ(p.liveness->status_max, 499);
    EXPECT_EQ(p.gate(), ProbeRole::readiness);
}

TEST(ProbeConfig, SchemeIsHttpOrHttpsForHttpProbesOnly) {
    auto loaded =
        load_config_text(worker_with("      readiness: {port: 8443, scheme: https, path: /health}\n"
                                     "      liveness: {port: 8080, scheme: http}\n"),
                         "p.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    const ProbesSpec& p = loaded.config.workers.at(0).probes;
    EXPECT_TRUE(p.readiness->tls);
    EXPECT_FALSE(p.liveness->tls);
    EXPECT_THAT(errors_of(worker_with("      liveness: {port: 80, scheme: HTTPS}\n")),
                ElementsAre(HasSubstr("p.yaml:6:36: probe scheme must be http or https, not "
                                      "'HTTPS'")));
    EXPECT_THAT(errors_of(worker_with("      liveness: {kind: tcp, port: 80, scheme: https}\n")),
                ElementsAre(HasSubstr("probe 'liveness': 'scheme: https' is for kind http only")));
}

TEST(ProbeConfig, WorkerKeysApplyOverDefaultsAndNoneRemoves) {
    auto loaded = load_config_text(R"(defaults:
  probes:
    liveness: {kind: http, port: 8080, path: /health, interval: 20s}
    readiness: {kind: tcp, port: 8080}
workers:
  - name: a
    command: [/bin/true]
    memory: {max: 64M}
    probes:
      liveness: {path: /healthz}
      readiness: none
  - name: b
    command: [/bin/true]
    memory: {max: 64M}
)",
                                   "p.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    const ProbesSpec& a = loaded.config.workers.at(0).probes;
    ASSERT_TRUE(a.liveness);
    EXPECT_EQ(a.liveness->path, "/healthz");
    EXPECT_EQ(a.liveness->port, 8080);
    EXPECT_EQ(a.liveness->interval, 20s);
    EXPECT_FALSE(a.readiness);
    const ProbesSpec& b = loaded.config.workers.at(1).probes;
    ASSERT_TRUE(b.liveness && b.readiness);
    EXPECT_EQ(b.liveness->path, "/health");
}

TEST(ProbeConfig, ReportsEachProblemWhereTheProbeStands) {
    auto errors = errors_of(worker_with(R"(      startup: {kind: http, path: health}
      readiness: {kind: tcp, host: localhost, port: 80, timeout: 10s, interval: 5s}
      liveness: {kind: exec, command: [check], success_threshold: 2, failure_threshold: 0}
)"));
    EXPECT_THAT(errors,
                ElementsAre(HasSubstr("p.yaml:6:16: probe 'startup': 'path' must start with '/'"),
                            HasSubstr("p.yaml:7:18: probe 'readiness': 'host' must be an IP"),
                            HasSubstr("p.yaml:7:18: probe 'readiness': 'timeout' (10s) must be "
                                      "below 'interval' (5s)"),
                            HasSubstr("p.yaml:8:17: probe 'liveness': command[0] must be an "
                                      "absolute path"),
                            HasSubstr("p.yaml:8:17: probe 'liveness': 'failure_threshold' must be "
                                      "at least 1"),
                            HasSubstr("p.yaml:8:17: probe 'liveness': 'success_threshold' must be "
                                      "1")));
}

TEST(ProbeConfig, WhatAWorkerMustStillAddIsCheckedOnceItsOwnErrorsAreFixed) {
    // With its errors above fixed, the worker's probes are judged whole: the
    // port an http probe lacks is reported at the worker's `probes`. While the
    // worker has errors of its own it is not (a port that failed to parse
    // would read as missing, a second error for one mistake).
    auto errors = errors_of(worker_with(R"(      startup: {kind: http, path: /health}
)"));
    EXPECT_THAT(errors, ElementsAre(HasSubstr("p.yaml:5:5: worker 'w': probe 'startup': 'port' is "
                                              "required for kind http")));
}

TEST(ProbeConfig, DefaultsMayLeaveThePortToEachWorker) {
    auto loaded = load_config_text(R"(defaults:
  probes:
    liveness: {kind: http, path: /health, timeout: 5s}
workers:
  - name: a
    command: [/bin/true]
    memory: {max: 64M}
    probes:
      liveness: {port: 8080}
  - name: b
    command: [/bin/true]
    memory: {max: 64M}
)",
                                   "p.yaml");
    std::vector<std::string> errors;
    for (const auto& e : loaded.errors.all()) errors.push_back(e.format());
    EXPECT_THAT(errors, ElementsAre("p.yaml:10:5: worker 'b': probe 'liveness': 'port' is "
                                    "required for kind http"));
    EXPECT_EQ(loaded.config.workers.at(0).probes.liveness->port, 8080);
    EXPECT_EQ(loaded.config.workers.at(0).probes.liveness->timeout, 5s);
}

TEST(ProbeConfig, RejectsBadValuesWithTheirPlace) {
    auto errors = errors_of(worker_with(R"(      liveness:
        kind: grpc
        port: 70000
        status: 2xx
        bogus: 1
)"));
    EXPECT_THAT(errors, ElementsAre(HasSubstr("p.yaml:7:15: probe kind must be http, tcp or exec, "
                                              "not 'grpc'"),
                                    HasSubstr("p.yaml:8:15: 'port' must be between 1 and 65535"),
                                    HasSubstr("p.yaml:9:17: 'status' must be a status"),
                                    // No "'port' is required": the port was written,
                                    // only wrong.
                                    HasSubstr("p.yaml:10:9: unknown key 'bogus'")));
}

TEST(ProbeConfig, DurationsAreBoundedToADay) {
    auto errors = errors_of(worker_with("      liveness: {port: 80, interval: 2d, timeout: 1s}\n"));
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_THAT(errors[0], HasSubstr("p.yaml:6:38: 'interval'"));
}

TEST(ProbeConfig, RequestTargetCannotSmuggleARequest) {
    ProbeSpec spec = default_probe_spec(ProbeRole::readiness);
    EXPECT_THAT(probe_spec_missing(spec), ElementsAre("'port' is required for kind http"));
    spec.port = 80;
    EXPECT_THAT(probe_spec_missing(spec), IsEmpty());
    EXPECT_THAT(probe_spec_problems(spec, ProbeRole::readiness), IsEmpty());
    for (const char* path : {"/a b", "/x\r\nHost: evil", "/\x7f", "", "/\xc3\xa9"}) {
        spec.path = path;
        EXPECT_THAT(probe_spec_problems(spec, ProbeRole::readiness),
                    ElementsAre(HasSubstr("'path' must start with '/'")))
            << path;
    }
    spec.path = "/" + std::string(1024, 'a');
    EXPECT_EQ(probe_spec_problems(spec, ProbeRole::readiness).size(), 1u);
}

TEST(ProbeConfig, StatusRangeMustBeWithinHttp) {
    ProbeSpec spec = default_probe_spec(ProbeRole::liveness);
    spec.port = 80;
    spec.status_min = 400;
    spec.status_max = 300;
    EXPECT_THAT(probe_spec_problems(spec, ProbeRole::liveness),
                ElementsAre(HasSubstr("within 100-599, not 400-300")));
    spec.status_min = 99;
    spec.status_max = 200;
    EXPECT_EQ(probe_spec_problems(spec, ProbeRole::liveness).size(), 1u);
}

TEST(ProbeConfig, DescribesEachKind) {
    ProbeSpec spec;
    spec.port = 8080;
    spec.path = "/health";
    EXPECT_EQ(describe_probe(spec), "GET http://127.0.0.1:8080/health");
    spec.tls = true;
    EXPECT_EQ(describe_probe(spec), "GET https://127.0.0.1:8080/health");
    spec.tls = false;
    spec.kind = ProbeKind::tcp;
    spec.host = "::1";
    EXPECT_EQ(describe_probe(spec), "TCP [::1]:8080");
    spec.kind = ProbeKind::exec;
    spec.command = {"/bin/check", "-q"};
    EXPECT_EQ(describe_probe(spec), "exec /bin/check");
}

}  // namespace
}  // namespace infervisor
