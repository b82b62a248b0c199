// `checkpoint: {method: criu}` on real processes, the parts this host can
// run: criu itself cannot work here (criu 3.17 fails `criu check` on this
// host's newer kernel: "vdso: Unexpected rt vDSO area bounds"), so the dump
// and restore are covered by tests/vm/scenarios/145-criu-checkpoint.sh; here:
// the preflight refuses an established TCP connection before criu would run,
// the worker is killed as a late cooperative one would be, and the worker's
// own CHECKPOINT=1 never publishes criu's staging dir.
#include <gmock/gmock.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "config/config_loader.h"
#include "supervisor_fixture.h"

namespace infervisor::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using K = EventKind;
using namespace std::chrono_literals;

// Connects to a listener of its own over loopback, then says READY=1.
constexpr char kTcpWorker[] = R"(
import os, socket, time
l = socket.socket()
l.bind(("127.0.0.1", 0))
l.listen()
c = socket.create_connection(l.getsockname())
a, _ = l.accept()
n = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
n.sendto(b"READY=1", os.environ["NOTIFY_SOCKET"])
time.sleep(3600)
)";

class CriuCheckpoints : public SupervisorFixture {
  protected:
    void SetUp() override {
        if (::geteuid() != 0)
            GTEST_SKIP() << "criu's staging dir is made root's (chown); run as root "
                            "(the VM scenario 145 covers criu as the daemon runs it)";
        SupervisorFixture::SetUp();
    }
    fs::path store(const std::string& name) const {
        return dir_->path() / "state/checkpoints" / name;
    }
    long served(const std::string& name) {
        long n = 0;
        std::sscanf(supervisor_->find(name)->status_text().c_str(), "served %ld", &n);
        return n;
    }
};

TEST_F(CriuCheckpoints, AnEstablishedTcpConnectionIsRefusedAndTheWorkerKilled) {
    WorkerSpec spec = example("talker", {});
    spec.command = {"/usr/bin/python3", "-c", kTcpWorker};
    spec.notify = true;
    spec.restart.mode = RestartMode::never;
    spec.checkpoint.method = CheckpointMethod::criu;
    spec.checkpoint.timeout = 60s;
    supervisor_->apply(config({spec}));
    run_until_event("talker", K::ready);

    // criu writes the staging dir as root: the worker does not own it.
    struct stat st;
    ASSERT_EQ(::stat((store("talker") / "staging").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(st.st_mode & 07777, 0700u);

    ASSERT_TRUE(supervisor_->find("talker")->checkpoint_by_policy(Then::park, "late").ok());
    run_until_event("talker", K::parked);
    const Event* failed = last("talker", K::checkpoint_failed);
    ASSERT_NE(failed, nullptr);
    EXPECT_EQ(field(*failed, "REASON"), "criu-refused");
    EXPECT_EQ(field(*failed, "METHOD"), "criu");
    EXPECT_EQ(field(*failed, "LAST_CHECKPOINT"), "none");
    EXPECT_THAT(failed->message, HasSubstr("has an established TCP connection (fd "));
    EXPECT_THAT(failed->message, HasSubstr("killing the worker"));
    EXPECT_EQ(field(*last("talker", K::exited), "EXIT_SIGNAL"), "SIGKILL");
    EXPECT_EQ(count("talker", K::checkpoint_written), 0u);
    EXPECT_EQ(kinds_of("talker"),
              (std::vector<K>{K::started, K::ready, K::checkpoint_failed, K::exited, K::parked}));
}

TEST_F(CriuCheckpoints, TheWorkersOwnCheckpointMessageIsIgnored) {
    WorkerSpec spec = example("own", {"--serve-interval-ms", "20"});
    spec.notify = true;
    spec.checkpoint.method = CheckpointMethod::criu;
    supervisor_->apply(config({spec}));
    run_until_event("own", K::ready);
    // The example worker writes a checkpoint on SIGUSR1 (as root here it can
    // write into the root-owned staging dir) and sends CHECKPOINT=1 ...
    ASSERT_TRUE(supervisor_->find("own")->kill(SIGUSR1).ok());
    fs::path written = store("own") / "staging" / "checkpoint";
    run_until([&] { return fs::exists(written); });
    // ... then STATUS=served lines on the same socket, after it.
    long at = served("own");
    run_until([&] { return served("own") > at + 2; });
    EXPECT_EQ(count("own", K::checkpoint_written), 0u);
    EXPECT_EQ(count("own", K::checkpoint_failed), 0u);
    EXPECT_TRUE(fs::exists(written));  // not published: still in staging
    EXPECT_EQ(supervisor_->find("own")->state(), WorkerState::running);
}

// Issue 26, defect 11: after an adoption the next staging dir was made the
// worker's (adopt_run took the worker's uid even in criu mode), so criu,
// which writes it as root, refused every further dump until the next run.
TEST_F(CriuCheckpoints, AnAdoptedWorkersNextStagingDirIsRootsToo) {
    ASSERT_EQ(::chmod(dir_->path().c_str(), 0711), 0);
    std::string script;
    for (char c : std::string(kTcpWorker)) {  // a YAML double-quoted string
        if (c == '\n')
            script += "\\n";
        else if (c == '"')
            script += "\\\"";
        else
            script += c;
    }
    dir_->write("etc/infervisor.yaml",
                "workers:\n  - name: talker\n    command: [/usr/bin/python3, -c, \"" + script +
                    "\"]\n    user: dynamic\n    notify: true\n    memory: {max: 256M}\n"
                    "    restart: {policy: never}\n    checkpoint: {method: criu, timeout: 60s}\n");
    auto loaded = load_config(ConfigSource{dir_->path() / "etc/infervisor.yaml"});
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    supervisor_->apply(loaded.config);
    run_until_event("talker", K::ready);
    pid_t pid = supervisor_->find("talker")->main_pid();

    // The daemon ends without stopping anything; a new one adopts the worker.
    supervisor_.reset();
    events_.clear();
    supervisor_ = std::make_unique<Supervisor>(*ctx_);
    supervisor_->adopt_leftovers(loaded.config);
    supervisor_->apply(loaded.config);
    ASSERT_EQ(count("talker", K::adopted), 1u);
    ASSERT_EQ(supervisor_->find("talker")->main_pid(), pid);

    // A refused dump starts the staging dir afresh: as root's, not the worker's.
    ASSERT_TRUE(supervisor_->find("talker")->checkpoint_by_policy(Then::park, "late").ok());
    run_until_event("talker", K::checkpoint_failed);
    EXPECT_EQ(field(*last("talker", K::checkpoint_failed), "REASON"), "criu-refused");
    struct stat st;
    ASSERT_EQ(::stat((store("talker") / "staging").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(st.st_gid, 0u);
    run_until_event("talker", K::parked);
}

}  // namespace
}  // namespace infervisor::testing
