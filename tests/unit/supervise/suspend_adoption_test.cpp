// A suspension outlives the daemon image that made it: a Supervisor goes away
// without stopping its workers (as an in-place re-execution leaves them), and
// the new one adopts a suspended worker still frozen and still suspended, by
// whom it was. One a host rule suspended waits for resume_when again; one
// suspended by hand waits for a resume by hand. The resume writes the
// worker's configured limits (recorded by the fixture: this host's cgroup2
// has no memory controller; the VM checks the files, 190-suspend-by-hand).
#include <gmock/gmock.h>

#include "config/config_loader.h"
#include "policy/rule_config.h"
#include "services/policy_runner.h"
#include "supervise/persisted_worker.h"
#include "supervisor_fixture.h"

namespace infervisor::testing {
namespace {

using ::testing::ElementsAre;
using K = EventKind;
using namespace std::chrono_literals;

class SuspensionAdoption : public SupervisorFixture {
  protected:
    // From a file, as the daemon gets it: its snapshot tells the new daemon
    // that the spec is the same (else it would restart the worker).
    Config load_counters() {
        std::string yaml = "workers:\n";
        for (const char* name : {"low", "high"})
            yaml += std::string("  - name: ") + name + "\n    command: [" +
                    std::getenv("INFERVISOR_EXAMPLE_WORKER") +
                    ", --serve-interval-ms, '20']\n    user: root\n    notify: true\n" +
                    "    memory: {max: 256M}\n" +
                    // low heartbeats every 100 ms: only a paused watchdog spares it
                    // frozen. high is never frozen: no watchdog to miss on a loaded host.
                    (std::string(name) == "high" ? "    priority: 10\n" : "    watchdog: 1s\n");
        dir_->write("etc/infervisor.yaml", yaml);
        auto loaded = load_config(ConfigSource{dir_->path() / "etc/infervisor.yaml"});
        EXPECT_TRUE(loaded.ok()) << loaded.errors.format();
        Config c = loaded.config;
        c.daemon.sample_interval = 50ms;
        c.daemon.host_settle = 10min;  // one victim
        return c;
    }
    void host_rule(Config& c, const std::string& when) {
        ConfigErrors errors;
        c.host_rules = parse_host_rules(
            YAML::Load("[{name: squeeze, when: '" + when + "', action: suspend}]"), errors);
        ASSERT_TRUE(errors.empty()) << errors.format();
    }
    void resume_when(Config& c, const std::string& text) {
        auto when = parse_condition(text, RuleScope::host);
        ASSERT_TRUE(when.ok()) << when.error().what;
        c.daemon.resume_when = *when;
    }
    // The daemon image ends without stopping anything; a new one adopts.
    void new_daemon(const Config& config) {
        supervisor_.reset();
        events_.clear();
        limits_written_.clear();
        supervisor_ = std::make_unique<Supervisor>(*ctx_);
        supervisor_->adopt_leftovers(config);
        supervisor_->apply(config);
    }
    long served(const std::string& name) {
        std::string status = supervisor_->find(name)->status_text();
        long n = 0;
        std::sscanf(status.c_str(), "served %ld", &n);
        return n;
    }
    bool frozen(const std::string& name) {
        auto f = supervisor_->find(name)->cgroup().frozen();
        return f && *f;
    }
    std::filesystem::path state_dir() const { return ctx_->paths.runtime_dir / "state"; }
};

TEST_F(SuspensionAdoption, AHostRuleSuspensionStaysFrozenAfterAnAdoptionUntilResumeWhen) {
    Config c = load_counters();
    host_rule(c, "host.mem.available > 1");
    supervisor_->apply(c);
    run_until_event("low", K::ready);
    run_until_event("high", K::ready);
    {
        PolicyRunner before(*ctx_, *supervisor_);  // no resume_when
        before.configure(c);
        before.start();
        run_until_event("low", K::suspended);
        before.stop();
    }
    pid_t pid = supervisor_->find("low")->main_pid();
    auto persisted = read_persisted_worker(state_dir(), "low");
    ASSERT_TRUE(persisted.ok()) << persisted.error().message();
    EXPECT_EQ(persisted->state, WorkerState::suspended);
    EXPECT_EQ(persisted->suspended_by, "rule 'squeeze'");
    EXPECT_TRUE(persisted->suspended_since.has_value());

    new_daemon(c);
    Worker* w = supervisor_->find("low");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->state(), WorkerState::suspended);
    EXPECT_EQ(w->state_reason(), "rule 'squeeze'");
    EXPECT_TRUE(frozen("low"));
    EXPECT_THAT(kinds_of("low"), ElementsAre(K::adopted));
    EXPECT_EQ(field(*last("low", K::adopted), "STATE"), "suspended");
    EXPECT_EQ(limits_written_.count("low"), 0u);  // nothing touched while frozen

    // Still frozen as the new daemon runs: nothing served, no watchdog kill.
    long at_adoption = served("low");
    auto end = std::chrono::steady_clock::now() + 1500ms;
    run_until([&] { return std::chrono::steady_clock::now() > end; });
    EXPECT_EQ(served("low"), at_adoption);
    EXPECT_EQ(w->state(), WorkerState::suspended);
    EXPECT_EQ(count("low", K::policy_action), 0u);

    // The same rule by name (its condition no longer holds) and resume_when.
    host_rule(c, "host.mem.available < 1");
    resume_when(c, "host.mem.available > 1 for 300ms");
    PolicyRunner after(*ctx_, *supervisor_);
    after.configure(c);
    after.start();
    run_until_event("low", K::resumed);
    after.stop();

    const Event* decision = last("low", K::policy_action);
    ASSERT_NE(decision, nullptr);
    EXPECT_EQ(field(*decision, "RULE"), "resume_when");
    EXPECT_EQ(field(*decision, "RESULT"), "done");
    const Event* resumed = last("low", K::resumed);
    EXPECT_EQ(field(*resumed, "TRIGGER"), "resume_when 'host.mem.available > 1 for 300ms'");
    EXPECT_EQ(field(*resumed, "SUSPENDED_BY"), "rule 'squeeze'");
    EXPECT_EQ(w->state(), WorkerState::running);
    EXPECT_FALSE(frozen("low"));
    // Its configured limits, not what the old image had saved.
    ASSERT_EQ(limits_written_.count("low"), 1u);
    EXPECT_EQ(limits_written_["low"].memory_max, 256ull << 20);
    run_until([&] { return served("low") > at_adoption + 5; });
    EXPECT_EQ(w->main_pid(), pid);  // the same run, counting on
    EXPECT_EQ(count("low", K::exited), 0u);
    EXPECT_EQ(count("high", K::exited), 0u);
}

TEST_F(SuspensionAdoption, ASuspensionByHandStaysAfterAnAdoptionUntilResumedByHand) {
    Config c = load_counters();
    supervisor_->apply(c);
    run_until_event("low", K::ready);
    ASSERT_TRUE(supervisor_->find("low")->suspend("infervisorctl").ok());
    run_until_event("low", K::suspended);

    new_daemon(c);
    Worker* w = supervisor_->find("low");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->state(), WorkerState::suspended);
    EXPECT_EQ(w->state_reason(), "infervisorctl");
    EXPECT_TRUE(frozen("low"));

    // resume_when holds all along: it is not for workers suspended by hand.
    resume_when(c, "host.mem.available > 1 for 100ms");
    c.daemon.host_settle = 0ms;
    PolicyRunner runner(*ctx_, *supervisor_);
    runner.configure(c);
    runner.start();
    run_until([&] { return runner.evaluations() >= 20; });  // its `for` six times over
    EXPECT_EQ(w->state(), WorkerState::suspended);
    EXPECT_TRUE(frozen("low"));
    EXPECT_EQ(count("low", K::resumed), 0u);
    EXPECT_EQ(count("low", K::policy_action), 0u);

    long at_resume = served("low");
    ASSERT_TRUE(w->resume("infervisorctl").ok());
    runner.stop();
    EXPECT_EQ(w->state(), WorkerState::running);
    EXPECT_FALSE(frozen("low"));
    EXPECT_EQ(field(*last("low", K::resumed), "SUSPENDED_BY"), "infervisorctl");
    EXPECT_EQ(limits_written_.count("low"), 1u);
    run_until([&] { return served("low") > at_resume + 5; });
    EXPECT_EQ(count("low", K::exited), 0u);
}

}  // namespace
}  // namespace infervisor::testing
