#include "control/varlink_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "control/status_json.h"
#include "control/varlink_errors.h"
#include "control/varlink_interfaces.h"
#include "fake_supervisor.h"
#include "recording_sink.h"

namespace infervisor {
namespace {

using nlohmann::json;
using testing::FakeSupervisor;
using testing::RecordingSink;
namespace err = varlink_error;

constexpr gid_t kControlGroup = 4242;
constexpr uid_t kNobodyUid = 65534;

class VarlinkServiceTest : public ::testing::Test {
  protected:
    VarlinkServiceTest() {
        fake.add_worker("llama", "ready");
        fake.add_worker("whisper", "stopped");
    }

    // Calls `method` as `peer` and returns the sink with its replies.
    std::shared_ptr<RecordingSink> call(const std::string& method, json params = json::object(),
                                        bool more = false) {
        auto sink = std::make_shared<RecordingSink>();
        service.handle({method, std::move(params), more, false}, peer, sink);
        return sink;
    }

    FakeSupervisor fake;
    VarlinkService service{fake, AccessPolicy{kControlGroup}};
    PeerCredentials peer{0, 0, 1, {}};
};

TEST_F(VarlinkServiceTest, ListsWorkers) {
    auto sink = call("io.infervisor.supervisor.List");
    ASSERT_EQ(sink->entries.size(), 1u);
    const auto& workers = sink->last().parameters["workers"];
    ASSERT_EQ(workers.size(), 2u);
    EXPECT_EQ(workers[0]["name"], "llama");
    EXPECT_EQ(workers[0]["state"], "ready");
    EXPECT_TRUE(workers[0]["memory_max"].is_null());
}

// Issue 30: the host's GPUs for `infervisorctl status` and `top`, and a
// worker's memory card by card, through the wire and back.
TEST_F(VarlinkServiceTest, ListsTheHostsGpusAndAWorkersUseCardByCard) {
    EXPECT_EQ(call("io.infervisor.supervisor.ListGpus")->last().parameters["gpus"], json::array())
        << "no GPUs read: an empty list";
    fake.gpus = {{0, "0000:03:00.0", "nvidia", "NVIDIA H100", 80ull << 30, 60ull << 30, 85.0, ""},
                 {1, "0000:04:00.0", "nvidia", "NVIDIA H100", 80ull << 30, std::nullopt,
                  std::nullopt, "GPU is lost (fallen off the bus)"}};
    auto sink = call("io.infervisor.supervisor.ListGpus");
    ASSERT_EQ(sink->last().error, "");
    const json& gpus = sink->last().parameters["gpus"];
    ASSERT_EQ(gpus.size(), 2u);
    EXPECT_EQ(gpus[0]["device"], "0000:03:00.0");
    EXPECT_EQ(gpus[0]["memory_used"], 60ull << 30);
    EXPECT_TRUE(gpus[1]["memory_used"].is_null());
    EXPECT_EQ(gpu_card_from_json(gpus[0]), fake.gpus[0]);
    EXPECT_EQ(gpu_card_from_json(gpus[1]), fake.gpus[1]);
    EXPECT_EQ(call("io.infervisor.supervisor.ListGpus", {{"x", 1}})->last().error,
              err::kInvalidParameter);

    WorkerView w;
    w.name = "llm";
    w.gpu_memory = 6ull << 30;
    w.gpu_devices = {{"0000:03:00.0", 4ull << 30}, {"0000:04:00.0", 2ull << 30}};
    json wire = to_json(w);
    EXPECT_EQ(wire["gpu_devices"][1]["memory"], 2ull << 30);
    EXPECT_EQ(worker_view_from_json(wire).gpu_devices, w.gpu_devices);
    EXPECT_TRUE(to_json(WorkerView{})["gpu_devices"].is_null());
}

TEST_F(VarlinkServiceTest, GetsOneWorkerWithItsSpec) {
    auto sink = call("io.infervisor.supervisor.Get", {{"name", "llama"}});
    EXPECT_EQ(sink->last().error, "");
    EXPECT_EQ(sink->last().parameters["worker"]["name"], "llama");
    EXPECT_EQ(sink->last().parameters["spec"]["name"], "llama");
    auto missing = call("io.infervisor.supervisor.Get", {{"name", "nope"}});
    EXPECT_EQ(missing->last().error, err::kWorkerNotFound);
    EXPECT_EQ(missing->last().parameters["name"], "nope");
}

TEST_F(VarlinkServiceTest, UnknownMethodsAndInterfaces) {
    auto m = call("io.infervisor.supervisor.Explode");
    EXPECT_EQ(m->last().error, err::kMethodNotFound);
    EXPECT_EQ(m->last().parameters["method"], "io.infervisor.supervisor.Explode");
    auto i = call("com.example.Thing.Do");
    EXPECT_EQ(i->last().error, err::kInterfaceNotFound);
    EXPECT_EQ(i->last().parameters["interface"], "com.example.Thing");
}

TEST_F(VarlinkServiceTest, InvalidParametersAreNamed) {
    struct Case {
        const char* method;
        json params;
        const char* bad;
    };
    const Case cases[] = {
        {"io.infervisor.supervisor.Get", json::object(), "name"},
        {"io.infervisor.supervisor.Get", {{"name", 7}}, "name"},
        {"io.infervisor.supervisor.Get", {{"name", "llama"}, {"extra", 1}}, "extra"},
        {"io.infervisor.supervisor.Stop", {{"names", "llama"}}, "names"},
        {"io.infervisor.supervisor.Stop", {{"names", json::array()}}, "names"},
        {"io.infervisor.supervisor.Stop", {{"names", {"llama", 3}}}, "names"},
        {"io.infervisor.supervisor.Kill", {{"name", "llama"}, {"signal", "TERM"}}, "signal"},
        {"io.infervisor.supervisor.Kill", {{"name", "llama"}, {"signal", 0}}, "signal"},
        {"io.infervisor.supervisor.Kill", {{"name", "llama"}, {"signal", 1e10}}, "signal"},
        {"io.infervisor.supervisor.Kill",
         {{"name", "llama"}, {"signal", 18446744073709551615ull}},
         "signal"},
        {"io.infervisor.supervisor.Validate", {{"config", true}}, "config"},
        {"io.infervisor.supervisor.RecentEvents", {{"limit", -1}}, "limit"},
        {"io.infervisor.supervisor.RecentEvents", {{"workers", "llama"}}, "workers"},
        {"io.infervisor.supervisor.RecentEvents", {{"workers", {1}}}, "workers"},
        {"io.infervisor.supervisor.RecentEvents",
         {{"workers", std::vector<std::string>(1025, "x")}},
         "workers"},
        {"io.infervisor.supervisor.RecentEvents", {{"since_usec", -5}}, "since_usec"},
        {"io.infervisor.supervisor.Subscribe", {{"since_usec", "1h"}}, "since_usec"},
        {"io.infervisor.supervisor.List", {{"filter", "x"}}, "filter"},
        {"org.varlink.service.GetInterfaceDescription", json::object(), "interface"},
    };
    for (const auto& c : cases) {
        auto sink = call(c.method, c.params);
        ASSERT_EQ(sink->entries.size(), 1u) << c.method;
        EXPECT_EQ(sink->last().error, err::kInvalidParameter) << c.method << " " << c.params;
        EXPECT_EQ(sink->last().parameters["parameter"], c.bad) << c.method << " " << c.params;
    }
    EXPECT_TRUE(fake.actions.empty());
}

TEST_F(VarlinkServiceTest, ActsAndCompletes) {
    auto sink = call("io.infervisor.supervisor.Stop", {{"names", {"llama"}}});
    ASSERT_EQ(sink->entries.size(), 1u);
    EXPECT_EQ(sink->last().error, "");
    EXPECT_EQ(fake.list_workers()[0].state, "stopped");
    call("io.infervisor.supervisor.Kill", {{"name", "llama"}, {"signal", 9}});
    call("io.infervisor.supervisor.Kill", {{"name", "llama"}});
    EXPECT_EQ(fake.actions,
              (std::vector<std::string>{"stop llama", "kill llama 9", "kill llama 15"}));
}

TEST_F(VarlinkServiceTest, UnknownNameFailsTheWholeCall) {
    auto sink = call("io.infervisor.supervisor.Start", {{"names", {"llama", "nope"}}});
    EXPECT_EQ(sink->last().error, err::kWorkerNotFound);
    EXPECT_EQ(sink->last().parameters["name"], "nope");
    EXPECT_TRUE(fake.actions.empty());
}

TEST_F(VarlinkServiceTest, CompletesLaterAndSkipsACallerThatLeft) {
    fake.hold_actions = true;
    auto sink = call("io.infervisor.supervisor.Stop", {{"names", {"llama"}}});
    auto gone = call("io.infervisor.supervisor.Restart", {{"names", {"whisper"}}});
    EXPECT_TRUE(sink->entries.empty());
    gone.reset();
    fake.complete_pending();
    ASSERT_EQ(sink->entries.size(), 1u);
    EXPECT_EQ(sink->last().error, "");
}

TEST_F(VarlinkServiceTest, ChangesNeedRootOrTheControlGroup) {
    peer = {1000, 1000, 77, {10, 20}};
    for (const char* method : {"Start", "Stop", "Restart", "Checkpoint", "Suspend", "Resume"}) {
        auto sink = call(std::string("io.infervisor.supervisor.") + method, {{"names", {"llama"}}});
        EXPECT_EQ(sink->last().error, err::kPermissionDenied) << method;
    }
    EXPECT_EQ(call("io.infervisor.supervisor.Kill", {{"name", "llama"}})->last().error,
              err::kPermissionDenied);
    EXPECT_EQ(call("io.infervisor.supervisor.Reload")->last().error, err::kPermissionDenied);
    EXPECT_EQ(call("io.infervisor.supervisor.Drain")->last().error, err::kPermissionDenied);
    EXPECT_EQ(call("io.infervisor.supervisor.Undrain")->last().error, err::kPermissionDenied);
    EXPECT_TRUE(fake.actions.empty());
    EXPECT_EQ(call("io.infervisor.supervisor.HostState")->last().error, "");
    // Reading stays open.
    EXPECT_EQ(call("io.infervisor.supervisor.List")->last().error, "");
    EXPECT_EQ(call("io.infervisor.supervisor.Validate", {{"config", "x"}})->last().error, "");

    peer.groups.push_back(kControlGroup);
    EXPECT_EQ(call("io.infervisor.supervisor.Stop", {{"names", {"llama"}}})->last().error, "");
    peer = {1000, kControlGroup, 77, {}};
    EXPECT_EQ(call("io.infervisor.supervisor.Start", {{"names", {"llama"}}})->last().error, "");
}

TEST(AccessPolicy, WithoutAGroupOnlyRootMayChange) {
    AccessPolicy policy;
    EXPECT_TRUE(policy.may_change({0, 0, 1, {}}));
    EXPECT_FALSE(policy.may_change({1000, 0, 1, {0}}));
}

TEST_F(VarlinkServiceTest, ReloadReportsErrorsOrChanges) {
    fake.next_reload = {false, false, {"a.yaml:3:1: bad"}, {}, {}, {}};
    auto bad = call("io.infervisor.supervisor.Reload");
    EXPECT_EQ(bad->last().error, err::kConfigInvalid);
    EXPECT_EQ(bad->last().parameters["errors"], json({"a.yaml:3:1: bad"}));
    fake.next_reload = {true, true, {}, {"new"}, {}, {"llama"}};
    auto good = call("io.infervisor.supervisor.Reload");
    EXPECT_EQ(good->last().parameters["added"], json({"new"}));
    EXPECT_EQ(good->last().parameters["changed"], json({"llama"}));
}

TEST_F(VarlinkServiceTest, ValidatesConfigText) {
    auto sink = call("io.infervisor.supervisor.Validate", {{"config", "ok\nbad\n"}, {"file", "x"}});
    EXPECT_EQ(sink->last().parameters["valid"], false);
    EXPECT_EQ(sink->last().parameters["errors"], json({"x:2:1: bad line"}));
}

TEST_F(VarlinkServiceTest, ValidatesTheDropinsWithTheMainFile) {
    json dropins = json::array({{{"file", "d/a.yaml"}, {"config", "bad\n"}}});
    auto sink = call("io.infervisor.supervisor.Validate",
                     {{"config", "ok\n"}, {"file", "x"}, {"dropins", dropins}});
    EXPECT_EQ(sink->last().parameters["errors"], json({"d/a.yaml:1:1: bad line"}));
    for (const json& bad : {json(5), json::array({"a"}), json::array({{{"file", "a"}}}),
                            json::array({{{"file", "a"}, {"config", 1}}}),
                            json::array({{{"file", "a"}, {"config", ""}, {"x", ""}}})}) {
        auto refused =
            call("io.infervisor.supervisor.Validate", {{"config", ""}, {"dropins", bad}});
        EXPECT_EQ(refused->last().error, "org.varlink.service.InvalidParameter") << bad.dump();
        EXPECT_EQ(refused->last().parameters["parameter"], "dropins") << bad.dump();
    }
}

// Issue 26, defect 7: the check runs with the caller's rights, so the
// supervisor must learn who the caller is (uid, gid and groups).
TEST_F(VarlinkServiceTest, ValidationIsAskedForWithTheCallersIdentity) {
    peer = {kNobodyUid, 65533, 77, {100, 200}};
    call("io.infervisor.supervisor.Validate", {{"config", "ok\n"}});
    EXPECT_EQ(fake.last_validation_caller.uid, kNobodyUid);
    EXPECT_EQ(fake.last_validation_caller.gid, 65533u);
    EXPECT_EQ(fake.last_validation_caller.groups, (std::vector<gid_t>{100, 200}));
}

TEST_F(VarlinkServiceTest, AValidationThatCannotRunNowFailsWithItsReason) {
    fake.refuse_validation = "2 configuration checks are already running";
    auto sink = call("io.infervisor.supervisor.Validate", {{"config", "ok\n"}});
    EXPECT_EQ(sink->last().error, err::kValidationFailed);
    EXPECT_EQ(sink->last().parameters["reason"], "2 configuration checks are already running");
}

// Issue 10, defect 3: environment values (API keys) only for the privileged.
TEST_F(VarlinkServiceTest, GetHidesEnvironmentValuesFromUnprivilegedCallers) {
    peer = {kNobodyUid, kNobodyUid, 1, {}};
    auto hidden = call("io.infervisor.supervisor.Get", {{"name", "llama"}});
    EXPECT_EQ(hidden->last().parameters["spec"]["environment"], json({{"HF_TOKEN", nullptr}}));
    EXPECT_EQ(hidden->last().parameters["spec"]["name"], "llama");
    peer = {kNobodyUid, kNobodyUid, 1, {kControlGroup}};
    auto member = call("io.infervisor.supervisor.Get", {{"name", "llama"}});
    EXPECT_EQ(member->last().parameters["spec"]["environment"]["HF_TOKEN"], "hf_secret_of_llama");
    peer = {0, 0, 1, {}};
    auto root = call("io.infervisor.supervisor.Get", {{"name", "llama"}});
    EXPECT_EQ(root->last().parameters["spec"]["environment"]["HF_TOKEN"], "hf_secret_of_llama");
}

// Issue 10, defect 8: a flood of refused calls is not a flood of log lines.
TEST_F(VarlinkServiceTest, DeniedCallsAreLoggedRateLimited) {
    std::ostringstream log;
    auto previous = spdlog::default_logger();
    spdlog::set_default_logger(std::make_shared<spdlog::logger>(
        "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
    peer = {kNobodyUid, kNobodyUid, 1, {}};
    for (int i = 0; i < 10000; ++i)
        EXPECT_EQ(call("io.infervisor.supervisor.Stop", {{"names", {"llama"}}})->last().error,
                  err::kPermissionDenied);
    peer = {kNobodyUid + 1, kNobodyUid + 1, 2, {}};  // another user is not hidden by the flood
    call("io.infervisor.supervisor.Kill", {{"name", "llama"}});
    spdlog::set_default_logger(previous);
    std::string text = log.str();
    std::size_t lines = 0;
    for (std::size_t at = text.find("denied"); at != std::string::npos;
         at = text.find("denied", at + 1))
        ++lines;
    EXPECT_LE(lines, 6u) << text;
    EXPECT_THAT(text, ::testing::HasSubstr("denied io.infervisor.supervisor.Kill to uid 65535"));
    EXPECT_TRUE(fake.actions.empty());
}

TEST_F(VarlinkServiceTest, SubscribeNeedsMoreAndStreamsHistoryThenLiveEvents) {
    EXPECT_EQ(call("io.infervisor.supervisor.Subscribe")->last().error, err::kExpectedMore);
    fake.emit({1, "llama", "started", "started", {}});
    fake.emit({2, "llama", "ready", "ready", {}});
    auto sink = call("io.infervisor.supervisor.Subscribe", {{"history", 1}}, true);
    ASSERT_EQ(sink->entries.size(), 1u);
    EXPECT_EQ(sink->last().parameters["event"]["kind"], "ready");
    EXPECT_TRUE(sink->last().continues);
    fake.emit({3, "llama", "killed", "over memory.max", {{"memory_current", "9G"}}});
    ASSERT_EQ(sink->entries.size(), 2u);
    EXPECT_EQ(event_from_json(sink->last().parameters["event"]).fields.at("memory_current"), "9G");
    sink->subscription.reset();
    EXPECT_EQ(fake.subscriber_count(), 0u);
}

TEST_F(VarlinkServiceTest, EventsOfSomeWorkersSinceATime) {
    fake.emit({10, "llama", "started", "started", {}});
    fake.emit({20, "", "policy_action", "host rule", {}});
    fake.emit({30, "web", "started", "started", {}});
    fake.emit({40, "llama", "ready", "ready", {}});
    auto kinds_of = [](const json& events) {
        std::vector<std::string> out;
        for (const auto& e : events)
            out.push_back(e["worker"].get<std::string>() + ":" + e["kind"].get<std::string>());
        return out;
    };
    auto recent = [&](json params) {
        return kinds_of(
            call("io.infervisor.supervisor.RecentEvents", params)->last().parameters["events"]);
    };
    using V = std::vector<std::string>;
    EXPECT_EQ(recent({{"workers", {"llama"}}}), (V{"llama:started", "llama:ready"}));
    EXPECT_EQ(recent({{"workers", {"llama"}}, {"limit", 1}}), (V{"llama:ready"}));
    EXPECT_EQ(recent({{"since_usec", 30}}), (V{"web:started", "llama:ready"}));
    EXPECT_EQ(recent({{"workers", json::array()}}).size(), 4u);  // empty: all
    EXPECT_EQ(recent({{"workers", {"gone"}}}), V{});

    auto sink = call("io.infervisor.supervisor.Subscribe",
                     {{"history", 10}, {"workers", {"web"}}, {"since_usec", 25}}, true);
    ASSERT_EQ(sink->entries.size(), 1u);
    EXPECT_EQ(sink->last().parameters["event"]["worker"], "web");
    fake.emit({50, "llama", "exited", "exited", {}});
    fake.emit({60, "", "policy_action", "host rule", {}});
    EXPECT_EQ(sink->entries.size(), 1u);  // neither is web's
    fake.emit({70, "web", "exited", "exited", {}});
    ASSERT_EQ(sink->entries.size(), 2u);
    EXPECT_EQ(sink->last().parameters["event"]["kind"], "exited");
}

TEST_F(VarlinkServiceTest, IntrospectionForGenericVarlinkTools) {
    auto info = call("org.varlink.service.GetInfo");
    EXPECT_EQ(info->last().parameters["interfaces"],
              json({"org.varlink.service", "io.infervisor.supervisor"}));
    auto desc = call("org.varlink.service.GetInterfaceDescription",
                     {{"interface", "io.infervisor.supervisor"}});
    std::string text = desc->last().parameters["description"];
    EXPECT_NE(text.find("interface io.infervisor.supervisor\n"), std::string::npos);
    EXPECT_NE(text.find("method List() -> (workers: []WorkerStatus)"), std::string::npos);
    EXPECT_EQ(text, supervisor_interface_description());
    auto none = call("org.varlink.service.GetInterfaceDescription", {{"interface", "x.Y"}});
    EXPECT_EQ(none->last().error, err::kInterfaceNotFound);
}

TEST(StatusJson, RoundTripsAWorkerStatus) {
    WorkerView s;
    s.name = "llama";
    s.state = "suspended";
    s.state_reason = "rule 'host-thrash'";
    s.main_pid = 42;
    s.memory_current = 1ull << 33;
    s.memory_pressure_some_avg10 = 1.5;
    s.gpu_memory = 6ull << 30;
    s.gpu_memory_max = 10ull << 30;
    s.gpu_utilization = 42.5;
    s.last_exit = "exited 1";
    s.is_protected = true;
    EXPECT_EQ(worker_view_from_json(to_json(s)), s);
}

TEST(StatusJson, RoundTripsProbesAndSendsNullWithoutThem) {
    WorkerView s;
    s.name = "llama";
    EXPECT_TRUE(to_json(s)["probes"].is_null());
    ProbeStatus p;
    p.probe = "liveness";
    p.target = "GET http://127.0.0.1:8080/health";
    p.verdict = "failing";
    p.active = true;
    p.consecutive_failures = 3;
    p.failures = 7;
    p.last_failure = "no answer within 1s (reading the answer)";
    p.last_failure_age_usec = 1500000;
    ProbeStatus q;
    q.probe = "startup";
    q.verdict = "passing";
    q.last_failure = "HTTP 503";
    q.last_failure_http_status = 503;
    s.probes = {p, q};
    EXPECT_EQ(to_json(s)["probes"].size(), 2u);
    EXPECT_EQ(worker_view_from_json(to_json(s)), s);
}

TEST(StatusJson, ReadsLenientlyWhatItDoesNotKnow) {
    auto s = worker_view_from_json({{"name", 3}, {"state", "ready"}, {"new_field", 1}});
    EXPECT_EQ(s.name, "");
    EXPECT_EQ(s.state, "ready");
    EXPECT_EQ(worker_view_from_json(json::array()).name, "");
}

}  // namespace
}  // namespace infervisor
