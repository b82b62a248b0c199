// The checkpoint store on a real file system. The tests play the worker: it
// writes into its staging dir, leaves half-written checkpoints behind, and
// plants symbolic links to a "victim" directory (standing in for /etc) that
// the daemon must never touch.
#include "checkpoint/checkpoint_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/temp_dir.h"

namespace infervisor {
namespace {

namespace fs = std::filesystem;
using testing::slurp;
using testing::TempDir;

constexpr uid_t kWorkerUid = 65534;
constexpr gid_t kWorkerGid = 65534;

struct stat lstat_of(const fs::path& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st;
}

class CheckpointStoreTest : public ::testing::Test {
  protected:
    void SetUp() override {
        if (::geteuid() != 0) GTEST_SKIP() << "needs root (chown to the worker's uid)";
    }
    CheckpointStore open() {
        auto store = CheckpointStore::open(root_, "llama");
        EXPECT_TRUE(store) << store.error().message();
        return std::move(*store);
    }
    // What the worker does: writes its state into $INFERVISOR_CHECKPOINT_DIR.
    void worker_writes(const std::string& served) {
        dir_.write("checkpoints/llama/staging/checkpoint", "served=" + served + "\n");
    }
    fs::path numbered(uint64_t sequence) const {
        return root_ / "llama" / CheckpointStore::sequence_name(sequence);
    }
    // What the daemon does once the worker is done: take, then publish
    // (sealing and judging come between; see the seal tests).
    static Result<StoredCheckpoint> publish(CheckpointStore& store) {
        if (auto taken = store.take_staging(); !taken) return taken.error();
        return store.publish();
    }
    std::vector<uint64_t> sequences(const CheckpointStore& store) const {
        std::vector<uint64_t> out;
        for (const auto& c : store.complete()) out.push_back(c.sequence);
        return out;
    }
    size_t trash_entries() const {
        size_t n = 0;
        for ([[maybe_unused]] const auto& e : fs::directory_iterator(root_ / "llama/trash")) ++n;
        return n;
    }
    void empty_trash(const CheckpointStore& store) {
        auto fd = store.dup_dir();
        ASSERT_TRUE(fd);
        auto r = CheckpointStore::empty_trash(fd->get());
        EXPECT_TRUE(r) << r.error().message();
    }

    TempDir dir_;
    fs::path root_ = dir_.path() / "checkpoints";
};

TEST_F(CheckpointStoreTest, TheWorkerDirIsRootsAndStagingIsTheWorkers) {
    auto store = open();
    auto staging = store.fresh_staging(kWorkerUid, kWorkerGid);
    ASSERT_TRUE(staging) << staging.error().message();
    EXPECT_EQ(*staging, root_ / "llama/staging");
    auto name = lstat_of(root_ / "llama");
    EXPECT_EQ(name.st_uid, 0u);
    EXPECT_EQ(name.st_mode & 07777, 0711u);
    auto st = lstat_of(*staging);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_uid, kWorkerUid);
    EXPECT_EQ(st.st_gid, kWorkerGid);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
    EXPECT_FALSE(store.newest());
}

TEST_F(CheckpointStoreTest, PublishIsARenameOfTheStagingDirAndNothingIsCopied) {
    auto store = open();
    ASSERT_TRUE(store.fresh_staging(kWorkerUid, kWorkerGid));
    worker_writes("41");
    ino_t staged = lstat_of(root_ / "llama/staging").st_ino;

    auto published = publish(store);
    ASSERT_TRUE(published) << published.error().message();
    EXPECT_EQ(published->sequence, 1u);
    EXPECT_EQ(published->path, numbered(1));
    EXPECT_EQ(lstat_of(numbered(1)).st_ino, staged);
    EXPECT_EQ(slurp(numbered(1) / "checkpoint"), "served=41\n");
    EXPECT_FALSE(fs::exists(root_ / "llama/staging"));
    EXPECT_EQ(store.newest(), *published);

    // The next checkpoint gets a fresh staging dir and the next number.
    ASSERT_TRUE(store.fresh_staging(kWorkerUid, kWorkerGid));
    EXPECT_TRUE(fs::is_empty(root_ / "llama/staging"));
    worker_writes("42");
    auto second = publish(store);
    ASSERT_TRUE(second);
    EXPECT_EQ(second->sequence, 2u);
    EXPECT_EQ(open().newest(), *second);  // as a restarted daemon sees it
}

TEST_F(CheckpointStoreTest, AnEmptyOrMissingStagingDirIsNotACheckpoint) {
    auto store = open();
    auto missing = publish(store);
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().message().find("does not exist"), std::string::npos);
    ASSERT_TRUE(store.fresh_staging(kWorkerUid, kWorkerGid));
    auto empty = publish(store);
    ASSERT_FALSE(empty);
    EXPECT_NE(empty.error().message().find("nothing was written"), std::string::npos);
    EXPECT_FALSE(store.newest());
    EXPECT_TRUE(fs::exists(root_ / "llama/staging"));
}

TEST_F(CheckpointStoreTest, ATornCheckpointIsNeverOfferedAndIsDiscardedAtTheNextRun) {
    auto store = open();
    ASSERT_TRUE(store.fresh_staging(kWorkerUid, kWorkerGid));
    worker_writes("10");
    ASSERT_TRUE(publish(store));
    ASSERT_TRUE(store.fresh_staging(kWorkerUid, kWorkerGid));
    // The worker dies half-way through its next checkpoint (no CHECKPOINT=1).
    dir_.write("checkpoints/llama/staging/checkpoint.tmp", "served=2");

    auto restarted = open();  // the next start, maybe by a new daemon
    ASSERT_TRUE(restarted.newest());
    EXPECT_EQ(restarted.newest()->sequence, 1u);
    EXPECT_EQ(restarted.complete().size(), 1u);
    ASSERT_TRUE(restarted.fresh_staging(kWorkerUid, kWorkerGid));
    EXPECT_TRUE(fs::is_empty(root_ / "llama/staging"));
    EXPECT_EQ(trash_entries(), 1u);
    empty_trash(restarted);
    EXPECT_EQ(trash_entries(), 0u);
    EXPECT_EQ(slurp(numbered(1) / "checkpoint"), "served=10\n");
}

TEST_F(CheckpointStoreTest, RetentionKeepsTheNewestAndTheirInfo) {
    auto store = open();
    for (int i = 1; i <= 4; ++i) {
        ASSERT_TRUE(store.fresh_staging(kWorkerUid, kWorkerGid));
        worker_writes(std::to_string(i));
        auto published = publish(store);
        ASSERT_TRUE(published);
        auto fd = store.dup_dir();
        ASSERT_TRUE(fd);
        ASSERT_TRUE(CheckpointStore::write_info(fd->get(), published->sequence, {uint64_t(i), {}}));
        size_t retired = 0;
        for (; store.complete().size() > 2; ++retired) {
            auto r = store.retire(store.complete().front().sequence);
            ASSERT_TRUE(r) << r.error().message();
        }
        EXPECT_EQ(retired, i > 2 ? 1u : 0u);
    }
    EXPECT_EQ(sequences(store), (std::vector<uint64_t>{3, 4}));
    EXPECT_FALSE(fs::exists(numbered(1)));
    EXPECT_FALSE(fs::exists(root_ / "llama/0000000002.info"));
    EXPECT_TRUE(fs::exists(root_ / "llama/0000000003.info"));
    EXPECT_EQ(sequences(open()), (std::vector<uint64_t>{3, 4}));
    EXPECT_EQ(trash_entries(), 4u);  // two dirs, two info files
    empty_trash(store);
    EXPECT_EQ(trash_entries(), 0u);
    EXPECT_EQ(slurp(numbered(4) / "checkpoint"), "served=4\n");
}

TEST_F(CheckpointStoreTest, InfoRoundTripsAndAbsentInfoIsEmpty) {
    auto store = open();
    auto fd = store.dup_dir();
    ASSERT_TRUE(fd);
    EXPECT_FALSE(CheckpointStore::read_info(fd->get(), 7));
    ASSERT_TRUE(CheckpointStore::write_info(fd->get(), 7, {123456, 1.5}));
    auto info = CheckpointStore::read_info(fd->get(), 7);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->bytes, 123456u);
    ASSERT_TRUE(info->seconds);
    EXPECT_DOUBLE_EQ(*info->seconds, 1.5);
    ASSERT_TRUE(CheckpointStore::write_info(fd->get(), 8, {9, {}}));
    EXPECT_FALSE(CheckpointStore::read_info(fd->get(), 8)->seconds);
}

TEST_F(CheckpointStoreTest, MeasureCountsTheCheckpointsBytes) {
    auto store = open();
    ASSERT_TRUE(store.fresh_staging(kWorkerUid, kWorkerGid));
    dir_.write("checkpoints/llama/staging/state", std::string(256 * 1024, 'x'));
    auto published = publish(store);
    ASSERT_TRUE(published);
    auto fd = store.dup_dir();
    ASSERT_TRUE(fd);
    auto bytes = CheckpointStore::measure(fd->get(), published->sequence);
    ASSERT_TRUE(bytes) << bytes.error().message();
    EXPECT_GE(bytes->bytes, 256u * 1024);
    EXPECT_TRUE(bytes->exact());
}

TEST_F(CheckpointStoreTest, EntriesThatAreNotCompleteCheckpointsAreIgnored) {
    fs::create_directories(root_ / "llama");
    dir_.write("checkpoints/llama/0000000009", "a file, not a checkpoint");
    dir_.mkdir("checkpoints/llama/12");          // not ten digits
    dir_.mkdir("checkpoints/llama/0000000000");  // zero is no sequence
    dir_.mkdir("checkpoints/llama/00000000x1");
    fs::create_directory_symlink(dir_.path(), root_ / "llama/0000000020");
    dir_.mkdir("checkpoints/llama/0000000005");
    auto store = open();
    EXPECT_EQ(sequences(store), (std::vector<uint64_t>{5}));
    // The next number skips the file in the way.
    ASSERT_TRUE(store.fresh_staging(kWorkerUid, kWorkerGid));
    worker_writes("1");
    auto published = publish(store);
    ASSERT_TRUE(published);
    EXPECT_EQ(published->sequence, 6u);
}

// A directory the daemon must never change.
struct Victim {
    TempDir dir;
    Victim() {
        dir.write("passwd", "root:x:0:0\n");
        dir.mkdir("sub");
        ::chmod(dir.path().c_str(), 0755);
    }
    void expect_untouched() const {
        auto st = lstat_of(dir.path());
        EXPECT_EQ(st.st_uid, 0u);
        EXPECT_EQ(st.st_mode & 07777, 0755u);
        EXPECT_EQ(lstat_of(dir.path() / "passwd").st_uid, 0u);
        EXPECT_EQ(slurp(dir.path() / "passwd"), "root:x:0:0\n");
        EXPECT_TRUE(fs::is_directory(dir.path() / "sub"));
    }
};

TEST_F(CheckpointStoreTest, SymlinksInsideACheckpointAreRemovedNeverFollowed) {
    Victim victim;
    auto store = open();
    ASSERT_TRUE(store.fresh_staging(kWorkerUid, kWorkerGid));
    worker_writes("1");
    fs::create_directory_symlink(victim.dir.path(), root_ / "llama/staging/etc");
    fs::create_symlink(victim.dir.path() / "passwd", root_ / "llama/staging/passwd");
    auto published = publish(store);
    ASSERT_TRUE(published);
    auto fd = store.dup_dir();
    ASSERT_TRUE(fd);
    auto bytes = CheckpointStore::measure(fd->get(), published->sequence);
    ASSERT_TRUE(bytes);
    ASSERT_TRUE(store.fresh_staging(kWorkerUid, kWorkerGid));
    // A second staging with a symlink is discarded by the next run.
    fs::create_directory_symlink(victim.dir.path(), root_ / "llama/staging/again");
    ASSERT_TRUE(store.fresh_staging(kWorkerUid, kWorkerGid));
    while (!store.complete().empty()) ASSERT_TRUE(store.retire(store.complete().front().sequence));
    empty_trash(store);
    EXPECT_EQ(trash_entries(), 0u);
    victim.expect_untouched();
}

TEST_F(CheckpointStoreTest, AnOldLayoutWhereTheWorkerOwnedItsDirIsTakenBack) {
    // An earlier version gave NAME to the worker, which planted links in it.
    Victim victim;
    fs::create_directories(root_ / "llama");
    ::chown((root_ / "llama").c_str(), kWorkerUid, kWorkerGid);
    ::chmod((root_ / "llama").c_str(), 0700);
    fs::create_directory_symlink(victim.dir.path(), root_ / "llama/staging");
    fs::create_directory_symlink(victim.dir.path(), root_ / "llama/0000000003");

    auto store = open();
    auto st = lstat_of(root_ / "llama");
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(st.st_mode & 07777, 0711u);
    EXPECT_FALSE(store.newest());  // a link is never a checkpoint
    auto staging = store.fresh_staging(kWorkerUid, kWorkerGid);
    ASSERT_TRUE(staging) << staging.error().message();
    EXPECT_TRUE(S_ISDIR(lstat_of(*staging).st_mode));
    EXPECT_TRUE(fs::is_empty(*staging));
    empty_trash(store);
    victim.expect_untouched();
}

TEST_F(CheckpointStoreTest, AWorkerDirThatIsASymlinkIsRefused) {
    Victim victim;
    fs::create_directories(root_);
    fs::create_directory_symlink(victim.dir.path(), root_ / "llama");
    auto store = CheckpointStore::open(root_, "llama");
    ASSERT_FALSE(store);
    EXPECT_NE(store.error().message().find("not a directory"), std::string::npos)
        << store.error().message();
    victim.expect_untouched();
}

TEST_F(CheckpointStoreTest, AStagingDirSwappedForASymlinkIsNotPublished) {
    Victim victim;
    auto store = open();
    ASSERT_TRUE(store.fresh_staging(kWorkerUid, kWorkerGid));
    fs::remove(root_ / "llama/staging");
    fs::create_directory_symlink(victim.dir.path(), root_ / "llama/staging");
    auto published = publish(store);
    ASSERT_FALSE(published);
    EXPECT_NE(published.error().message().find("is not a directory"), std::string::npos);
    EXPECT_FALSE(store.newest());
    victim.expect_untouched();
}

// Issue 26 #9: `infervisorctl checkpoints` names a checkpoint by an id that
// comes from a caller. It is looked up among the listed checkpoints only:
// anything else, path-like or not, finds nothing.
TEST_F(CheckpointStoreTest, FindTakesOnlyTheIdOfAListedCheckpoint) {
    auto store = open();
    ASSERT_TRUE(store.fresh_staging(kWorkerUid, kWorkerGid));
    worker_writes("1");
    ASSERT_TRUE(publish(store));
    // A directory that looks like a checkpoint but is not listed (planted
    // after the listing) is not found either.
    fs::create_directory(root_ / "llama/0000000009");
    auto found = store.find("0000000001");
    ASSERT_TRUE(found);
    EXPECT_EQ(found->sequence, 1u);
    EXPECT_EQ(found->path, numbered(1));
    for (std::string id : {"", "1", "0000000009", "../llama/0000000001", "0000000001/",
                           "./0000000001", "staging", "trash", "0000000001.info", ".."})
        EXPECT_FALSE(store.find(id)) << id;
    EXPECT_FALSE(store.find(std::string(5000, '0')));
    EXPECT_FALSE(store.find(std::string("0000000001\0", 11)));
}

TEST_F(CheckpointStoreTest, OpenExistingCreatesNothingAndListsWhatIsThere) {
    auto none = CheckpointStore::open_existing(root_, "llama");
    ASSERT_TRUE(none) << none.error().message();
    EXPECT_FALSE(none->has_value());
    EXPECT_FALSE(fs::exists(root_));
    {
        auto store = open();
        ASSERT_TRUE(store.fresh_staging(kWorkerUid, kWorkerGid));
        worker_writes("1");
        ASSERT_TRUE(publish(store));
    }
    auto some = CheckpointStore::open_existing(root_, "llama");
    ASSERT_TRUE(some) << some.error().message();
    ASSERT_TRUE(some->has_value());
    EXPECT_EQ(sequences(**some), (std::vector<uint64_t>{1}));
    EXPECT_FALSE(CheckpointStore::open_existing(root_, "../x"));
}

TEST_F(CheckpointStoreTest, PublishedAtIsTheInfosTimeElseTheDirectorysCtime) {
    auto store = open();
    ASSERT_TRUE(store.fresh_staging(kWorkerUid, kWorkerGid));
    worker_writes("1");
    auto published = publish(store);
    ASSERT_TRUE(published);
    auto fd = store.dup_dir();
    ASSERT_TRUE(fd);
    struct stat dir = lstat_of(numbered(1));
    EXPECT_EQ(CheckpointStore::published_at(fd->get(), 1), int64_t(dir.st_ctim.tv_sec));
    ASSERT_TRUE(CheckpointStore::write_info(fd->get(), 1, {5, {}}));
    struct timespec times[2] = {{0, UTIME_OMIT}, {1000, 0}};
    ASSERT_EQ(::utimensat(fd->get(), "0000000001.info", times, AT_SYMLINK_NOFOLLOW), 0);
    EXPECT_EQ(CheckpointStore::published_at(fd->get(), 1), int64_t{1000});
    EXPECT_FALSE(CheckpointStore::published_at(fd->get(), 2));
}

// Issue 26 #9: a finished checkpoint is judged before it is published. Taken
// out of staging it is no complete checkpoint (not listed, not the newest,
// not offered after a restart) until publish(); refused, it goes to the trash
// and the previous newest stays.
TEST_F(CheckpointStoreTest, ATakenCheckpointIsNotOfferedUntilItIsPublished) {
    auto store = open();
    ASSERT_TRUE(store.fresh_staging(kWorkerUid, kWorkerGid));
    worker_writes("1");
    auto first = publish(store);
    ASSERT_TRUE(first);

    ASSERT_TRUE(store.fresh_staging(kWorkerUid, kWorkerGid));
    worker_writes("2");
    ASSERT_TRUE(store.take_staging());
    EXPECT_TRUE(fs::is_directory(root_ / "llama/incoming"));
    EXPECT_FALSE(fs::exists(numbered(2)));
    EXPECT_EQ(store.newest(), *first);
    EXPECT_EQ(open().newest(), *first);  // a daemon that died meanwhile
    // One at a time: the next is refused while this one is judged.
    ASSERT_TRUE(store.fresh_staging(kWorkerUid, kWorkerGid));
    worker_writes("3");
    auto busy = store.take_staging();
    ASSERT_FALSE(busy);
    EXPECT_NE(busy.error().message().find("still being judged"), std::string::npos);

    // Judged out: to the trash; the first stays the newest.
    ASSERT_TRUE(store.discard_incoming());
    EXPECT_FALSE(fs::exists(root_ / "llama/incoming"));
    EXPECT_EQ(store.newest(), *first);
    EXPECT_EQ(trash_entries(), 1u);
    EXPECT_TRUE(store.discard_incoming());  // none: no error

    // Judged in: published under the next number.
    ASSERT_TRUE(store.take_staging());
    auto second = store.publish();
    ASSERT_TRUE(second);
    EXPECT_EQ(second->sequence, 2u);
    EXPECT_EQ(slurp(numbered(2) / "checkpoint"), "served=3\n");
}

TEST_F(CheckpointStoreTest, NamesThatAreNotPlainAreRefused) {
    for (const char* name : {"", ".", "..", "a/b"})
        EXPECT_FALSE(CheckpointStore::open(root_, name)) << name;
}

}  // namespace
}  // namespace infervisor
