// PolicyRunner on real processes: decisions of the pure engine are carried
// out on the worker (or only journalled in dry-run mode).
#include "services/policy_runner.h"

#include <gmock/gmock.h>
#include <yaml-cpp/yaml.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include "base/file_io.h"
#include "policy/rule_config.h"
#include "services/gpu_watch.h"
#include "supervise/fake_ollama.h"
#include "supervise/supervisor_fixture.h"
#include "support/temp_dir.h"

namespace infervisor::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using K = EventKind;
using namespace std::chrono_literals;

class PolicyRunnerTest : public SupervisorFixture {
  protected:
    explicit PolicyRunnerTest(bool fake_time = false) : SupervisorFixture(fake_time) {}
    Config with_rule(WorkerSpec spec, const char* rules_yaml) {
        ConfigErrors errors;
        spec.rules = parse_rules(YAML::Load(rules_yaml), errors);
        EXPECT_TRUE(errors.empty()) << errors.format();
        Config c = config({spec});
        c.daemon.sample_interval = 100ms;
        return c;
    }
    void start(const Config& c, std::optional<SignalWatchFiles> files = std::nullopt) {
        runner_ = std::make_unique<PolicyRunner>(*ctx_, *supervisor_);
        if (files) runner_->set_signal_files(*files);
        runner_->configure(c);
        supervisor_->apply(c);
        runner_->start();
    }
    // Runs the event loop for a while (to let pending notifications pass).
    void run_for(std::chrono::milliseconds d) {
        auto end = std::chrono::steady_clock::now() + d;
        run_until([&] { return std::chrono::steady_clock::now() > end; });
    }
    // A GpuWatch on the tests' stand-in NVML (tests/unit/gpu/fake_nvml.cpp)
    // reading dir/nvml, written with `fixture` first; opened, its events in
    // the test's journal, its cards the context's gpu_devices.
    GpuWatch& fake_gpus(TempDir& dir, const std::string& fixture) {
        const char* fake = std::getenv("INFERVISOR_FAKE_NVML");
        if (!fake) throw std::runtime_error("the tests' meson.build sets INFERVISOR_FAKE_NVML");
        ::setenv("FAKE_NVML_FIXTURE", dir.write("nvml", fixture).c_str(), 1);
        ctx_->paths.nvml_library = fake;
        gpus_ = std::make_unique<GpuWatch>(io_, ctx_->paths, clock_, &ctx_->events);
        open(*gpus_);
        ctx_->gpu_devices = [this] { return gpus_->devices_for_start(); };
        return *gpus_;
    }
    // The first refresh() opens the GPU sources in the background.
    void open(GpuWatch& gpus) {
        gpus.refresh({}, Duration::zero());
        run_until([&] { return gpus.opened(); });
    }
    void TearDown() override {
        if (runner_) runner_->stop();
        // A test's GpuWatch is gone by now; the workers' restarts must not ask it.
        ctx_->gpu_devices = nullptr;
        ctx_->nvidia_memory_of = nullptr;
        gpus_.reset();
        SupervisorFixture::TearDown();
    }
    std::unique_ptr<PolicyRunner> runner_;
    std::unique_ptr<GpuWatch> gpus_;
};

TEST_F(PolicyRunnerTest, ARuleKillsTheWorkerAndParksIt) {
    start(with_rule(example("runaway", {}),
                    "[{name: too-long, when: 'runtime > 300ms', action: kill, then: park}]"));
    run_until_event("runaway", K::exited);
    run_until([&] { return supervisor_->find("runaway")->state() == WorkerState::parked; });
    const Event* action = last("runaway", K::policy_action);
    ASSERT_NE(action, nullptr);
    EXPECT_EQ(field(*action, "RULE"), "too-long");
    EXPECT_EQ(field(*action, "ACTION"), "kill");
    EXPECT_EQ(field(*action, "RESULT"), "done");
    EXPECT_EQ(field(*last("runaway", K::exited), "EXIT_SIGNAL"), "SIGKILL");
    EXPECT_EQ(count("runaway", K::started), 1u);  // parked: no restart
    EXPECT_THAT(kinds_of("runaway"),
                ElementsAre(K::started, K::ready, K::policy_action, K::exited, K::parked));
    const Event* parked = last("runaway", K::parked);
    EXPECT_EQ(field(*parked, "RULE"), "too-long");
    EXPECT_EQ(field(*parked, "LAST_EXIT"), "killed by SIGKILL");
    EXPECT_THAT(parked->message, HasSubstr("infervisorctl start runaway"));

    supervisor_->find("runaway")->start();  // an operator's start
    run_until_event("runaway", K::started, 2);
}

// Issue 25, gentle first: a host rule's `preempt` suspends a preemptible
// worker when the host (a fake /proc) has swap free for it. This machine's
// cgroup2 has no memory controller, so the suspension frees nothing: that is
// journaled, and the ladder goes on at once to a kill by the same rule. Its
// next run is not suspended again but killed, and the journal says why.
TEST_F(PolicyRunnerTest, APreemptSuspensionThatFreesNothingGoesOnToAKill) {
    TempDir proc;
    auto meminfo = [&](int available_percent) {
        proc.write("meminfo", "MemTotal: 1048576 kB\nMemAvailable: " +
                                  std::to_string(1048576 / 100 * available_percent) +
                                  " kB\nSwapTotal: 1048576 kB\nSwapFree: 1048576 kB\n");
    };
    meminfo(5);
    ctx_->paths.procfs = proc.path();
    Config c = config({example("batch", {})});
    c.daemon.sample_interval = 100ms;
    c.daemon.host_settle = 0ms;
    ConfigErrors errors;
    c.host_rules = parse_host_rules(
        YAML::Load("[{name: low, when: 'host.mem.available < 10%', action: preempt}]"), errors);
    ASSERT_TRUE(errors.empty()) << errors.format();
    start(c);
    run_until_event("batch", K::exited);
    std::vector<const Event*> actions;
    for (const Event& e : events_)
        if (e.worker == "batch" && e.kind == K::policy_action) actions.push_back(&e);
    ASSERT_EQ(actions.size(), 2u);
    EXPECT_EQ(field(*actions[0], "ACTION"), "suspend");
    EXPECT_EQ(field(*actions[0], "PREEMPT_STEP"), "suspend: preemptible, swap free 1G");
    EXPECT_EQ(field(*actions[1], "ACTION"), "kill");
    EXPECT_EQ(field(*actions[1], "RULE"), "low");
    EXPECT_EQ(field(*actions[1], "PREEMPT_STEP"),
              "kill: the suspension freed only 0B of its memory");
    EXPECT_EQ(field(*actions[1], "SUSPENSION_BYTES_RECLAIMED"), "0");
    EXPECT_EQ(field(*last("batch", K::exited), "EXIT_SIGNAL"), "SIGKILL");
    // The cause before its effects: the suspension, then the kill (then its
    // restart, which may already have begun).
    std::vector<EventKind> kinds = kinds_of("batch");
    kinds.resize(std::min<size_t>(kinds.size(), 6));
    EXPECT_THAT(kinds, ElementsAre(K::started, K::ready, K::policy_action, K::suspended,
                                   K::policy_action, K::exited));

    meminfo(50);  // room: it restarts ...
    run_until_event("batch", K::started, 2);
    // The rule fired and is latched until a round sees its condition false.
    const size_t rounds = runner_->evaluations();
    run_until([&] { return runner_->evaluations() >= rounds + 2; });
    meminfo(5);  // ... into the same trouble
    run_until([&] { return count("batch", K::policy_action) >= 3; });
    const Event* third = last("batch", K::policy_action);
    EXPECT_EQ(field(*third, "ACTION"), "kill");
    EXPECT_EQ(field(*third, "PREEMPT_STEP"),
              "kill: not suspended (its suspension by rule 'low' freed 0B of its memory), not "
              "checkpointed (no checkpoint of it has completed)");
}

TEST_F(PolicyRunnerTest, ThenRestartRestartsEvenWithRestartPolicyNever) {
    auto spec = example("looper", {});
    spec.restart.mode = RestartMode::never;
    start(with_rule(spec,
                    "[{name: too-long, when: 'runtime > 300ms', action: kill, then: restart}]"));
    run_until_event("looper", K::started, 2);
    EXPECT_GE(count("looper", K::restarting), 1u);
}

TEST_F(PolicyRunnerTest, DryRunDecidesAndJournalsButDoesNotAct) {
    auto c = with_rule(example("calm", {}),
                       "[{name: too-long, when: 'runtime > 300ms', action: kill, then: park}]");
    c.daemon.dry_run = true;
    start(c);
    run_until_event("calm", K::policy_action);
    const Event* action = last("calm", K::policy_action);
    EXPECT_EQ(field(*action, "DRY_RUN"), "1");
    EXPECT_EQ(field(*action, "RESULT"), "dry-run: not taken");
    EXPECT_THAT(action->message, HasSubstr("(dry run)"));
    EXPECT_EQ(count("calm", K::exited), 0u);
    EXPECT_EQ(supervisor_->find("calm")->state(), WorkerState::running);
}

TEST_F(PolicyRunnerTest, CheckpointActionCheckpointsThenStopsCleanlyWithTheStopSignal) {
    start(with_rule(example("tidy", {}),
                    "[{name: too-long, when: 'runtime > 300ms', action: checkpoint, then: park}]"));
    run_until([&] { return supervisor_->find("tidy")->state() == WorkerState::parked; });
    EXPECT_EQ(field(*last("tidy", K::checkpoint_written), "TRIGGER"), "rule 'too-long'");
    EXPECT_EQ(field(*last("tidy", K::exited), "EXIT_CODE"), "0");  // exited on SIGTERM
    EXPECT_EQ(count("tidy", K::stop_escalated), 0u);
    std::vector<K> order;
    for (K k : kinds_of("tidy"))
        if (k == K::policy_action || k == K::checkpoint_written || k == K::exited)
            order.push_back(k);
    EXPECT_EQ(order, (std::vector<K>{K::policy_action, K::checkpoint_written, K::exited}));
}

TEST_F(PolicyRunnerTest, AKernelNotificationEvaluatesWithoutWaitingForTheTick) {
    auto c =
        with_rule(example("watched", {}), "[{name: never, when: 'runtime > 1d', action: log}]");
    c.daemon.sample_interval = 1h;  // the tick will not come during this test
    // This host has no memory controller: cgroup.events stands in for
    // memory.events (both are notified through kernfs_notify()).
    start(c, SignalWatchFiles{"memory.pressure", "cgroup.events"});
    run_until_event("watched", K::ready);
    run_for(300ms);  // notifications of the start itself
    size_t before = runner_->evaluations();

    ASSERT_TRUE(supervisor_->find("watched")->freeze().ok());  // cgroup.events: frozen 1
    run_until([&] { return runner_->evaluations() > before; });
    ASSERT_TRUE(supervisor_->find("watched")->cgroup().set_frozen(false).ok());
}

TEST_F(PolicyRunnerTest, WakeUpsAreCoalescedIntoOneQueuedEvaluation) {
    auto c = with_rule(example("calm", {}), "[{name: never, when: 'runtime > 1d', action: log}]");
    c.daemon.sample_interval = 1h;
    start(c);
    run_until_event("calm", K::ready);
    size_t before = runner_->evaluations();
    for (int i = 0; i < 5; ++i) runner_->request_evaluation("test");
    run_until([&] { return runner_->evaluations() > before; });
    run_for(2 * PolicyRunner::kMinWakeGap);
    EXPECT_EQ(runner_->evaluations(), before + 1);

    // Right after an evaluation a wake-up is delayed, not dropped.
    runner_->request_evaluation("test");
    run_until([&] { return runner_->evaluations() > before + 1; });
}

// On fake time: the tick every sample_interval, and the wake-up that waits
// for kMinWakeGap after an evaluation, each exactly at its time.
class PolicyRunnerOnFakeTime : public PolicyRunnerTest {
  protected:
    PolicyRunnerOnFakeTime() : PolicyRunnerTest(true) {}
};

TEST_F(PolicyRunnerOnFakeTime, TicksEverySampleIntervalAndAWakeUpWaitsForTheGap) {
    auto c = with_rule(example("calm", {}), "[{name: never, when: 'runtime > 1d', action: log}]");
    c.daemon.sample_interval = 10s;
    start(c);
    run_until_event("calm", K::ready);
    size_t before = runner_->evaluations();
    advance(10s - 1ms);
    EXPECT_EQ(runner_->evaluations(), before);
    advance(1ms);
    EXPECT_EQ(runner_->evaluations(), before + 1);  // the tick
    advance(10s);
    EXPECT_EQ(runner_->evaluations(), before + 2);  // and the next

    // Right after the tick's evaluation: delayed by the gap, coalesced.
    runner_->request_evaluation("test");
    runner_->request_evaluation("test");
    advance(PolicyRunner::kMinWakeGap - 1ms);
    EXPECT_EQ(runner_->evaluations(), before + 2);
    advance(1ms);
    EXPECT_EQ(runner_->evaluations(), before + 3);
    advance(PolicyRunner::kMinWakeGap);
    EXPECT_EQ(runner_->evaluations(), before + 3);
}

TEST_F(PolicyRunnerTest, StoppedRunnerDoesNotEvaluateOnWakeUps) {
    auto c = with_rule(example("calm", {}), "[{name: never, when: 'runtime > 1d', action: log}]");
    c.daemon.sample_interval = 1h;
    start(c);
    run_until_event("calm", K::ready);
    runner_->request_evaluation("test");
    runner_->stop();
    size_t before = runner_->evaluations();
    run_for(2 * PolicyRunner::kMinWakeGap);
    EXPECT_EQ(runner_->evaluations(), before);
}

// Serves llama-server's /metrics of a stuck server (tokens flat, a request
// in flight) to every request that brings the right key; 401 otherwise.
class StuckLlamaServer {
  public:
    explicit StuckLlamaServer(boost::asio::io_context& io)
        : acceptor_(io,
                    boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0)) {
        accept();
    }
    int port() const { return acceptor_.local_endpoint().port(); }
    size_t scrapes() const { return scrapes_; }
    size_t refused() const { return refused_; }

  private:
    using tcp = boost::asio::ip::tcp;
    void accept() {
        acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
            if (ec) return;
            auto s = std::make_shared<tcp::socket>(std::move(socket));
            auto request = std::make_shared<std::string>();
            read(s, request);
            accept();
        });
    }
    void read(std::shared_ptr<tcp::socket> s, std::shared_ptr<std::string> request) {
        auto buffer = std::make_shared<std::array<char, 2048>>();
        s->async_read_some(
            boost::asio::buffer(*buffer),
            [this, s, request, buffer](const boost::system::error_code& ec, size_t n) {
                if (ec) return;
                request->append(buffer->data(), n);
                if (request->find("\r\n\r\n") == std::string::npos) return read(s, request);
                auto answer = std::make_shared<std::string>(answer_to(*request));
                boost::asio::async_write(*s, boost::asio::buffer(*answer),
                                         [s, answer](const boost::system::error_code&, size_t) {
                                             boost::system::error_code ignored;
                                             s->close(ignored);
                                         });
            });
    }
    std::string answer_to(const std::string& request) {
        if (request.find("\r\nAuthorization: Bearer llama-secret\r\n") == std::string::npos) {
            ++refused_;
            return "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n";
        }
        ++scrapes_;
        const std::string text =
            "# HELP llamacpp:tokens_predicted_total Number of generation tokens processed\n"
            "# TYPE llamacpp:tokens_predicted_total counter\n"
            "llamacpp:tokens_predicted_total 3469\n"
            "# HELP llamacpp:requests_processing Number of requests processing\n"
            "# TYPE llamacpp:requests_processing gauge\n"
            "llamacpp:requests_processing 1\n";
        return "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: " +
               std::to_string(text.size()) + "\r\n\r\n" + text;
    }
    tcp::acceptor acceptor_;
    size_t scrapes_ = 0;
    size_t refused_ = 0;
};

// Issue 29: a server that answers but does not generate is caught by its own
// metrics, scraped with the worker's api_key; a series a rule names that the
// server does not show is journaled once per run.
TEST_F(PolicyRunnerTest, TheStuckRuleOnTheWorkersOwnMetricsKillsIt) {
    StuckLlamaServer server(io_);
    TempDir secrets;
    WorkerSpec spec = example("llama", {});
    spec.credentials["llama_key"] = secrets.write("llama_key", "llama-secret\n");
    spec.engine = EngineSpec{.kind = EngineKind::llama_server,
                             .port = server.port(),
                             .api_key = "llama_key",
                             .metrics = "/metrics"};
    start(with_rule(spec,
                    "[{name: stuck, when: 'engine.rate(llamacpp:tokens_predicted_total) == 0 "
                    "and engine.llamacpp:requests_processing > 0 for 500ms', action: kill, "
                    "then: park},"
                    " {name: cache, when: 'engine.llamacpp:kv_cache_usage_ratio > 0.9', "
                    "action: log}]"));
    run_until_event("llama", K::exited);
    const Event* absent = last("llama", K::engine_series_absent);
    ASSERT_NE(absent, nullptr);
    EXPECT_EQ(field(*absent, "SERIES"), "llamacpp:kv_cache_usage_ratio");
    EXPECT_EQ(field(*absent, "ENGINE_METRICS"), "/metrics");
    EXPECT_EQ(count("llama", K::engine_series_absent), 1u) << "once per run";
    const Event* action = last("llama", K::policy_action);
    ASSERT_NE(action, nullptr);
    EXPECT_EQ(field(*action, "RULE"), "stuck");
    EXPECT_EQ(field(*action, "ENGINE_LLAMACPP_TOKENS_PREDICTED_TOTAL_PER_SEC"), "0");
    EXPECT_EQ(field(*action, "ENGINE_LLAMACPP_REQUESTS_PROCESSING"), "1");
    EXPECT_THAT(action->message,
                HasSubstr("engine.rate(llamacpp:tokens_predicted_total) is 0 (== 0) and "
                          "engine.llamacpp:requests_processing is 1 (> 0) for"));
    EXPECT_GE(server.scrapes(), 3u);
    EXPECT_EQ(server.refused(), 0u) << "the key went with every scrape";
    run_until([&] { return supervisor_->find("llama")->state() == WorkerState::parked; });
}

// A metrics endpoint that refuses every scrape (here: the server wants a
// key the worker's engine does not name) leaves the rules on it unable to
// act: journaled once per run, with the server's answer.
TEST_F(PolicyRunnerTest, AMetricsEndpointThatFailsIsJournaledOncePerRun) {
    StuckLlamaServer server(io_);
    WorkerSpec spec = example("llama", {});
    spec.engine =
        EngineSpec{.kind = EngineKind::llama_server, .port = server.port(), .metrics = "/metrics"};
    start(with_rule(spec,
                    "[{name: stuck, when: 'engine.llamacpp:requests_processing > 0 for 0s', "
                    "action: kill}]"));
    run_until_event("llama", K::engine_metrics_failed);
    run_until([&] { return server.refused() >= 3; });
    const Event* failed = last("llama", K::engine_metrics_failed);
    EXPECT_EQ(field(*failed, "ENGINE_METRICS"), "/metrics");
    EXPECT_THAT(field(*failed, "ERROR"), HasSubstr("401"));
    EXPECT_THAT(failed->message, HasSubstr("the rules on engine.* cannot act until it answers"));
    EXPECT_EQ(count("llama", K::engine_metrics_failed), 1u) << "once per run";
    EXPECT_EQ(count("llama", K::policy_action), 0u);
}

// Issue 29: an Ollama worker picked by a host rule's `preempt` has its
// models unloaded first (the server keeps running), and with them gone the
// ladder stops there. With nothing loaded the unload frees nothing: the
// ladder goes on at once to the step it would have taken without it (a
// suspension, which frees nothing here either, then the kill).
class PolicyRunnerOllama : public PolicyRunnerTest {
  protected:
    void start_low_host(FakeOllama& server) {
        proc_.write("meminfo",
                    "MemTotal: 1048576 kB\nMemAvailable: 52428 kB\nSwapTotal: 1048576 kB\n"
                    "SwapFree: 1048576 kB\n");
        ctx_->paths.procfs = proc_.path();
        WorkerSpec spec = example("ollama", {});
        spec.engine = EngineSpec{.kind = EngineKind::ollama, .port = server.port()};
        Config c = config({spec});
        c.daemon.sample_interval = 100ms;
        c.daemon.host_settle = 0ms;
        ConfigErrors errors;
        c.host_rules = parse_host_rules(
            YAML::Load("[{name: low, when: 'host.mem.available < 10%', action: preempt}]"), errors);
        ASSERT_TRUE(errors.empty()) << errors.format();
        start(c);
    }
    std::vector<const Event*> actions() const {
        std::vector<const Event*> out;
        for (const Event& e : events_)
            if (e.worker == "ollama" && e.kind == K::policy_action) out.push_back(&e);
        return out;
    }
    TempDir proc_;
};

TEST_F(PolicyRunnerOllama, AHostRuleUnloadsItsModelsAndLeavesTheServerRunning) {
    FakeOllama server(io_);
    server.load("llama3.2:latest", 3'300'000'000);
    start_low_host(server);
    run_until_event("ollama", K::models_unloaded);
    const Event* unloaded = last("ollama", K::models_unloaded);
    EXPECT_EQ(field(*unloaded, "UNLOAD"), "done");
    EXPECT_EQ(field(*unloaded, "MODELS_UNLOADED"), "llama3.2:latest");
    EXPECT_EQ(field(*unloaded, "TRIGGER"), "rule 'low'");
    EXPECT_THAT(unloaded->message, HasSubstr("unloaded llama3.2:latest (3.1G)"));
    EXPECT_FALSE(server.is_loaded("llama3.2:latest"));
    auto taken = actions();
    ASSERT_EQ(taken.size(), 1u);
    EXPECT_EQ(field(*taken[0], "ACTION"), "unload");
    EXPECT_EQ(field(*taken[0], "PREEMPT_STEP"),
              "unload: its server unloads its models and keeps running");
    // The rule is latched while the host stays low: nothing more is done.
    const size_t rounds = runner_->evaluations();
    run_until([&] { return runner_->evaluations() >= rounds + 3; });
    EXPECT_EQ(actions().size(), 1u);
    EXPECT_EQ(supervisor_->find("ollama")->state(), WorkerState::running);
    EXPECT_EQ(count("ollama", K::exited), 0u);
}

TEST_F(PolicyRunnerOllama, AnUnloadWithNothingLoadedGoesOnToTheNextStepAtOnce) {
    FakeOllama server(io_);
    start_low_host(server);
    run_until_event("ollama", K::exited);
    auto taken = actions();
    ASSERT_GE(taken.size(), 3u);
    EXPECT_EQ(field(*taken[0], "ACTION"), "unload");
    EXPECT_EQ(field(*taken[1], "ACTION"), "suspend");
    EXPECT_EQ(field(*taken[1], "UNLOAD_RESULT"), "no model was loaded: nothing to unload");
    EXPECT_THAT(taken[1]->message, HasSubstr("the unload freed nothing"));
    EXPECT_EQ(field(*taken[2], "ACTION"), "kill");
    EXPECT_EQ(field(*last("ollama", K::models_unloaded), "UNLOAD"), "nothing-loaded");
    // The cause before its effects.
    std::vector<EventKind> kinds = kinds_of("ollama");
    kinds.resize(std::min<size_t>(kinds.size(), 8));
    EXPECT_THAT(kinds, ElementsAre(K::started, K::ready, K::policy_action, K::models_unloaded,
                                   K::policy_action, K::suspended, K::policy_action, K::exited));
}

}  // namespace
}  // namespace infervisor::testing

namespace infervisor::testing {
namespace {

// Issue 30: a worker's GPU memory seen and acted on. The NVML stand-in
// (tests/unit/gpu/fake_nvml.cpp), loaded through the daemon's own dlopen
// path, lists the worker's real process on a card; the daemon finds it by
// its cgroup, and a gpu.memory rule on gpu.memory_max kills it. The start
// gave it the card as CUDA_VISIBLE_DEVICES (its UUID, in PCI order).
TEST_F(PolicyRunnerTest, AGpuMemoryRuleActsOnTheMemoryTheWorkersProcessHoldsOnItsCard) {
    TempDir dir;
    const std::string device =
        "device 0 name=NVIDIA_H100 uuid=GPU-1111 pci=00000000:03:00.0 total=85899345920 "
        "used=1073741824 util=5\n"
        "device 1 name=NVIDIA_H100 uuid=GPU-2222 pci=00000000:04:00.0 total=85899345920 "
        "used=0 util=0\n";
    GpuWatch& gpus = fake_gpus(dir, device);
    ASSERT_TRUE(gpus.active());
    ctx_->gpu_devices = [&gpus] { return gpus.devices_for_start(); };

    auto spec = example("cuda", {});
    spec.gpu = GpuSpec{{"1"}, 10ull << 30};
    Config c =
        with_rule(spec, "[{name: gpu-cap, when: 'gpu.memory > 50%', action: kill, then: park}]");
    runner_ = std::make_unique<PolicyRunner>(*ctx_, *supervisor_);
    runner_->set_gpu_watch(&gpus);
    runner_->configure(c);
    supervisor_->apply(c);
    runner_->start();
    run_until_event("cuda", K::started);
    pid_t pid = supervisor_->find("cuda")->main_pid();
    auto environ = read_file("/proc/" + std::to_string(pid) + "/environ");
    ASSERT_TRUE(environ);
    EXPECT_THAT(*environ, HasSubstr(std::string("CUDA_VISIBLE_DEVICES=GPU-2222") + '\0'));
    EXPECT_THAT(*environ, HasSubstr(std::string("CUDA_DEVICE_ORDER=PCI_BUS_ID") + '\0'));

    // Below the cap: rounds pass without an action.
    dir.write("nvml", device + "process 1 pid=" + std::to_string(pid) +
                          " kind=compute used=2147483648 sm=30\n");
    const size_t rounds = runner_->evaluations();
    run_until([&] { return runner_->evaluations() >= rounds + 5; });
    EXPECT_EQ(count("cuda", K::policy_action), 0u);
    // What `infervisorctl status` shows (supervise/worker_view_of.cpp).
    EXPECT_EQ(supervisor_->find("cuda")->gpu_memory(), 2147483648u);

    dir.write("nvml", device + "process 1 pid=" + std::to_string(pid) +
                          " kind=compute used=6442450944 sm=30\n");
    run_until_event("cuda", K::exited);
    const Event* action = last("cuda", K::policy_action);
    ASSERT_NE(action, nullptr);
    EXPECT_EQ(field(*action, "RULE"), "gpu-cap");
    EXPECT_EQ(field(*action, "ACTION"), "kill");
    EXPECT_EQ(field(*action, "GPU_MEMORY_PCT"), "60.00");
    EXPECT_EQ(field(*action, "GPU_MEMORY_BYTES"), "6442450944");
    EXPECT_EQ(field(*action, "GPU_MEMORY_MAX_BYTES"), "10737418240");
}

// Issue 30: a host rule on the GPUs alone preempts the worker that holds the
// card that runs short, not the one large in RAM beside it. Its suspension
// is taken because it would release the GPU (stand-in NVML and libcuda);
// the driver fails the checkpoint, the release is undone and the worker only
// frozen, which gives the card nothing: the ladder goes on to a kill.
TEST_F(PolicyRunnerTest, AHostGpuRulePreemptsTheHolderOfTheTightCard) {
    const char* cuda = std::getenv("INFERVISOR_FAKE_CUDA");
    const char* daemon = std::getenv("INFERVISOR_DAEMON");
    ASSERT_TRUE(cuda && daemon) << "the tests' meson.build sets these";
    TempDir dir;
    const std::string library = (dir.path() / "libcuda.so.1").string();
    std::filesystem::copy_file(cuda, library);
    ctx_->paths.cuda_library = library;
    ctx_->paths.helper_program = daemon;
    const std::string device =
        "device 0 name=NVIDIA_H100 uuid=GPU-1111 pci=00000000:03:00.0 total=85899345920 "
        "used=85362475008 util=90\n";  // 512 MiB free
    GpuWatch& gpus = fake_gpus(dir, device);
    ctx_->nvidia_memory_of = [&gpus](const std::string& cgroup) {
        return gpus.memory_on(cgroup, "nvidia", 1h);
    };

    Config c = config({example("cuda", {}), example("big", {})});
    c.daemon.sample_interval = 100ms;
    c.daemon.host_settle = 0ms;
    ConfigErrors errors;
    c.host_rules = parse_host_rules(
        YAML::Load("[{name: card-full, when: 'host.gpu.memory.available < 1G', action: preempt}]"),
        errors);
    ASSERT_TRUE(errors.empty()) << errors.format();
    runner_ = std::make_unique<PolicyRunner>(*ctx_, *supervisor_);
    runner_->set_gpu_watch(&gpus);
    runner_->configure(c);
    supervisor_->apply(c);
    runner_->start();
    run_until_event("cuda", K::ready);
    run_until_event("big", K::ready);
    pid_t pid = supervisor_->find("cuda")->main_pid();
    dir.write("libcuda.so.1.state",
              std::to_string(pid) + " running\nfail checkpoint " + std::to_string(pid) + " 2\n");
    // Until now only a stranger held the card: no victim, the step stayed due.
    EXPECT_EQ(count("cuda", K::policy_action) + count("big", K::policy_action), 0u);
    dir.write("nvml", device + "process 0 pid=" + std::to_string(pid) +
                          " kind=compute used=536870912 sm=80\n");
    run_until_event("cuda", K::exited);
    std::vector<const Event*> actions;
    for (const Event& e : events_)
        if (e.worker == "cuda" && e.kind == K::policy_action) actions.push_back(&e);
    ASSERT_EQ(actions.size(), 2u);
    EXPECT_EQ(field(*actions[0], "ACTION"), "suspend");
    EXPECT_EQ(field(*actions[0], "PREEMPT_STEP"),
              "suspend: preemptible, its suspension gives back its 512M of GPU memory");
    EXPECT_THAT(field(*actions[0], "VICTIM_REASON"),
                HasSubstr("GPU memory on 0000:03:00.0 512.0 MiB"));
    const Event* suspended = last("cuda", K::suspended);
    ASSERT_NE(suspended, nullptr);
    EXPECT_EQ(field(*suspended, "GPU_RELEASE"), "failed");
    EXPECT_EQ(field(*actions[1], "ACTION"), "kill");
    EXPECT_EQ(field(*actions[1], "PREEMPT_STEP"),
              "kill: the suspension freed none of its GPU memory (cuda-checkpoint not done)");
    EXPECT_EQ(count("big", K::policy_action), 0u) << "large in RAM, nothing on the card";
}

// A start whose gpu.devices names a card the host lacks fails, naming it
// and the host's cards; one on a card in error waits for it instead, and
// starts once the card answers again. The card's fault and its recovery are
// journaled once each.
TEST_F(PolicyRunnerTest, AStartOnAMissingGpuFailsAndOnABrokenOneWaits) {
    TempDir dir;
    GpuWatch& gpus = fake_gpus(dir,
                               "device 0 name=NVIDIA_H100 uuid=GPU-1111 pci=00000000:03:00.0 "
                               "total=85899345920 used=0 util=0\nlost 0\n");
    ASSERT_EQ(count("", K::gpu_fault), 1u);
    EXPECT_EQ(field(*last("", K::gpu_fault), "GPU_FAULT"), "GPU is lost (fallen off the bus)");

    auto missing = example("missing", {});
    missing.gpu = GpuSpec{{"3"}, std::nullopt};
    auto broken = example("broken", {});
    broken.gpu = GpuSpec{{"0"}, std::nullopt};
    supervisor_->apply(config({missing, broken}));
    run_until_event("missing", K::start_failed);
    EXPECT_THAT(last("missing", K::start_failed)->message,
                HasSubstr("gpu device '3' does not exist on this host (its GPUs: 0 "));
    run_until_event("broken", K::start_delayed);
    EXPECT_THAT(last("broken", K::start_delayed)->message, HasSubstr("is in error: GPU is lost"));
    EXPECT_EQ(count("broken", K::started), 0u);
    EXPECT_EQ(count("broken", K::start_failed), 0u);

    dir.write("nvml",
              "device 0 name=NVIDIA_H100 uuid=GPU-1111 pci=00000000:03:00.0 total=85899345920 "
              "used=0 util=0\n");
    gpus.refresh({}, Duration::zero());
    run_until_event("", K::gpu_recovered);
    EXPECT_EQ(field(*last("", K::gpu_recovered), "GPU_DEVICE"), "0000:03:00.0");
    run_until_event("broken", K::started);
    EXPECT_EQ(count("broken", K::start_failed), 0u);
    EXPECT_EQ(count("", K::gpu_fault), 1u);
}

// A card the driver no longer lists (fallen off the bus) is journaled and
// kept as a card in error: a start on it waits rather than failing.
TEST_F(PolicyRunnerTest, ACardThatVanishesIsAFaultAndAStartOnItWaits) {
    TempDir dir;
    GpuWatch& gpus = fake_gpus(dir,
                               "device 0 name=NVIDIA_H100 uuid=GPU-1111 pci=00000000:03:00.0 "
                               "total=85899345920 used=0 util=0\n");
    EXPECT_EQ(count("", K::gpu_fault), 0u);
    dir.write("nvml", "");  // no device listed
    gpus.refresh({}, Duration::zero());
    run_until([&] { return gpus.last()->snapshot.devices.empty(); });
    EXPECT_EQ(count("", K::gpu_fault), 0u) << "one reading without it is no fault";
    gpus.refresh({}, Duration::zero());
    run_until_event("", K::gpu_fault);
    EXPECT_THAT(last("", K::gpu_fault)->message, HasSubstr("no longer listed by its driver"));
    auto w = example("on-it", {});
    w.gpu = GpuSpec{{"GPU-1111"}, std::nullopt};
    supervisor_->apply(config({w}));
    run_until_event("on-it", K::start_delayed);
    EXPECT_EQ(count("on-it", K::start_failed), 0u);
}

// A card its driver counts uncorrected ECC errors on since it loaded needs a
// reset: it is in error, journaled with the reason, and a start on it waits
// as on a lost card; a remap pending is the same. Healthy again: recovered.
TEST_F(PolicyRunnerTest, ACardWithUncorrectedEccErrorsIsAFaultAndAStartOnItWaits) {
    TempDir dir;
    const std::string h100 =
        "device 0 name=NVIDIA_H100 uuid=GPU-1111 pci=00000000:03:00.0 total=85899345920 used=0 "
        "util=0";
    GpuWatch& gpus = fake_gpus(dir, h100 + " ecc=3\n");
    ASSERT_EQ(count("", K::gpu_fault), 1u);
    EXPECT_EQ(field(*last("", K::gpu_fault), "GPU_FAULT"),
              "3 uncorrected ECC errors since the driver loaded (reset the GPU)");
    auto w = example("on-it", {});
    w.gpu = GpuSpec{{"0"}, std::nullopt};
    supervisor_->apply(config({w}));
    run_until_event("on-it", K::start_delayed);
    EXPECT_THAT(last("on-it", K::start_delayed)->message, HasSubstr("uncorrected ECC errors"));
    EXPECT_EQ(count("on-it", K::start_failed), 0u);

    dir.write("nvml", h100 + " remap=pending\n");  // reset: the count is 0, a remap pending
    gpus.refresh({}, Duration::zero());
    run_until([&] { return count("", K::gpu_fault) == 2; });
    EXPECT_EQ(field(*last("", K::gpu_fault), "GPU_FAULT"),
              "a row remap is pending (reset the GPU)");
    dir.write("nvml", h100 + "\n");
    gpus.refresh({}, Duration::zero());
    run_until_event("", K::gpu_recovered);
    run_until_event("on-it", K::started);
}

// Each Xid NVML reports is journaled once, with its meaning, and counted;
// it does not put the card in error by itself.
TEST_F(PolicyRunnerTest, AnXidIsJournaledOnceAndCounted) {
    TempDir dir;
    const std::string h100 =
        "device 0 name=NVIDIA_H100 uuid=GPU-1111 pci=00000000:03:00.0 total=85899345920 used=0 "
        "util=0\n";
    GpuWatch& gpus = fake_gpus(dir, h100);
    dir.write("nvml", h100 + "xid 0 79\n");
    gpus.refresh({}, Duration::zero());
    run_until_event("", K::gpu_xid);
    const Event& xid = *last("", K::gpu_xid);
    EXPECT_EQ(field(xid, "GPU_DEVICE"), "0000:03:00.0");
    EXPECT_EQ(field(xid, "GPU_NAME"), "NVIDIA H100");
    EXPECT_EQ(field(xid, "GPU_XID"), "79");
    EXPECT_EQ(field(xid, "GPU_XID_MEANING"), "GPU has fallen off the bus");
    EXPECT_EQ(xid.message,
              "GPU 0000:03:00.0 (NVIDIA H100) reported Xid 79: GPU has fallen off "
              "the bus");
    const auto began = gpus.last()->time;
    gpus.refresh({}, Duration::zero());
    run_until([&] { return gpus.last()->time != began || count("", K::gpu_xid) > 1; });
    run_for(50ms);
    EXPECT_EQ(count("", K::gpu_xid), 1u);
    EXPECT_EQ(count("", K::gpu_fault), 0u);
    EXPECT_EQ(gpus.xid_counts(),
              (GpuWatch::XidCounts{{{std::string("0000:03:00.0"), uint64_t{79}}, uint64_t{1}}}));
}

// A driver upgrade under an open NVML (NVML/RM version mismatch): the
// library is closed, its cards stay listed in error and a start on one
// waits; it is opened again every kReopenInterval, and the cards recover.
TEST_F(PolicyRunnerOnFakeTime, AStaleNvmlIsClosedAndOpenedAgainAfterTheInterval) {
    TempDir dir;
    const std::string h100 =
        "device 0 name=NVIDIA_H100 uuid=GPU-1111 pci=00000000:03:00.0 total=85899345920 used=0 "
        "util=0\n";
    GpuWatch& gpus = fake_gpus(dir, h100);
    dir.write("nvml", h100 + "stale 18\n");
    gpus.refresh({}, Duration::zero());
    run_until_event("", K::gpu_fault);
    EXPECT_EQ(field(*last("", K::gpu_fault), "GPU_FAULT"),
              "its driver does not answer NVML (reloaded or upgraded?)");
    EXPECT_FALSE(gpus.active());
    ASSERT_TRUE(gpus.devices());
    ASSERT_EQ(gpus.devices()->size(), 1u);
    EXPECT_FALSE(gpus.devices()->front().fault.empty());
    auto w = example("on-it", {});
    w.gpu = GpuSpec{{"GPU-1111"}, std::nullopt};
    supervisor_->apply(config({w}));
    run_until_event("on-it", K::start_delayed);
    EXPECT_EQ(count("on-it", K::start_failed), 0u);

    // Not yet: the interval has not passed. Then a reopen that fails (the
    // new driver is not loaded yet), and one that succeeds.
    gpus.refresh({}, Duration::zero());
    EXPECT_FALSE(gpus.active());
    advance(GpuWatch::kReopenInterval);
    gpus.refresh({}, Duration::zero());
    run_for(100ms);
    EXPECT_FALSE(gpus.active());
    dir.write("nvml", h100);
    advance(GpuWatch::kReopenInterval);
    gpus.refresh({}, Duration::zero());
    run_until([&] { return gpus.active(); });
    gpus.refresh({}, Duration::zero());
    run_until_event("", K::gpu_recovered);
    EXPECT_EQ(count("", K::gpu_fault), 1u);
}

}  // namespace
}  // namespace infervisor::testing
