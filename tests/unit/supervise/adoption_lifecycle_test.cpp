// Adoption on real processes and real cgroup2 directories: a Supervisor goes
// away without stopping its workers (as the daemon does on a crash or a
// restart), and a new one takes over what it left.
#include <gmock/gmock.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config/config_loader.h"
#include "supervise/persisted_worker.h"
#include "supervisor_fixture.h"

namespace infervisor::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using K = EventKind;
using namespace std::chrono_literals;

class AdoptionLifecycle : public SupervisorFixture {
  protected:
    // The configuration as the daemon gets it: from a file, so that its
    // snapshot tells a changed spec from the same one.
    Config load(const std::string& yaml) {
        dir_->write("etc/infervisor.yaml", yaml);
        auto loaded = load_config(ConfigSource{dir_->path() / "etc/infervisor.yaml"});
        EXPECT_TRUE(loaded.ok()) << loaded.errors.format();
        return loaded.config;
    }
    std::string worker_yaml(const std::string& name, const std::string& extra = "") const {
        return "  - name: " + name + "\n    command: [" + std::getenv("INFERVISOR_EXAMPLE_WORKER") +
               ", --model-mb, '1']\n    user: root\n    notify: true\n    memory: {max: 256M}\n" +
               "    restart: {backoff_initial: 20ms, backoff_max: 80ms}\n" + extra;
    }
    // The daemon ends without stopping anything; a new one starts.
    void new_daemon(const Config& config) {
        supervisor_.reset();
        events_.clear();
        supervisor_ = std::make_unique<Supervisor>(*ctx_);
        supervisor_->adopt_leftovers(config);
        supervisor_->apply(config);
    }
    std::filesystem::path state_dir() const { return ctx_->paths.runtime_dir / "state"; }
};

TEST_F(AdoptionLifecycle, ARunningWorkerIsAdoptedWithItsPidUptimeAndHeartbeats) {
    Config config = load("workers:\n" + worker_yaml("a", "    watchdog: 2s\n") + worker_yaml("b"));
    supervisor_->apply(config);
    run_until([&] { return count("a", K::ready) == 1 && count("b", K::ready) == 1; });
    pid_t pid = supervisor_->find("a")->main_pid();
    auto started_at = supervisor_->find("a")->started_at();

    new_daemon(config);
    Worker* w = supervisor_->find("a");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->state(), WorkerState::running);
    EXPECT_EQ(w->main_pid(), pid);
    // Persisted to the millisecond.
    EXPECT_LE(std::chrono::abs(*w->started_at() - *started_at), 1ms);
    EXPECT_THAT(kinds_of("a"), ElementsAre(K::adopted));
    EXPECT_EQ(field(*last("a", K::adopted), "PID"), std::to_string(pid));
    EXPECT_EQ(count("b", K::adopted), 1u);
    // The notify socket is bound again at the path the worker knows.
    run_until([&] { return w->last_heartbeat().has_value(); });

    bool stopped = false;
    w->stop([&] { stopped = true; });
    run_until([&] { return stopped; });
    EXPECT_FALSE(w->cgroup().exists());
    EXPECT_THAT(kinds_of("a"), ElementsAre(K::adopted, K::exited, K::stopped));
}

// A daemon that dies mid-attempt leaves the attempt's cgroup and process
// (in the worker's cgroup, or in probes/ of the layout before exec probes
// moved into it): the next daemon kills and removes them, and adopts the
// worker itself untouched.
TEST_F(AdoptionLifecycle, ProbeAttemptsOfAnEarlierDaemonAreReapedAndTheWorkerAdopted) {
    Config config = load("workers:\n" + worker_yaml("a"));
    supervisor_->apply(config);
    run_until([&] { return count("a", K::ready) == 1; });
    pid_t pid = supervisor_->find("a")->main_pid();
    auto start_in = [](const CgroupDir& dir) {
        EXPECT_TRUE(dir.create().ok());
        pid_t child = ::fork();
        if (child == 0) {
            ::execl("/bin/sleep", "sleep", "1000", nullptr);
            ::_exit(127);
        }
        EXPECT_TRUE(dir.move_process(child).ok());
        return child;
    };
    CgroupTree tree(cgroup_root_);
    CgroupDir in_worker = tree.worker_probe("a", "liveness");
    CgroupDir retired = tree.retired_probes().child("a");
    ASSERT_TRUE(tree.retired_probes().create().ok());
    pid_t left_in_worker = start_in(in_worker);
    pid_t left_retired = start_in(retired);

    new_daemon(config);
    EXPECT_EQ(::waitpid(left_in_worker, nullptr, 0), left_in_worker);
    EXPECT_EQ(::waitpid(left_retired, nullptr, 0), left_retired);
    EXPECT_FALSE(in_worker.exists());
    EXPECT_FALSE(tree.retired_probes().exists());
    Worker* w = supervisor_->find("a");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->state(), WorkerState::running);
    EXPECT_EQ(w->main_pid(), pid);
    EXPECT_THAT(kinds_of("a"), ElementsAre(K::adopted));
}

TEST_F(AdoptionLifecycle, AnAdoptedWorkerKeepsItsProbesAndCanBeCheckpointed) {
    Config config =
        load("workers:\n" + worker_yaml("a",
                                        "    probes:\n      liveness: {kind: exec, command: "
                                        "[/bin/true], interval: 200ms, timeout: 150ms}\n"
                                        "    checkpoint: {timeout: 20s}\n"));
    supervisor_->apply(config);
    run_until_event("a", K::ready);

    new_daemon(config);
    Worker* w = supervisor_->find("a");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->state(), WorkerState::running);
    // The liveness probe runs again, as the worker's user, in its own cgroup.
    run_until([&] {
        auto probes = w->probes();
        return probes.size() == 1 && probes[0].active && probes[0].attempts >= 2 &&
               probes[0].verdict == ProbeVerdict::passing;
    });
    // The staging dir the earlier daemon gave the worker is published.
    ASSERT_TRUE(w->checkpoint_now().ok());
    run_until_event("a", K::checkpoint_written);
    EXPECT_EQ(std::filesystem::path(field(*last("a", K::checkpoint_written), "CHECKPOINT")),
              dir_->path() / "state/checkpoints/a/0000000001");
    EXPECT_EQ(w->state(), WorkerState::running);
    EXPECT_EQ(count("a", K::exited), 0u);
}

// Issue 26 #9: a checkpoint the earlier daemon was judging when it died
// (taken out of staging, not yet published) is dropped by the daemon that
// adopts the worker, never published, and does not block the next one.
TEST_F(AdoptionLifecycle, ACheckpointTheDeadDaemonWasJudgingIsDroppedAtAdoption) {
    Config config = load("workers:\n" + worker_yaml("a", "    checkpoint: {timeout: 20s}\n"));
    supervisor_->apply(config);
    run_until_event("a", K::ready);
    std::filesystem::path store = dir_->path() / "state/checkpoints/a";
    dir_->write("state/checkpoints/a/incoming/left-behind", "judged when the daemon died");

    new_daemon(config);
    Worker* w = supervisor_->find("a");
    ASSERT_NE(w, nullptr);
    EXPECT_FALSE(std::filesystem::exists(store / "incoming"));
    ASSERT_TRUE(w->checkpoint_now().ok());
    run_until_event("a", K::checkpoint_written);
    std::filesystem::path published = field(*last("a", K::checkpoint_written), "CHECKPOINT");
    EXPECT_EQ(published, store / "0000000001");
    EXPECT_FALSE(std::filesystem::exists(published / "left-behind"));
    EXPECT_EQ(count("a", K::checkpoint_failed), 0u);
}

// A state file this daemon cannot read (a newer daemon's before a package
// downgrade, or a damaged one) must not cost the running worker its model:
// the run is adopted from its cgroup, with the same pid, and goes on.
TEST_F(AdoptionLifecycle, ARunWhoseStateFileCannotBeReadIsAdoptedFromItsCgroup) {
    Config config = load("workers:\n" + worker_yaml("newer") + worker_yaml("damaged"));
    supervisor_->apply(config);
    run_until([&] { return count("newer", K::ready) == 1 && count("damaged", K::ready) == 1; });
    pid_t newer = supervisor_->find("newer")->main_pid();
    pid_t damaged = supervisor_->find("damaged")->main_pid();
    supervisor_.reset();
    // What a later release might write, and a file cut short.
    dir_->write("run/state/newer", "infervisor-worker-state 2\nname=newer\nstate=serving-v2\npid=" +
                                       std::to_string(newer) + "\n");
    dir_->write("run/state/damaged", "infervisor-worker-state 1\nname=dam");

    new_daemon(config);
    for (auto [name, pid] : {std::pair{"newer", newer}, std::pair{"damaged", damaged}}) {
        Worker* w = supervisor_->find(name);
        ASSERT_NE(w, nullptr) << name;
        EXPECT_EQ(w->state(), WorkerState::running) << name;
        EXPECT_EQ(w->main_pid(), pid) << name;
        EXPECT_THAT(kinds_of(name), ElementsAre(K::adopted)) << name;
        EXPECT_EQ(::kill(pid, 0), 0) << name << " must still run";
    }
    // This daemon's own state file replaces the unreadable one.
    auto rewritten = read_persisted_worker(state_dir(), "newer");
    ASSERT_TRUE(rewritten.ok()) << rewritten.error().message();
    EXPECT_EQ(rewritten->pid, newer);
    // Heartbeats and stops work as for any adopted run.
    bool stopped = false;
    supervisor_->find("newer")->stop([&] { stopped = true; });
    run_until([&] { return stopped; });
    EXPECT_THAT(kinds_of("newer"), ElementsAre(K::adopted, K::exited, K::stopped));
}

TEST_F(AdoptionLifecycle, AWorkerThatDiedWhileNoDaemonWatchedIsRestartedOnce) {
    Config config = load("workers:\n" + worker_yaml("a"));
    supervisor_->apply(config);
    run_until_event("a", K::ready);
    pid_t pid = supervisor_->find("a")->main_pid();
    supervisor_.reset();
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    ASSERT_EQ(::waitpid(pid, nullptr, 0), pid);

    new_daemon(config);
    run_until_event("a", K::ready);
    EXPECT_THAT(kinds_of("a"), ElementsAre(K::exited, K::restarting, K::started, K::ready));
    const Event* exited = last("a", K::exited);
    EXPECT_THAT(exited->message, HasSubstr("exited while the supervisor was down"));
    EXPECT_EQ(field(*exited, "EXIT_STATUS"), "unknown");
    EXPECT_EQ(supervisor_->find("a")->restarts(), 1u);
    EXPECT_NE(supervisor_->find("a")->main_pid(), pid);
}

TEST_F(AdoptionLifecycle, ASpecChangedWhileNoDaemonRanRestartsAsAReloadWould) {
    Config before = load("workers:\n" + worker_yaml("a") + worker_yaml("same"));
    supervisor_->apply(before);
    run_until([&] { return count("a", K::ready) == 1 && count("same", K::ready) == 1; });
    pid_t old_pid = supervisor_->find("a")->main_pid();

    Config after =
        load("workers:\n" + worker_yaml("a", "    pids_max: 64\n") + worker_yaml("same"));
    new_daemon(after);
    run_until_event("a", K::ready);
    EXPECT_THAT(kinds_of("a"),
                ElementsAre(K::adopted, K::exited, K::stopped, K::started, K::ready));
    EXPECT_NE(supervisor_->find("a")->main_pid(), old_pid);
    EXPECT_EQ(supervisor_->find("a")->spec().pids_max, 64);
    EXPECT_THAT(kinds_of("same"), ElementsAre(K::adopted));
}

TEST_F(AdoptionLifecycle, AWorkerNoLongerConfiguredIsStoppedAndForgotten) {
    Config before = load("workers:\n" + worker_yaml("a") + worker_yaml("gone"));
    supervisor_->apply(before);
    run_until([&] { return count("a", K::ready) == 1 && count("gone", K::ready) == 1; });
    CgroupDir gone = supervisor_->find("gone")->cgroup();

    new_daemon(load("workers:\n" + worker_yaml("a")));
    run_until_event("gone", K::stopped);
    run_until([&] { return supervisor_->find("gone") == nullptr; });
    EXPECT_FALSE(gone.exists());
    run_until([&] { return !std::filesystem::exists(state_dir() / "gone"); });
    EXPECT_TRUE(std::filesystem::exists(state_dir() / "a"));
}

TEST_F(AdoptionLifecycle, AParkedWorkerStaysParkedAndAGarbledStateFileIsNotTrusted) {
    Config config = load("workers:\n" + worker_yaml("parked") + worker_yaml("garbled"));
    PersistedWorker parked;
    parked.name = "parked";
    parked.state = WorkerState::parked;
    parked.last_exit = "killed by SIGKILL";
    parked.policy_rule = "squeeze";
    parked.checkpoint = ParkedCheckpoint{"/x/0000000001", 4096, TimePoint{}};
    ASSERT_TRUE(write_persisted_worker(state_dir(), parked).ok());
    dir_->write("run/state/garbled", "infervisor-worker-state 1\nname=garbled\nstate=");

    new_daemon(config);
    run_until_event("garbled", K::ready);
    Worker* w = supervisor_->find("parked");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->state(), WorkerState::parked);
    EXPECT_EQ(w->last_exit(), "killed by SIGKILL");
    EXPECT_EQ(w->shown_state(), "checkpointed");  // parked after a checkpoint
    EXPECT_EQ(w->parked_checkpoint(), parked.checkpoint);
    EXPECT_EQ(count("parked", K::started), 0u);
    EXPECT_THAT(kinds_of("garbled"), ElementsAre(K::started, K::ready));
}

TEST_F(AdoptionLifecycle, ProcessesInACgroupNoStateExplainsAreNeverTakenForTheWorker) {
    Config config = load("workers:\n" + worker_yaml("a"));
    CgroupDir stale = tree_->worker("a");
    ASSERT_TRUE(stale.create().ok());
    pid_t child = fork();
    if (child == 0) {
        (void)stale.move_process(getpid());
        execl("/bin/sleep", "sleep", "1000", static_cast<char*>(nullptr));
        _exit(127);
    }
    // Not run_until: an io_context run with nothing to do stops for good.
    while (stale.procs().value_or({}).size() != 1) usleep(10000);
    new_daemon(config);
    EXPECT_EQ(count("a", K::leftover_reaped), 1u);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_EQ(WTERMSIG(status), SIGKILL);
    run_until_event("a", K::ready);
    EXPECT_THAT(kinds_of("a"), ElementsAre(K::leftover_reaped, K::started, K::ready));
    EXPECT_NE(supervisor_->find("a")->main_pid(), child);
}

TEST_F(AdoptionLifecycle, AfterAStopOfEverythingNothingIsLeftToAdopt) {
    Config config = load("workers:\n" + worker_yaml("a"));
    supervisor_->apply(config);
    run_until_event("a", K::ready);
    ASSERT_TRUE(std::filesystem::exists(state_dir() / "a"));
    bool stopped = false;
    supervisor_->stop_all([&] { stopped = true; });
    run_until([&] { return stopped; });
    EXPECT_TRUE(persisted_worker_names(state_dir()).empty());
}

}  // namespace
}  // namespace infervisor::testing
