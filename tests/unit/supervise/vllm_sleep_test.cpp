// `suspend: {method: vllm-sleep}` (WorkerSuspension with the EngineStep of
// WorkerVllmSleep): the daemon's requests to a real HTTP server in this
// process that answers as vLLM's dev endpoints do
// (vllm/entrypoints/serve/dev/sleep/api_router.py: empty 200 for /sleep and
// /wake_up, {"is_sleeping": BOOL}, FastAPI's 404 without dev mode), around
// a fake cgroup (files in a temp dir, as WorkerSuspensionAlone's) whose
// cgroup.freeze the server reads at each request: so the order of sleep,
// freeze, thaw and wake is asserted from the server's side. Asserted too:
// the journal's fields, the suspend and resume answers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include "supervise/worker_suspension.h"
#include "supervise/worker_vllm_sleep.h"
#include "supervisor_fixture.h"
#include "support/fake_clock.h"
#include "support/temp_dir.h"

namespace infervisor::testing {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using tcp = asio::ip::tcp;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

// One request as the server saw it, with the cgroup's state at that moment.
struct VllmSeen {
    std::string line;    // "POST /sleep?level=1"
    std::string freeze;  // cgroup.freeze's first byte
    int thawed = 0;      // the Worker's thaw callbacks so far
};

// A vLLM stand-in: one request per connection, answered by `answer` with a
// whole HTTP response, or held without an answer when it returns "".
class FakeVllmServer {
  public:
    using Answer = std::function<std::string(const std::string& line)>;
    using Observe = std::function<VllmSeen(std::string line)>;

    FakeVllmServer(asio::io_context& io, Answer answer, Observe observe)
        : acceptor_(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
          answer_(std::move(answer)),
          observe_(std::move(observe)) {
        accept();
    }
    int port() const { return acceptor_.local_endpoint().port(); }
    const std::vector<VllmSeen>& seen() const { return seen_; }
    std::vector<std::string> lines() const {
        std::vector<std::string> out;
        for (const auto& s : seen_) out.push_back(s.line);
        return out;
    }
    bool authorized = false;

    static std::string reply(int status, const std::string& body,
                             const std::string& type = "application/json") {
        return "HTTP/1.1 " + std::to_string(status) + " X\r\n" +
               (body.empty() ? "" : "content-type: " + type + "\r\n") +
               "content-length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
               body;
    }

  private:
    void accept() {
        acceptor_.async_accept([this](const error_code& ec, tcp::socket socket) {
            if (ec) return;
            auto s = std::make_shared<tcp::socket>(std::move(socket));
            held_.push_back(s);
            read(s, std::make_shared<std::string>());
            accept();
        });
    }
    void read(std::shared_ptr<tcp::socket> s, std::shared_ptr<std::string> request) {
        auto buffer = std::make_shared<std::array<char, 4096>>();
        s->async_read_some(
            asio::buffer(*buffer), [this, s, request, buffer](const error_code& ec, size_t n) {
                if (ec) return;
                request->append(buffer->data(), n);
                size_t end = request->find("\r\n\r\n");
                if (end == std::string::npos) return read(s, request);
                std::string line = request->substr(0, request->find("\r\n"));
                line = line.substr(0, line.rfind(' '));
                if (request->find("Authorization: Bearer sekret\r\n") != std::string::npos)
                    authorized = true;
                seen_.push_back(observe_(line));
                std::string response = answer_(line);
                if (response.empty()) return;  // silent
                auto keep = std::make_shared<std::string>(response);
                asio::async_write(*s, asio::buffer(*keep), [s, keep](const error_code&, size_t) {
                    error_code ignored;
                    s->close(ignored);
                });
            });
    }

    tcp::acceptor acceptor_;
    Answer answer_;
    Observe observe_;
    std::vector<std::shared_ptr<tcp::socket>> held_;
    std::vector<VllmSeen> seen_;
};

class VllmSleep : public ::testing::Test {
  protected:
    void SetUp() override {
        fs_.write("w/memory.high", "max");
        fs_.write("w/memory.swap.max", "max");
        fs_.write("w/cgroup.freeze", "0");
        // Frozen as soon as asked: the freeze is not what is tested here.
        fs_.write("w/cgroup.events", "populated 1\nfrozen 1\n");
    }

    // vLLM with sleep mode and dev mode: sleeps, wakes, says which.
    std::string vllm(const std::string& line) {
        using S = FakeVllmServer;
        if (line == "POST /sleep?level=1" || line == "POST /sleep?level=2") {
            sleeping_ = true;
            return S::reply(200, "");
        }
        if (line == "POST /wake_up") {
            if (!wake_answer_.empty()) return wake_answer_;
            sleeping_ = false;
            return S::reply(200, "");
        }
        if (line == "GET /is_sleeping")
            return S::reply(
                200, std::string(R"({"is_sleeping":)") + (sleeping_ ? "true" : "false") + "}");
        return not_found();
    }
    // FastAPI's answer for a route that is not there (no VLLM_SERVER_DEV_MODE).
    static std::string not_found() {
        return FakeVllmServer::reply(404, R"({"detail":"Not Found"})");
    }

    std::unique_ptr<FakeVllmServer> serve(FakeVllmServer::Answer answer) {
        return std::make_unique<FakeVllmServer>(io_, std::move(answer), [this](std::string line) {
            return VllmSeen{std::move(line), slurp(fs_.path() / "w/cgroup.freeze").substr(0, 1),
                            thawed_};
        });
    }

    std::unique_ptr<WorkerSuspension> suspension() {
        return std::make_unique<WorkerSuspension>(
            io_, clock_, "w",
            [this](EventKind kind, std::string message, WorkerSuspension::Fields fields) {
                events_.push_back({kind, std::move(message), std::move(fields)});
            },
            [this] { ++thawed_; });
    }

    WorkerSuspension::EngineStep step(const FakeVllmServer& server, int64_t level = 1) {
        WorkerVllmSleep::Server s;
        s.engine.kind = EngineKind::vllm;
        s.engine.port = server.port();
        s.bearer = "sekret";
        s.timeout = engine_timeout_;
        WorkerSuspension::EngineStep step;
        step.name = "vllm-sleep";
        step.before = [this, s, level](std::function<void(Result<void>)> done) {
            sleeper_.sleep(s, level, std::move(done));
        };
        step.after = [this, s](std::function<void(Result<void>)> done) {
            sleeper_.wake(s, std::move(done));
        };
        step.cancel = [this] { sleeper_.cancel(); };
        return step;
    }

    CgroupDir dir() const { return CgroupDir(fs_.path() / "w"); }
    std::string freeze() const { return slurp(fs_.path() / "w/cgroup.freeze").substr(0, 1); }

    void run_until(const std::function<bool()>& done) {
        io_.restart();
        while (!done() && io_.run_one_for(std::chrono::seconds(30))) {
        }
        ASSERT_TRUE(done());
    }

    // Suspended (the `suspended` event) through `server`.
    WorkerSuspension::Outcome suspend(WorkerSuspension& s, const FakeVllmServer& server,
                                      int64_t level = 1) {
        std::optional<WorkerSuspension::Outcome> outcome;
        EXPECT_TRUE(s.suspend(
                         dir(), "infervisorctl",
                         [&](const WorkerSuspension::Outcome& o) { outcome = o; },
                         step(server, level))
                        .ok());
        run_until([&] { return outcome.has_value(); });
        return outcome.value_or(WorkerSuspension::Outcome{});
    }
    // A suspension a next daemon image adopts (the cgroup frozen already),
    // told by the state file whether the engine slept.
    std::unique_ptr<WorkerSuspension> suspend_then_adopt(const FakeVllmServer& server,
                                                         std::optional<bool> engine_slept) {
        auto s = suspension();
        EXPECT_TRUE(s->adopt(
                         dir(), "infervisorctl", clock_.now(), std::nullopt, [] {}, step(server),
                         engine_slept)
                        .ok());
        return s;
    }
    WorkerSuspension::Outcome resume(WorkerSuspension& s) {
        std::optional<WorkerSuspension::Outcome> outcome;
        EXPECT_TRUE(s.resume("infervisorctl", [&](const WorkerSuspension::Outcome& o) {
                         outcome = o;
                     }).ok());
        run_until([&] { return outcome.has_value(); });
        return outcome.value_or(WorkerSuspension::Outcome{});
    }

    struct Emitted {
        EventKind kind;
        std::string message;
        WorkerSuspension::Fields fields;
        std::string field(const std::string& name) const {
            for (const auto& [k, v] : fields)
                if (k == name) return v;
            return "(absent)";
        }
    };
    const Emitted& last(EventKind kind) const {
        for (auto it = events_.rbegin(); it != events_.rend(); ++it)
            if (it->kind == kind) return *it;
        static const Emitted none{EventKind::resumed, "(no such event)", {}};
        return none;
    }

    TempDir fs_;
    asio::io_context io_;
    FakeClock clock_;
    WorkerVllmSleep sleeper_{io_};
    Duration engine_timeout_ = 5s;
    bool sleeping_ = false;
    std::string wake_answer_;  // non-empty: /wake_up is answered so
    int thawed_ = 0;
    std::vector<Emitted> events_;
};

TEST_F(VllmSleep, TheEngineSleepsBeforeTheFreezeAndWakesAfterTheThaw) {
    auto server = serve([this](const std::string& line) { return vllm(line); });
    auto s = suspension();

    auto suspended = suspend(*s, *server, 2);
    EXPECT_TRUE(suspended.ok) << suspended.detail;
    EXPECT_EQ(freeze(), "1");
    ASSERT_THAT(server->lines(), ElementsAre("POST /sleep?level=2", "GET /is_sleeping"));
    // Asleep while it still ran: the freeze came after both answers.
    EXPECT_EQ(server->seen()[0].freeze, "0");
    EXPECT_EQ(server->seen()[1].freeze, "0");
    EXPECT_TRUE(server->authorized);
    const Emitted& e = last(EventKind::suspended);
    EXPECT_EQ(e.field("SUSPEND_METHOD"), "vllm-sleep");
    EXPECT_EQ(e.field("ENGINE_SLEEP"), "ok");
    EXPECT_EQ(e.field("ENGINE_SLEEP_ERROR"), "(absent)");
    EXPECT_EQ(e.field("MEMORY_BEFORE_SLEEP"), "");  // this fake cgroup has no memory.current
    EXPECT_EQ(e.field("FROZEN"), "1");
    EXPECT_THAT(e.message, HasSubstr("vllm-sleep: the engine sleeps"));

    auto resumed = resume(*s);
    EXPECT_TRUE(resumed.ok) << resumed.detail;
    EXPECT_EQ(resumed.detail, "resumed");
    ASSERT_THAT(server->lines(), ElementsAre("POST /sleep?level=2", "GET /is_sleeping",
                                             "POST /wake_up", "GET /is_sleeping"));
    // Woken once thawed, and once the Worker was told it runs again.
    EXPECT_EQ(server->seen()[2].freeze, "0");
    EXPECT_EQ(server->seen()[2].thawed, 1);
    EXPECT_FALSE(sleeping_);
    EXPECT_FALSE(s->active());
    const Emitted& r = last(EventKind::resumed);
    EXPECT_EQ(r.field("ENGINE_WAKE"), "ok");
    EXPECT_EQ(r.field("TRIGGER"), "infervisorctl");
}

TEST_F(VllmSleep, ASleepRefusedBecauseDevModeIsOffStillFreezesAndTheJournalSaysWhy) {
    auto server = serve([](const std::string&) { return not_found(); });
    auto s = suspension();

    auto suspended = suspend(*s, *server);
    EXPECT_TRUE(suspended.ok) << suspended.detail;
    EXPECT_EQ(freeze(), "1");
    EXPECT_THAT(server->lines(), ElementsAre("POST /sleep?level=1"));
    const Emitted& e = last(EventKind::suspended);
    EXPECT_EQ(e.field("ENGINE_SLEEP"), "failed");
    EXPECT_THAT(e.field("ENGINE_SLEEP_ERROR"), HasSubstr("HTTP 404"));
    EXPECT_THAT(e.field("ENGINE_SLEEP_ERROR"), HasSubstr("VLLM_SERVER_DEV_MODE=1"));
    EXPECT_THAT(e.field("ENGINE_SLEEP_ERROR"), HasSubstr("--enable-sleep-mode"));
    EXPECT_THAT(e.message, HasSubstr("a plain freeze instead"));

    // Never asleep, so never woken: the resume is a plain thaw.
    auto resumed = resume(*s);
    EXPECT_TRUE(resumed.ok) << resumed.detail;
    EXPECT_EQ(freeze(), "0");
    EXPECT_THAT(server->lines(), ElementsAre("POST /sleep?level=1"));
    EXPECT_EQ(last(EventKind::resumed).field("ENGINE_WAKE"), "(absent)");
}

// Across a daemon's re-execution: the next image adopts the suspension
// with what the state file says of the sleep. After a failed sleep its
// resume asks for no wake (vLLM without dev mode would answer 404, and
// the journal would say the engine sleeps on); after a sleep, or when an
// older daemon's file does not say, it asks.
TEST_F(VllmSleep, AnAdoptedSuspensionWakesTheEngineOnlyIfItSlept) {
    auto refusing = serve([](const std::string&) { return not_found(); });
    auto first = suspension();
    // While the sleep is under way, a state file written says nothing (an
    // adopting daemon then asks for the wake).
    ASSERT_TRUE(first->suspend(dir(), "infervisorctl", {}, step(*refusing)).ok());
    EXPECT_FALSE(first->engine_asleep().has_value());
    run_until([&] { return first->engine_asleep().has_value(); });
    ASSERT_EQ(first->engine_asleep(), std::optional<bool>(false));  // what is persisted
    auto slept = suspend_then_adopt(*refusing, false);
    EXPECT_FALSE(slept->engine_asleep().value_or(true));
    resume(*slept);
    EXPECT_THAT(refusing->lines(), ElementsAre("POST /sleep?level=1")) << "no wake asked";
    EXPECT_EQ(last(EventKind::resumed).field("ENGINE_WAKE"), "(absent)");

    for (std::optional<bool> said : {std::optional<bool>(true), std::optional<bool>()}) {
        sleeping_ = true;
        auto server = serve([this](const std::string& line) { return vllm(line); });
        auto adopted = suspend_then_adopt(*server, said);
        EXPECT_EQ(adopted->engine_asleep(), std::optional<bool>(true));
        resume(*adopted);
        EXPECT_THAT(server->lines(), ElementsAre("POST /wake_up", "GET /is_sleeping"))
            << (said ? "slept" : "not said");
        EXPECT_FALSE(sleeping_);
    }
}

TEST_F(VllmSleep, ASleepThatIsSaidDoneButDidNotHappenIsAFailedSleep) {
    auto server = serve([this](const std::string& line) {
        if (line == "GET /is_sleeping")
            return FakeVllmServer::reply(200, R"({"is_sleeping":false})");
        return vllm(line);
    });
    auto s = suspension();
    auto suspended = suspend(*s, *server);
    EXPECT_TRUE(suspended.ok) << suspended.detail;
    EXPECT_EQ(freeze(), "1");
    const Emitted& e = last(EventKind::suspended);
    EXPECT_EQ(e.field("ENGINE_SLEEP"), "failed");
    EXPECT_THAT(e.field("ENGINE_SLEEP_ERROR"), HasSubstr("GET /is_sleeping says false"));
}

TEST_F(VllmSleep, AWakeThatFailsIsJournaledAndTheWorkerRunsOnAsleep) {
    auto server = serve([this](const std::string& line) { return vllm(line); });
    auto s = suspension();
    ASSERT_TRUE(suspend(*s, *server).ok);
    wake_answer_ = FakeVllmServer::reply(500, "Internal Server Error", "text/plain");

    auto resumed = resume(*s);
    EXPECT_TRUE(resumed.ok) << resumed.detail;  // thawed: it runs
    EXPECT_THAT(resumed.detail, HasSubstr("its engine did not wake"));
    EXPECT_EQ(freeze(), "0");
    EXPECT_EQ(thawed_, 1);
    EXPECT_FALSE(s->active());
    EXPECT_TRUE(sleeping_);
    const Emitted& r = last(EventKind::resumed);
    EXPECT_EQ(r.field("ENGINE_WAKE"), "failed");
    EXPECT_THAT(r.field("ENGINE_WAKE_ERROR"), HasSubstr("POST /wake_up: HTTP 500"));
    EXPECT_THAT(r.message, HasSubstr("its engine did not wake"));
    EXPECT_THAT(r.message, HasSubstr("POST /wake_up"));
}

// A server that accepts and never answers: the suspension goes on once the
// engine's timeout has passed (a plain freeze), and so does a resume.
TEST_F(VllmSleep, ASilentServerHoldsASuspensionOnlyUntilTheEngineTimeout) {
    engine_timeout_ = 300ms;
    auto server = serve([](const std::string&) { return std::string(); });
    auto s = suspension();

    auto suspended = suspend(*s, *server);
    EXPECT_TRUE(suspended.ok) << suspended.detail;
    EXPECT_EQ(freeze(), "1");
    EXPECT_THAT(server->lines(), ElementsAre("POST /sleep?level=1"));
    EXPECT_EQ(last(EventKind::suspended).field("ENGINE_SLEEP"), "failed");
    EXPECT_NE(last(EventKind::suspended).field("ENGINE_SLEEP_ERROR"), "(absent)");
}

TEST_F(VllmSleep, ASilentWakeEndsAtTheEngineTimeoutWithTheWorkerThawed) {
    engine_timeout_ = 300ms;
    auto server = serve([this](const std::string& line) {
        return line == "POST /wake_up" ? std::string() : vllm(line);
    });
    auto s = suspension();
    ASSERT_TRUE(suspend(*s, *server).ok);
    auto resumed = resume(*s);
    EXPECT_TRUE(resumed.ok) << resumed.detail;
    EXPECT_EQ(freeze(), "0");
    EXPECT_EQ(last(EventKind::resumed).field("ENGINE_WAKE"), "failed");
}

TEST_F(VllmSleep, AResumeAskedForDuringTheSleepComesAfterTheSuspension) {
    auto server = serve([this](const std::string& line) { return vllm(line); });
    auto s = suspension();
    std::optional<WorkerSuspension::Outcome> suspended, resumed;
    ASSERT_TRUE(s->suspend(
                     dir(), "rule 'x'", [&](const WorkerSuspension::Outcome& o) { suspended = o; },
                     step(*server))
                    .ok());
    ASSERT_TRUE(
        s->resume("infervisorctl", [&](const WorkerSuspension::Outcome& o) { resumed = o; }).ok());
    run_until([&] { return resumed.has_value(); });
    ASSERT_TRUE(suspended.has_value());
    EXPECT_TRUE(suspended->ok);
    EXPECT_TRUE(resumed->ok) << resumed->detail;
    EXPECT_THAT(server->lines(), ElementsAre("POST /sleep?level=1", "GET /is_sleeping",
                                             "POST /wake_up", "GET /is_sleeping"));
    EXPECT_EQ(freeze(), "0");
    EXPECT_FALSE(sleeping_);
}

TEST_F(VllmSleep, ARunThatEndsDuringTheSleepIsNeitherFrozenNorWaitedFor) {
    auto server = serve([](const std::string&) { return std::string(); });  // silent
    auto s = suspension();
    std::optional<WorkerSuspension::Outcome> suspended;
    ASSERT_TRUE(s->suspend(
                     dir(), "rule 'x'", [&](const WorkerSuspension::Outcome& o) { suspended = o; },
                     step(*server))
                    .ok());
    run_until([&] { return server->seen().size() == 1; });
    s->abandon();
    ASSERT_TRUE(suspended.has_value());
    EXPECT_FALSE(suspended->ok);
    EXPECT_FALSE(s->active());
    EXPECT_EQ(freeze(), "0");
    EXPECT_TRUE(events_.empty());
}

// A freeze that never completes after the sleep is given up as without
// one (limits back, thawed, `resumed` with SUSPEND_FAILED), and the engine
// is woken again: the worker runs on, serving.
TEST_F(VllmSleep, AFreezeGivenUpAfterTheSleepWakesTheEngineAgain) {
    fs_.write("w/cgroup.events", "populated 1\nfrozen 0\n");
    auto server = serve([this](const std::string& line) { return vllm(line); });
    auto s = suspension();
    std::optional<WorkerSuspension::Outcome> suspended;
    ASSERT_TRUE(s->suspend(
                     dir(), "rule 'x'", [&](const WorkerSuspension::Outcome& o) { suspended = o; },
                     step(*server))
                    .ok());
    run_until([&] { return freeze() == "1"; });
    clock_.advance(WorkerSuspension::kFreezeWait + 1s);
    run_until([&] { return suspended.has_value(); });
    EXPECT_FALSE(suspended->ok);
    EXPECT_THAT(suspended->detail, HasSubstr("not frozen within 10s"));
    EXPECT_THAT(server->lines(), ElementsAre("POST /sleep?level=1", "GET /is_sleeping",
                                             "POST /wake_up", "GET /is_sleeping"));
    EXPECT_EQ(server->seen()[2].freeze, "0");
    EXPECT_EQ(server->seen()[2].thawed, 1);
    EXPECT_FALSE(sleeping_);
    EXPECT_FALSE(s->active());
    const Emitted& r = last(EventKind::resumed);
    EXPECT_THAT(r.field("SUSPEND_FAILED"), HasSubstr("not frozen"));
    EXPECT_EQ(r.field("ENGINE_SLEEP"), "ok");
    EXPECT_EQ(r.field("ENGINE_WAKE"), "ok");
}

// The same through a Worker of a real Supervisor (the example worker in a
// real cgroup): its `suspend:` and `engine:` keys decide the step, for
// infervisorctl's suspend and resume as for a rule's.
class VllmSleepWorker : public SupervisorFixture {
  protected:
    std::string vllm(const std::string& line) {
        using S = FakeVllmServer;
        if (line.starts_with("POST /sleep?level=")) sleeping_ = true;
        if (line == "POST /wake_up") sleeping_ = false;
        if (line == "GET /is_sleeping")
            return S::reply(
                200, std::string(R"({"is_sleeping":)") + (sleeping_ ? "true" : "false") + "}");
        return S::reply(200, "");
    }
    bool sleeping_ = false;
};

TEST_F(VllmSleepWorker, AWorkerWithSuspendMethodVllmSleepSleepsBeforeItsFreeze) {
    Worker* w = nullptr;
    FakeVllmServer server(
        io_, [this](const std::string& line) { return vllm(line); },
        [&](std::string line) {
            auto frozen = w->cgroup().frozen();
            return VllmSeen{std::move(line), frozen && *frozen ? "1" : "0",
                            w->state() == WorkerState::running ? 1 : 0};
        });
    WorkerSpec spec = example("v", {});
    spec.engine = EngineSpec{};
    spec.engine->kind = EngineKind::vllm;
    spec.engine->port = server.port();
    spec.suspend.method = SuspendMethod::vllm_sleep;
    supervisor_->apply(config({spec}));
    run_until_event("v", EventKind::started);
    w = supervisor_->find("v");
    ASSERT_NE(w, nullptr);

    std::optional<WorkerSuspension::Outcome> suspended;
    ASSERT_TRUE(w->suspend("infervisorctl", [&](const auto& o) { suspended = o; }).ok());
    EXPECT_EQ(w->state(), WorkerState::suspended);
    run_until([&] { return suspended.has_value(); });
    EXPECT_TRUE(suspended->ok) << suspended->detail;
    ASSERT_THAT(server.lines(), ElementsAre("POST /sleep?level=1", "GET /is_sleeping"));
    EXPECT_EQ(server.seen()[0].freeze, "0");
    EXPECT_EQ(field(*last("v", EventKind::suspended), "ENGINE_SLEEP"), "ok");
    EXPECT_TRUE(sleeping_);

    std::optional<WorkerSuspension::Outcome> resumed;
    ASSERT_TRUE(w->resume("infervisorctl", [&](const auto& o) { resumed = o; }).ok());
    run_until([&] { return resumed.has_value(); });
    EXPECT_TRUE(resumed->ok) << resumed->detail;
    ASSERT_THAT(server.lines(), ElementsAre("POST /sleep?level=1", "GET /is_sleeping",
                                            "POST /wake_up", "GET /is_sleeping"));
    // Woken once thawed and running again.
    EXPECT_EQ(server.seen()[2].freeze, "0");
    EXPECT_EQ(server.seen()[2].thawed, 1);
    EXPECT_FALSE(sleeping_);
    EXPECT_EQ(field(*last("v", EventKind::resumed), "ENGINE_WAKE"), "ok");
    EXPECT_EQ(w->state(), WorkerState::running);
}

// A suspension for memory (a host rule's, or a rule on the worker's own
// memory) does not ask for a level-1 sleep: it would move the weights into
// host memory, pinned and charged to the worker, which is what runs short.
// A plain freeze, said; no wake at the resume. Level 2 (the weights
// discarded) is still asked for.
TEST_F(VllmSleepWorker, ASuspensionForMemoryAsksForNoLevelOneSleep) {
    for (int level : {1, 2}) {
        sleeping_ = false;
        FakeVllmServer server(
            io_, [this](const std::string& line) { return vllm(line); },
            [](std::string line) {
                return VllmSeen{std::move(line), "", 0};
            });
        std::string name = "v" + std::to_string(level);
        WorkerSpec spec = example(name, {});
        spec.engine = EngineSpec{};
        spec.engine->kind = EngineKind::vllm;
        spec.engine->port = server.port();
        spec.suspend.method = SuspendMethod::vllm_sleep;
        spec.suspend.level = level;
        supervisor_->apply(config({spec}));
        run_until_event(name, EventKind::started);
        Worker* w = supervisor_->find(name);
        std::optional<WorkerSuspension::Outcome> suspended;
        ASSERT_TRUE(w->suspend(
                         "rule 'low'", [&](const auto& o) { suspended = o; }, true)
                        .ok());
        run_until([&] { return suspended.has_value(); });
        EXPECT_TRUE(suspended->ok) << suspended->detail;
        const Event& e = *last(name, EventKind::suspended);
        if (level == 1) {
            EXPECT_TRUE(server.seen().empty());
            EXPECT_EQ(field(e, "SUSPEND_METHOD"), "vllm-sleep");
            EXPECT_EQ(field(e, "ENGINE_SLEEP"), "skipped");
            EXPECT_THAT(field(e, "ENGINE_SLEEP_SKIPPED"),
                        HasSubstr("level 1 would move the weights into host memory"));
            EXPECT_THAT(e.message, HasSubstr("vllm-sleep not asked for (for memory: level 1"));
        } else {
            EXPECT_THAT(server.lines(), ElementsAre("POST /sleep?level=2", "GET /is_sleeping"));
            EXPECT_EQ(field(e, "ENGINE_SLEEP"), "ok");
        }
        std::optional<WorkerSuspension::Outcome> resumed;
        ASSERT_TRUE(w->resume("infervisorctl", [&](const auto& o) { resumed = o; }).ok());
        run_until([&] { return resumed.has_value(); });
        if (level == 1) {
            EXPECT_TRUE(server.seen().empty()) << "no wake for a sleep not asked for";
        }
        w->stop();
        run_until([&] { return w->state() == WorkerState::stopped; });
    }
}

TEST_F(VllmSleepWorker, AWorkerWithoutTheMethodIsFrozenWithoutAsking) {
    FakeVllmServer server(
        io_, [this](const std::string& line) { return vllm(line); },
        [](std::string line) {
            return VllmSeen{std::move(line), "", 0};
        });
    WorkerSpec spec = example("v", {});
    spec.engine = EngineSpec{};
    spec.engine->kind = EngineKind::vllm;
    spec.engine->port = server.port();
    supervisor_->apply(config({spec}));
    run_until_event("v", EventKind::started);
    Worker* w = supervisor_->find("v");
    std::optional<WorkerSuspension::Outcome> suspended;
    ASSERT_TRUE(w->suspend("infervisorctl", [&](const auto& o) { suspended = o; }).ok());
    run_until([&] { return suspended.has_value(); });
    EXPECT_TRUE(suspended->ok) << suspended->detail;
    EXPECT_TRUE(server.seen().empty());
    EXPECT_EQ(field(*last("v", EventKind::suspended), "ENGINE_SLEEP"), "");
}

}  // namespace
}  // namespace infervisor::testing
