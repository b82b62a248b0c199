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

// Issue 26 #9: checkpoints hold prompts and KV caches; an operator lists
// and deletes them (infervisorctl checkpoints, through SupervisorService).
class CheckpointsByHand : public Checkpoints {
  protected:
    void SetUp() override {
        Checkpoints::SetUp();
        service_ = std::make_unique<SupervisorService>(*ctx_, *supervisor_, recent_,
                                                       SupervisorService::ReloadFunction{});
    }
    void TearDown() override {
        service_.reset();
        Checkpoints::TearDown();
    }
    // A running worker with three checkpoints.
    void three_checkpoints(WorkerSpec spec) {
        spec.checkpoint.keep = 5;
        supervisor_->apply(config({spec}));
        run_until_event(spec.name, K::ready);
        for (size_t n = 1; n <= 3; ++n) {
            ASSERT_TRUE(supervisor_->find(spec.name)->checkpoint_now().ok());
            run_until_event(spec.name, K::checkpoint_written, n);
        }
    }
    CheckpointDeletion remove(std::vector<std::string> ids, bool all = false, uid_t uid = 0) {
        std::optional<CheckpointDeletion> out;
        service_->delete_checkpoints("count", {std::move(ids), all},
                                     PeerCredentials{uid, uid, 1, {}},
                                     [&](CheckpointDeletion d) { out = std::move(d); });
        EXPECT_TRUE(out.has_value());  // answered at once
        return out.value_or(CheckpointDeletion{});
    }
    std::vector<std::string> listed_ids() {
        std::vector<std::string> out;
        for (const auto& c : service_->list_checkpoints("count").checkpoints) out.push_back(c.id);
        return out;
    }
    std::vector<std::string> ids_on_disk() {
        std::vector<std::string> out;
        for (const auto& e : fs::directory_iterator(store("count")))
            if (e.is_directory() && e.path().filename().string().size() == 10)
                out.push_back(e.path().filename().string());
        std::sort(out.begin(), out.end());
        return out;
    }
    // The CHECKPOINT_BYTES its checkpoint-written gave.
    std::string written_bytes(uint64_t sequence) const {
        for (const auto& e : events_)
            if (e.kind == K::checkpoint_written &&
                field(e, "CHECKPOINT_SEQUENCE") == std::to_string(sequence))
                return field(e, "CHECKPOINT_BYTES");
        return "none";
    }

    EventRing recent_;
    std::unique_ptr<SupervisorService> service_;
};

TEST_F(CheckpointsByHand, TheListHasIdsTimesSizesAndTheNextRestoreButNoContents) {
    three_checkpoints(counter("count"));
    CheckpointListing listing = service_->list_checkpoints("count");
    ASSERT_TRUE(listing.outcome.ok()) << listing.outcome.reason;
    EXPECT_EQ(listing.directory, store("count").string());
    ASSERT_EQ(listing.checkpoints.size(), 3u);
    int64_t now = ::time(nullptr);
    for (size_t i = 0; i < 3; ++i) {
        const CheckpointEntry& c = listing.checkpoints[i];
        EXPECT_EQ(c.id, CheckpointStore::sequence_name(i + 1));
        EXPECT_EQ(c.sequence, i + 1);
        ASSERT_TRUE(c.written_at.has_value());
        EXPECT_LE(*c.written_at, now);
        EXPECT_GT(*c.written_at, now - 3600);
        ASSERT_TRUE(c.bytes.has_value());
        EXPECT_EQ(std::to_string(*c.bytes), written_bytes(i + 1));
        EXPECT_FALSE(c.criu);
        EXPECT_EQ(c.next_restore, i == 2) << i;
    }
    EXPECT_FALSE(service_->list_checkpoints("nope").outcome.ok());
}

// Before a worker's first run its checkpoints are read from the disk, and a
// worker that has none gets nothing created by a listing.
TEST_F(CheckpointsByHand, ListingBeforeAnyRunReadsTheDiskAndCreatesNothing) {
    std::vector<EventKind> emitted;
    auto emit = [&](EventKind kind, std::string, WorkerCheckpoints::Fields) {
        emitted.push_back(kind);
    };
    WorkerCheckpoints idle(ctx_->io, ctx_->clock, ctx_->paths, "idle", emit);
    auto none = idle.list();
    ASSERT_TRUE(none) << none.error().message();
    EXPECT_TRUE(none->empty());
    EXPECT_FALSE(fs::exists(store("idle")));
    auto nothing = idle.remove({"0000000001"}, false, 0);
    ASSERT_FALSE(nothing);
    EXPECT_THAT(nothing.error().message(),
                HasSubstr("worker 'idle' has no checkpoint '0000000001'"));
    EXPECT_FALSE(fs::exists(store("idle")));

    // An earlier daemon's checkpoints: listed, and deleted, without a run.
    fs::create_directories(store("idle") / "0000000004");
    std::ofstream(store("idle") / "0000000004/state") << "x";
    WorkerCheckpoints earlier(ctx_->io, ctx_->clock, ctx_->paths, "idle", emit);
    auto listed = earlier.list();
    ASSERT_TRUE(listed) << listed.error().message();
    ASSERT_EQ(listed->size(), 1u);
    EXPECT_EQ(listed->at(0).stored.sequence, 4u);
    EXPECT_TRUE(listed->at(0).next_restore);
    EXPECT_FALSE(listed->at(0).bytes.has_value());  // no info: an older version's
    EXPECT_TRUE(listed->at(0).written_at.has_value());
    auto deleted = earlier.remove({}, true, 0);
    ASSERT_TRUE(deleted) << deleted.error().message();
    EXPECT_EQ(deleted->size(), 1u);
    EXPECT_FALSE(fs::exists(store("idle") / "0000000004"));
    EXPECT_EQ(emitted, (std::vector<EventKind>{K::checkpoint_deleted}));
}

TEST_F(CheckpointsByHand, DeletingOneIsJournaledWithTheCallerAndTheNewestLeft) {
    three_checkpoints(counter("count"));
    auto deleted = remove({"0000000003", "0000000001"}, false, 1234);
    ASSERT_TRUE(deleted.outcome.ok()) << deleted.outcome.reason;
    EXPECT_EQ(deleted.deleted, (std::vector<std::string>{"0000000001", "0000000003"}));
    EXPECT_EQ(ids_on_disk(), (std::vector<std::string>{"0000000002"}));
    EXPECT_EQ(listed_ids(), (std::vector<std::string>{"0000000002"}));
    EXPECT_TRUE(service_->list_checkpoints("count").checkpoints.at(0).next_restore);
    const Event* e = last("count", K::checkpoint_deleted);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(field(*e, "CALLER_UID"), "1234");
    EXPECT_EQ(field(*e, "CHECKPOINT_IDS"), "0000000001, 0000000003");
    EXPECT_EQ(field(*e, "CHECKPOINTS_DELETED"), "2");
    EXPECT_EQ(field(*e, "NEXT_RESTORE"), (store("count") / "0000000002").string());
    EXPECT_THAT(e->message, HasSubstr("deleted on request of uid 1234"));
    // The trash is emptied off the loop.
    run_until([&] { return fs::is_empty(store("count") / "trash"); });
    // The worker runs on and checkpoints on, numbered after the newest left.
    ASSERT_TRUE(supervisor_->find("count")->checkpoint_now().ok());
    run_until_event("count", K::checkpoint_written, 4);
    EXPECT_EQ(ids_on_disk(), (std::vector<std::string>{"0000000002", "0000000003"}));
}

// Every id is hostile: only one of the worker's listed checkpoints is
// found, whatever it looks like, and a call with any other deletes nothing.
TEST_F(CheckpointsByHand, ABadOrUnknownIdIsAClearErrorAndDeletesNothing) {
    three_checkpoints(counter("count"));
    fs::path outside = dir_->path() / "outside";
    fs::create_directories(outside / "0000000001");
    for (std::string id :
         {std::string("../x"), std::string("a/b"), std::string(""), std::string(5000, '0'),
          std::string("0000000009"), std::string("staging"), std::string("trash"),
          std::string("../count/0000000001"), std::string("0000000001.info"),
          (outside / "0000000001").string(), std::string("1")}) {
        auto r = remove({"0000000002", id});
        ASSERT_FALSE(r.outcome.ok()) << id;
        EXPECT_THAT(r.outcome.reason, HasSubstr("worker 'count' has no checkpoint")) << id;
        EXPECT_LT(r.outcome.reason.size(), 200u);  // a 5000-byte id is not echoed
    }
    EXPECT_EQ(ids_on_disk(), (std::vector<std::string>{"0000000001", "0000000002", "0000000003"}));
    EXPECT_TRUE(fs::exists(store("count") / "staging"));
    EXPECT_TRUE(fs::exists(outside / "0000000001"));
    EXPECT_EQ(count("count", K::checkpoint_deleted), 0u);
}

TEST_F(CheckpointsByHand, NoneWhileACheckpointIsBeingWritten) {
    // Three checkpoints an earlier run left, and a run that ignores its
    // checkpoint signal (SIGWINCH): its request is never answered while the
    // test runs, and stays "being written".
    for (int n = 1; n <= 3; ++n) {
        fs::create_directories(store("count") / CheckpointStore::sequence_name(n));
        std::ofstream(store("count") / CheckpointStore::sequence_name(n) / "checkpoint")
            << "served=0\n";
    }
    auto spec = counter("count");
    spec.checkpoint.signal = SIGWINCH;
    spec.checkpoint.keep = 5;
    supervisor_->apply(config({spec}));
    run_until_event("count", K::ready);
    Worker* w = supervisor_->find("count");
    ASSERT_TRUE(w->checkpoint_now().ok());
    for (bool all : {false, true}) {
        auto r =
            remove(all ? std::vector<std::string>{} : std::vector<std::string>{"0000000001"}, all);
        ASSERT_FALSE(r.outcome.ok());
        EXPECT_THAT(r.outcome.reason, HasSubstr("is being written"));
    }
    EXPECT_EQ(ids_on_disk().size(), 3u);
    EXPECT_EQ(count("count", K::checkpoint_deleted), 0u);
}

// Deleting the one a stopped worker would restore is allowed: it starts
// fresh, and a worker parked after that checkpoint shows as parked.
TEST_F(CheckpointsByHand, AllOfAParkedWorkersCheckpointsGoAndItStartsFresh) {
    three_checkpoints(counter("count"));
    Worker* w = supervisor_->find("count");
    ASSERT_TRUE(w->checkpoint_by_policy(Then::park, "squeeze").ok());
    run_until_event("count", K::parked);
    ASSERT_EQ(w->shown_state(), "checkpointed");
    auto deleted = remove({}, true);
    ASSERT_TRUE(deleted.outcome.ok()) << deleted.outcome.reason;
    EXPECT_EQ(deleted.deleted.size(), 4u);
    EXPECT_TRUE(ids_on_disk().empty());
    EXPECT_EQ(w->shown_state(), "parked");
    EXPECT_FALSE(w->parked_checkpoint().has_value());
    EXPECT_EQ(field(*last("count", K::checkpoint_deleted), "NEXT_RESTORE"), "none");
    EXPECT_THAT(last("count", K::checkpoint_deleted)->message,
                HasSubstr("none left: the next start is fresh"));
    size_t restoring = count("count", K::checkpoint_restoring);
    w->start();
    run_until_event("count", K::ready, 2);
    EXPECT_EQ(count("count", K::checkpoint_restoring), restoring);
    // Nothing left: --all deletes nothing, and says so.
    auto again = remove({}, true);
    ASSERT_TRUE(again.outcome.ok());
    EXPECT_TRUE(again.deleted.empty());
}

// The checkpoint a starting run was given may be in use by its restore:
// deleting it is refused until the run is ready (or has ended); the others
// may go meanwhile.
TEST_F(CheckpointsByHand, NotTheOneAStartingRunRestoresFromUntilItIsReady) {
    for (int n = 1; n <= 2; ++n) {
        fs::create_directories(store("fresh") / CheckpointStore::sequence_name(n));
        std::ofstream(store("fresh") / CheckpointStore::sequence_name(n) / "checkpoint")
            << "served=0\n";
    }
    WorkerCheckpoints checkpoints(ctx_->io, ctx_->clock, ctx_->paths, "fresh",
                                  [](EventKind, std::string, WorkerCheckpoints::Fields) {});
    auto dirs = checkpoints.prepare_run(ProcessIdentity::of(65534, 65534, {}));
    ASSERT_TRUE(dirs) << dirs.error().message();
    ASSERT_EQ(dirs->restore_from, store("fresh") / "0000000002");
    for (bool all : {false, true}) {
        auto refused = checkpoints.remove(
            all ? std::vector<std::string>{} : std::vector<std::string>{"0000000002"}, all, 0);
        ASSERT_FALSE(refused);
        EXPECT_THAT(refused.error().message(), HasSubstr("is being restored by the run"));
    }
    auto older = checkpoints.remove({"0000000001"}, false, 0);
    ASSERT_TRUE(older) << older.error().message();
    EXPECT_TRUE(fs::exists(store("fresh") / "0000000002"));
    checkpoints.run_ready(ctx_->clock.now(), true);
    auto newest = checkpoints.remove({"0000000002"}, false, 0);
    ASSERT_TRUE(newest) << newest.error().message();
    EXPECT_FALSE(fs::exists(store("fresh") / "0000000002"));
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
