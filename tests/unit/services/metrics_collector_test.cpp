// MetricsCollector on real processes: when the textfile is written (only when
// due, not after every round: the cost of issue 15), and the checkpoint and
// suspension series fed by a real worker's events.
#include "services/metrics_collector.h"

#include <gmock/gmock.h>

#include "base/file_io.h"
#include "services/policy_runner.h"
#include "supervise/supervisor_fixture.h"

namespace infervisor::testing {
namespace {

using ::testing::HasSubstr;
using K = EventKind;
using namespace std::chrono_literals;

class MetricsCollectorTest : public SupervisorFixture {
  protected:
    void SetUp() override {
        SupervisorFixture::SetUp();
        policy_ = std::make_unique<PolicyRunner>(*ctx_, *supervisor_);
        collector_ = std::make_unique<MetricsCollector>(*ctx_, *supervisor_, *policy_);
    }
    void TearDown() override {
        policy_->stop();
        collector_.reset();
        SupervisorFixture::TearDown();
    }
    WorkerSpec counter(const std::string& name) const {
        auto spec = example(name, {"--serve-interval-ms", "20"});
        spec.notify = true;
        spec.checkpoint.timeout = 20s;
        return spec;
    }
    std::filesystem::path textfile() const { return dir_->path() / "infervisor.prom"; }
    Config with_textfile(Duration sample_interval, Duration textfile_interval) const {
        Config c = config({counter("count")});
        c.daemon.sample_interval = sample_interval;
        c.daemon.metrics.textfile = textfile();
        c.daemon.metrics.textfile_interval = textfile_interval;
        return c;
    }
    void apply(const Config& c) {
        supervisor_->apply(c);
        policy_->configure(c);
        collector_->configure(c);
        collector_->start();  // once; later calls apply a reload to the running collector
    }
    std::string written() const { return read_file(textfile()).value_or("(none)"); }

    std::unique_ptr<PolicyRunner> policy_;
    std::unique_ptr<MetricsCollector> collector_;
};

// With nothing exported the metrics do not even see the rounds; the
// policy's recording (what `history` and `simulate` read) has them, and
// every journaled policy action, whoever decided it.
TEST_F(MetricsCollectorTest, WithNothingExportedOnlyThePolicysRecordingKeepsTheRounds) {
    apply(config({counter("count")}));
    run_until_event("count", K::ready);
    policy_->evaluate_now();
    policy_->evaluate_now();
    EXPECT_EQ(collector_->metrics().rounds(), 0u);
    ctx_->events.emit(Event{K::policy_action,
                            "count",
                            "watchdog: no WATCHDOG=1 for 5s; killing the worker",
                            {{"RULE", "watchdog"}, {"ACTION", "kill"}, {"DRY_RUN", "0"}}});
    std::vector<TraceEntry> trace;
    for (const auto& block : policy_->trace().read(0, 1u << 20).blocks)
        ASSERT_TRUE(decode_trace_block(block.bytes, trace));
    size_t rounds = 0, actions = 0;
    for (const auto& entry : trace) {
        if (const auto* round = std::get_if<TraceRound>(&entry)) {
            rounds += !round->workers.empty() && round->workers[0].name == "count";
        } else if (const auto& e = std::get<TraceEvent>(entry); e.kind == TraceEventKind::action) {
            ++actions;
            EXPECT_EQ(e.worker, "count");
            EXPECT_EQ(e.rule, "watchdog");
            EXPECT_EQ(e.action, "kill");
        }
    }
    EXPECT_GE(rounds, 2u);
    EXPECT_EQ(actions, 1u);
}

TEST_F(MetricsCollectorTest, TheTextfileIsWrittenAfterTheFirstRoundThenOnlyWhenDue) {
    apply(with_textfile(2s, 10min));
    run_until_event("count", K::ready);
    policy_->evaluate_now();
    EXPECT_EQ(collector_->textfile_writes(), 1u);
    EXPECT_THAT(written(), HasSubstr("infervisor_daemon_evaluations_total 1\n"));
    EXPECT_THAT(written(),
                HasSubstr("infervisor_worker_state{worker=\"count\",state=\"running\"} 1"));
    policy_->evaluate_now();
    policy_->evaluate_now();
    // Not due for 10 minutes: the file stays as it was; a scrape gets the latest.
    EXPECT_EQ(collector_->textfile_writes(), 1u);
    EXPECT_THAT(written(), HasSubstr("infervisor_daemon_evaluations_total 1\n"));
    EXPECT_THAT(*collector_->text(), HasSubstr("infervisor_daemon_evaluations_total 3\n"));
    EXPECT_FALSE(std::filesystem::exists(textfile().string() + ".tmp"));

    // A shorter interval on reload applies from the next round on.
    apply(with_textfile(2s, 1s));
    policy_->evaluate_now();
    policy_->evaluate_now();
    EXPECT_EQ(collector_->textfile_writes(), 3u);  // within half a round: every round
    EXPECT_THAT(written(), HasSubstr("infervisor_daemon_evaluations_total 5\n"));
}

TEST_F(MetricsCollectorTest, TheTextfileIsWrittenAgainOnceDue) {
    apply(with_textfile(100ms, 1s));
    policy_->start();
    run_until([&] { return collector_->textfile_writes() >= 2; });
    EXPECT_THAT(written(), HasSubstr("infervisor_daemon_evaluations_total"));
}

// A stopped collector records nothing and serves nothing; started again (a
// re-execution that failed) it opens what is configured.
TEST_F(MetricsCollectorTest, StopClosesTheListenerAndStartReopensIt) {
    Config c = config({counter("count")});
    c.daemon.metrics.listen_address = "127.0.0.1";
    c.daemon.metrics.listen_port = 0;
    apply(c);
    ASSERT_TRUE(collector_->listening());
    collector_->stop();
    EXPECT_FALSE(collector_->listening());
    collector_->configure(c);  // a reload while stopped opens nothing
    EXPECT_FALSE(collector_->listening());
    collector_->start();
    EXPECT_TRUE(collector_->listening());
}

TEST_F(MetricsCollectorTest, WithTheListenerTheTextIsRenderedOnlyWhenScrapedOncePerRound) {
    Config c = config({counter("count")});
    c.daemon.metrics.listen_address = "127.0.0.1";
    c.daemon.metrics.listen_port = 0;  // any free port
    apply(c);
    ASSERT_TRUE(collector_->listening());
    run_until_event("count", K::ready);
    policy_->evaluate_now();
    policy_->evaluate_now();
    EXPECT_EQ(collector_->renders(), 0u);           // nobody asked
    EXPECT_EQ(collector_->metrics().rounds(), 2u);  // recorded, not rendered
    auto first = collector_->text();
    auto again = collector_->text();
    EXPECT_EQ(first, again);  // the same text, not rendered again
    EXPECT_EQ(collector_->renders(), 1u);
    policy_->evaluate_now();
    EXPECT_THAT(*collector_->text(), HasSubstr("infervisor_daemon_evaluations_total 3\n"));
    EXPECT_EQ(collector_->renders(), 2u);
}

TEST_F(MetricsCollectorTest, CheckpointsAndSuspensionsOfARealWorkerAreCounted) {
    apply(config({counter("count")}));
    run_until_event("count", K::ready);
    Worker* w = supervisor_->find("count");
    ASSERT_TRUE(w->checkpoint_now().ok());
    run_until_event("count", K::checkpoint_written);
    ASSERT_TRUE(w->suspend("test").ok());
    run_until_event("count", K::suspended);
    ASSERT_TRUE(w->resume("test").ok());
    run_until_event("count", K::resumed);

    std::string text = *collector_->text();
    EXPECT_THAT(text, HasSubstr("infervisor_worker_checkpoints_total{worker=\"count\",result="
                                "\"written\"} 1\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_checkpoints_total{worker=\"count\",result="
                                "\"failed\"} 0\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_checkpoint_duration_seconds_count{worker="
                                "\"count\"} 1\n"));
    const Event* written_event = last("count", K::checkpoint_written);
    EXPECT_THAT(text, HasSubstr("infervisor_worker_last_checkpoint_bytes{worker=\"count\"} " +
                                field(*written_event, "CHECKPOINT_BYTES") + "\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_suspensions_total{worker=\"count\"} 1\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_resumes_total{worker=\"count\"} 1\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_suspended_seconds_total{worker=\"count\"} "));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_state{worker=\"count\",state=\"running\"} 1\n"));
}

// llama-server slots that were not restored (a mismatch, an error) are a
// failed restore, not a failed checkpoint.
TEST_F(MetricsCollectorTest, SlotsNotRestoredCountAsAFailedRestore) {
    apply(config({counter("count")}));
    run_until_event("count", K::ready);
    ctx_->events.emit(Event{K::checkpoint_failed,
                            "count",
                            "not restored",
                            {{"REASON", "engine-mismatch"}, {"OPERATION", "restore"}}});
    ctx_->events.emit(Event{K::checkpoint_failed,
                            "count",
                            "not saved",
                            {{"REASON", "engine-error"}, {"OPERATION", "save"}}});
    std::string text = *collector_->text();
    EXPECT_THAT(text, HasSubstr("infervisor_worker_checkpoint_restores_total{worker=\"count\","
                                "result=\"failed\"} 1\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_checkpoints_total{worker=\"count\",result="
                                "\"failed\"} 1\n"));
}

TEST_F(MetricsCollectorTest, TheStateLabelHasEveryWorkerStateAndEveryShownOnlyName) {
    size_t states = static_cast<size_t>(kLastWorkerState) + 1;
    ASSERT_EQ(kShownStates.size(), states + std::size(kShownOnlyStateNames));
    for (size_t i = 0; i < states; ++i)
        EXPECT_EQ(kShownStates[i], state_name(static_cast<WorkerState>(i)));
    for (size_t i = 0; i < std::size(kShownOnlyStateNames); ++i)
        EXPECT_EQ(kShownStates[states + i], kShownOnlyStateNames[i]);
}

}  // namespace
}  // namespace infervisor::testing
