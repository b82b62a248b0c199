// Cooperative checkpoints on real processes: the example worker writes its
// served count into $INFERVISOR_CHECKPOINT_DIR on SIGUSR1 and answers
// CHECKPOINT=1; the daemon publishes it, stops the worker, and the next run
// is started with INFERVISOR_RESTORE_FROM and counts on from there.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <fstream>

#include "services/supervisor_service.h"
#include "supervise/persisted_worker.h"
#include "supervisor_fixture.h"

namespace infervisor::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using K = EventKind;
using namespace std::chrono_literals;

struct stat lstat_path(const fs::path& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st;
}

class Checkpoints : public SupervisorFixture {
  protected:
    WorkerSpec counter(const std::string& name) const {
        auto spec = example(name, {"--serve-interval-ms", "20"});
        spec.notify = true;
        spec.checkpoint.timeout = 20s;
        return spec;
    }
    long served(const std::string& name) {
        std::string status = supervisor_->find(name)->status_text();
        long n = 0;
        std::sscanf(status.c_str(), "served %ld", &n);
        return n;
    }
    // The served count the worker wrote into a checkpoint.
    static long served_in(const fs::path& checkpoint) {
        std::ifstream in(checkpoint / "checkpoint");
        std::string line;
        while (std::getline(in, line))
            if (line.rfind("served=", 0) == 0) return std::stol(line.substr(7));
        return -1;
    }
    fs::path store(const std::string& name) const {
        return dir_->path() / "state/checkpoints" / name;
    }
    size_t complete_checkpoints(const std::string& name) const {
        size_t n = 0;
        for (const auto& e : fs::directory_iterator(store(name)))
            n += e.is_directory() && e.path().filename().string().size() == 10;
        return n;
    }
};

TEST_F(Checkpoints, ACheckpointStopsTheWorkerAndTheNextRunResumesFromIt) {
    supervisor_->apply(config({counter("count")}));
    run_until_event("count", K::ready);
    run_until([&] { return served("count") >= 10; });
    Worker* w = supervisor_->find("count");
    ASSERT_TRUE(w->checkpoint_by_policy(Then::restart, "growth").ok());
    run_until_event("count", K::checkpoint_written);
    run_until_event("count", K::ready, 2);

    const Event* written = last("count", K::checkpoint_written);
    fs::path first = field(*written, "CHECKPOINT");
    EXPECT_EQ(first, store("count") / "0000000001");
    EXPECT_EQ(field(*written, "TRIGGER"), "rule 'growth'");
    EXPECT_NE(field(*written, "CHECKPOINT_BYTES"), "");
    EXPECT_NE(field(*written, "CHECKPOINT_SECONDS"), "");
    long at_checkpoint = served_in(first);
    EXPECT_GE(at_checkpoint, 10);

    // The run ended as a policy stop and was restarted with the checkpoint.
    const Event* exited = last("count", K::exited);
    EXPECT_EQ(field(*exited, "EXIT_CODE"), "0");  // it stopped on SIGTERM
    const Event* restoring = last("count", K::checkpoint_restoring);
    ASSERT_NE(restoring, nullptr);
    EXPECT_EQ(field(*restoring, "CHECKPOINT"), first.string());
    EXPECT_EQ(field(*restoring, "CHECKPOINT_SEQUENCE"), "1");
    EXPECT_EQ(field(*restoring, "CHECKPOINT_BYTES"), field(*written, "CHECKPOINT_BYTES"));
    EXPECT_EQ(count("count", K::checkpoint_restored), 1u);

    // It counts on from the checkpoint: its next checkpoint holds more.
    ASSERT_TRUE(supervisor_->find("count")->checkpoint_now().ok());
    run_until_event("count", K::checkpoint_written, 2);
    fs::path second = field(*last("count", K::checkpoint_written), "CHECKPOINT");
    EXPECT_EQ(second, store("count") / "0000000002");
    EXPECT_GE(served_in(second), at_checkpoint);
    EXPECT_EQ(supervisor_->find("count")->state(), WorkerState::running);
}

TEST_F(Checkpoints, AWorkerThatDoesNotAnswerIsKilledAndTheJournalNamesItsLastCheckpoint) {
    auto spec = counter("deaf");
    spec.checkpoint.signal = SIGWINCH;  // ignored by the worker: it never answers
    spec.checkpoint.timeout = 300ms;
    spec.restart.mode = RestartMode::never;
    supervisor_->apply(config({spec}));
    run_until_event("deaf", K::ready);
    ASSERT_TRUE(supervisor_->find("deaf")->checkpoint_by_policy(Then::park, "growth").ok());
    run_until_event("deaf", K::parked);

    const Event* failed = last("deaf", K::checkpoint_failed);
    ASSERT_NE(failed, nullptr);
    EXPECT_EQ(field(*failed, "REASON"), "timeout");
    EXPECT_EQ(field(*failed, "LAST_CHECKPOINT"), "none");
    EXPECT_EQ(field(*failed, "TIMEOUT_MS"), "300");
    EXPECT_THAT(failed->message, HasSubstr("no CHECKPOINT=1 within 300ms of SIGWINCH"));
    EXPECT_THAT(failed->message, HasSubstr("killing the worker"));
    EXPECT_EQ(field(*last("deaf", K::exited), "EXIT_SIGNAL"), "SIGKILL");
    EXPECT_EQ(count("deaf", K::checkpoint_written), 0u);
    // Nothing to restore from: parked, not checkpointed.
    EXPECT_EQ(supervisor_->find("deaf")->shown_state(), "parked");
    EXPECT_EQ(supervisor_->find("deaf")->state_reason(), "rule 'growth'");
}

// Issue 27, point 4: a checkpoint of a worker whose process would be ended
// by the checkpoint signal (it neither catches nor blocks it) was answered
// by "killed by SIGUSR1". The signal is not sent: the checkpoint fails with
// why, and the worker runs on.
TEST_F(Checkpoints, TheSignalIsNotSentToAProcessItWouldEnd) {
    auto spec = example("plain", {"--checkpoint-signal", "USR2"});  // SIGUSR1 not handled
    spec.notify = true;
    spec.checkpoint.signal = SIGUSR1;
    supervisor_->apply(config({spec}));
    run_until_event("plain", K::ready);
    Worker* w = supervisor_->find("plain");
    auto refused = w->checkpoint_now({});
    ASSERT_FALSE(refused.ok());
    EXPECT_THAT(refused.error().message(),
                HasSubstr("neither catches nor blocks SIGUSR1 (SigCgt and SigBlk in /proc/"));
    EXPECT_THAT(refused.error().message(), HasSubstr("the signal would end it: not sent"));
    ASSERT_FALSE(w->checkpoint_by_policy(Then::restart, "growth").ok());
    EXPECT_EQ(w->state(), WorkerState::running);
    EXPECT_EQ(count("plain", K::exited), 0u);
}

// action: checkpoint, then: park — what the operator sees is `checkpointed`,
// with the rule and the checkpoint; a start restores it and ends that.
TEST_F(Checkpoints, AWorkerParkedAfterItsCheckpointShowsAsCheckpointedUntilStarted) {
    supervisor_->apply(config({counter("batch")}));
    run_until_event("batch", K::ready);
    Worker* w = supervisor_->find("batch");
    ASSERT_TRUE(w->checkpoint_by_policy(Then::park, "squeeze").ok());
    run_until_event("batch", K::parked);

    const Event* written = last("batch", K::checkpoint_written);
    ASSERT_NE(written, nullptr);
    EXPECT_EQ(w->state(), WorkerState::parked);
    EXPECT_EQ(w->shown_state(), "checkpointed");
    ASSERT_TRUE(w->parked_checkpoint().has_value());
    EXPECT_EQ(w->parked_checkpoint()->path, field(*written, "CHECKPOINT"));
    ASSERT_TRUE(w->parked_checkpoint()->bytes.has_value());
    EXPECT_EQ(std::to_string(*w->parked_checkpoint()->bytes), field(*written, "CHECKPOINT_BYTES"));
    EXPECT_THAT(w->state_reason(), HasSubstr("rule 'squeeze'; checkpoint of "));
    EXPECT_THAT(w->state_reason(), HasSubstr(" ago"));
    EXPECT_EQ(field(*last("batch", K::parked), "CHECKPOINT"), field(*written, "CHECKPOINT"));

    EventRing recent;
    SupervisorService service(*ctx_, *supervisor_, recent, {});
    WorkerView status = service.list_workers().at(0);
    EXPECT_EQ(status.state, "checkpointed");
    EXPECT_EQ(status.state_reason, w->state_reason());
    ASSERT_TRUE(status.checkpoint.has_value());
    EXPECT_EQ(status.checkpoint->path, field(*written, "CHECKPOINT"));
    EXPECT_EQ(status.checkpoint->bytes, w->parked_checkpoint()->bytes);
    // Kept for a daemon that adopts it.
    auto persisted = read_persisted_worker(dir_->path() / "run/state", "batch");
    ASSERT_TRUE(persisted.ok()) << persisted.error().message();
    ASSERT_TRUE(persisted->checkpoint.has_value());
    EXPECT_EQ(persisted->checkpoint->path, w->parked_checkpoint()->path);
    EXPECT_EQ(persisted->checkpoint->bytes, w->parked_checkpoint()->bytes);
    // To the millisecond (the state file's resolution).
    EXPECT_LE(
        std::chrono::abs(persisted->checkpoint->written_at - w->parked_checkpoint()->written_at),
        1ms);

    w->start();
    run_until_event("batch", K::ready, 2);
    EXPECT_EQ(field(*last("batch", K::checkpoint_restoring), "CHECKPOINT"),
              field(*written, "CHECKPOINT"));
    EXPECT_EQ(w->shown_state(), "running");
    EXPECT_FALSE(w->parked_checkpoint().has_value());
    EXPECT_EQ(service.list_workers().at(0).checkpoint, std::nullopt);
}

TEST_F(Checkpoints, KeepRunningAndPeriodicCheckpointsKeepOnlyTheNewest) {
    auto spec = counter("steady");
    spec.checkpoint.interval = 200ms;
    spec.checkpoint.keep = 2;
    supervisor_->apply(config({spec}));
    run_until_event("steady", K::ready);
    run_until_event("steady", K::checkpoint_written, 2);
    // A periodic one may be under way: then the rule's request is refused.
    Worker* w = supervisor_->find("steady");
    run_until([&] { return w->checkpoint_by_policy(Then::keep_running, "r").ok(); });
    run_until([&] {
        for (const auto& e : events_)
            if (e.kind == K::checkpoint_written && field(e, "TRIGGER") == "rule 'r'") return true;
        return false;
    });
    run_until_event("steady", K::checkpoint_written, 4);

    EXPECT_EQ(supervisor_->find("steady")->state(), WorkerState::running);
    EXPECT_EQ(count("steady", K::exited), 0u);
    EXPECT_EQ(complete_checkpoints("steady"), 2u);
    EXPECT_TRUE(fs::exists(store("steady") / "staging"));
}

TEST_F(Checkpoints, ARunThatDiesWhileCheckpointingIsNotOfferedItsHalfWrittenState) {
    auto spec = counter("torn");
    spec.checkpoint.signal = SIGWINCH;
    supervisor_->apply(config({spec}));
    run_until_event("torn", K::ready);
    // It writes part of a checkpoint, then dies without CHECKPOINT=1.
    std::ofstream(store("torn") / "staging/checkpoint") << "served=999999\n";
    ASSERT_TRUE(supervisor_->find("torn")->kill(SIGKILL).ok());
    run_until_event("torn", K::ready, 2);
    EXPECT_EQ(count("torn", K::checkpoint_restoring), 0u);
    EXPECT_TRUE(fs::is_empty(store("torn") / "staging"));
    EXPECT_EQ(complete_checkpoints("torn"), 0u);
}

// Issue 26 #9: checkpoints are bounded by the worker's checkpoint quota. A
// checkpoint over it is deleted with checkpoint-failed (REASON=quota), the
// previous one is kept and is what the next run restores; the next one that
// fits is written as usual.
TEST_F(Checkpoints, ACheckpointOverTheQuotaFailsAndThePreviousOneIsKept) {
    auto spec = counter("bounded");
    spec.checkpoint.quota = CheckpointQuota{0, 1 << 20};
    spec.checkpoint.keep = 5;
    supervisor_->apply(config({spec}));
    run_until_event("bounded", K::ready);
    Worker* w = supervisor_->find("bounded");
    ASSERT_TRUE(w->checkpoint_now().ok());
    run_until_event("bounded", K::checkpoint_written);
    fs::path first = store("bounded") / "0000000001";
    ASSERT_TRUE(fs::is_directory(first));

    // The worker's next checkpoint holds 2 MiB besides its own file.
    {
        std::ofstream padding(store("bounded") / "staging/padding", std::ios::binary);
        std::string block(1 << 16, 'x');
        for (int i = 0; i < 32; ++i) padding << block;
    }
    std::optional<WorkerCheckpoints::Outcome> answered;
    ASSERT_TRUE(w->checkpoint_now([&](const auto& o) { answered = o; }).ok());
    run_until_event("bounded", K::checkpoint_failed);
    run_until([&] { return answered.has_value(); });

    const Event* failed = last("bounded", K::checkpoint_failed);
    EXPECT_EQ(field(*failed, "REASON"), "quota");
    EXPECT_EQ(field(*failed, "QUOTA_BYTES"), std::to_string(1 << 20));
    EXPECT_GE(std::stoull(field(*failed, "CHECKPOINT_BYTES")), 2u << 20);
    EXPECT_EQ(field(*failed, "LAST_CHECKPOINT"), first.string());
    EXPECT_THAT(failed->message, HasSubstr("more than the checkpoint quota of 1M"));
    EXPECT_FALSE(answered->published);
    EXPECT_THAT(answered->detail, HasSubstr("checkpoint quota"));
    EXPECT_EQ(count("bounded", K::checkpoint_written), 1u);
    EXPECT_EQ(complete_checkpoints("bounded"), 1u);
    EXPECT_TRUE(fs::is_directory(first));
    EXPECT_FALSE(fs::exists(store("bounded") / "0000000002"));
    EXPECT_TRUE(fs::is_empty(store("bounded") / "staging"));
    EXPECT_EQ(w->state(), WorkerState::running);

    // The next run restores the kept one.
    ASSERT_TRUE(w->kill(SIGKILL).ok());
    run_until_event("bounded", K::checkpoint_restoring);
    EXPECT_EQ(field(*last("bounded", K::checkpoint_restoring), "CHECKPOINT"), first.string());
    run_until_event("bounded", K::ready, 2);

    // One that fits is written and kept beside the first.
    ASSERT_TRUE(supervisor_->find("bounded")->checkpoint_now().ok());
    run_until_event("bounded", K::checkpoint_written, 2);
    EXPECT_EQ(complete_checkpoints("bounded"), 2u);
}

// Issue 26 #9: a checkpoint is judged before it is published. One over the
// quota never gets a number, not even for a moment (a daemon that crashed in
// that moment would offer it at the next start): the store never sees a
// numbered entry appear for it.
TEST_F(Checkpoints, ACheckpointOverTheQuotaIsNeverPublishedNotEvenForAMoment) {
    auto spec = counter("judged");
    spec.checkpoint.quota = CheckpointQuota{0, 1 << 20};
    supervisor_->apply(config({spec}));
    run_until_event("judged", K::ready);
    Worker* w = supervisor_->find("judged");
    ASSERT_TRUE(w->checkpoint_now().ok());
    run_until_event("judged", K::checkpoint_written);

    UniqueFd watch(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    ASSERT_TRUE(watch);
    ASSERT_GE(::inotify_add_watch(watch.get(), store("judged").c_str(), IN_CREATE | IN_MOVED_TO),
              0);
    {
        std::ofstream padding(store("judged") / "staging/padding", std::ios::binary);
        padding << std::string(2 << 20, 'x');
    }
    ASSERT_TRUE(w->checkpoint_now().ok());
    run_until_event("judged", K::checkpoint_failed);
    EXPECT_EQ(field(*last("judged", K::checkpoint_failed), "REASON"), "quota");

    std::vector<std::string> appeared;
    alignas(inotify_event) char buf[8192];
    ssize_t n;
    while ((n = ::read(watch.get(), buf, sizeof buf)) > 0)
        for (char* p = buf; p < buf + n;) {
            auto* e = reinterpret_cast<inotify_event*>(p);
            if (e->len) appeared.emplace_back(e->name);
            p += sizeof(inotify_event) + e->len;
        }
    EXPECT_NE(std::find(appeared.begin(), appeared.end(), "incoming"), appeared.end());
    for (const auto& name : appeared)
        EXPECT_NE(name.size(), 10u) << "a numbered entry appeared: " << name;
    EXPECT_EQ(complete_checkpoints("judged"), 1u);
}

// Issue 26 #9: a published checkpoint is root's, so its worker cannot grow
// it after it was measured; a file some process still holds open for writing
// when the checkpoint is taken could be, so that checkpoint is refused and
// the previous one kept.
TEST_F(Checkpoints, ACheckpointWithAFileStillOpenForWritingIsNotPublished) {
    supervisor_->apply(config({counter("held")}));
    run_until_event("held", K::ready);
    Worker* w = supervisor_->find("held");
    ASSERT_TRUE(w->checkpoint_now().ok());
    run_until_event("held", K::checkpoint_written);
    fs::path first = store("held") / "0000000001";
    auto st = lstat_path(first / "checkpoint");
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(st.st_mode & 077, 0u);  // nothing for group or others (the worker here is root)

    // Standing in for a descriptor the worker keeps to grow it later.
    UniqueFd writer(
        ::open((store("held") / "staging/growing").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
    ASSERT_TRUE(writer);
    std::optional<WorkerCheckpoints::Outcome> answered;
    ASSERT_TRUE(w->checkpoint_now([&](const auto& o) { answered = o; }).ok());
    run_until_event("held", K::checkpoint_failed);
    run_until([&] { return answered.has_value(); });
    const Event* failed = last("held", K::checkpoint_failed);
    EXPECT_EQ(field(*failed, "REASON"), "unusable");
    EXPECT_EQ(field(*failed, "LAST_CHECKPOINT"), first.string());
    EXPECT_THAT(failed->message, HasSubstr("still open for writing"));
    EXPECT_FALSE(answered->published);
    EXPECT_EQ(complete_checkpoints("held"), 1u);
    EXPECT_FALSE(fs::exists(store("held") / "incoming"));
    EXPECT_EQ(w->state(), WorkerState::running);
}

}  // namespace
}  // namespace infervisor::testing
