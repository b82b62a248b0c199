// Against the real systemd-tmpfiles: an aging rule over a directory that holds
// protected and unprotected worker directories, everything made old, then
// `systemd-tmpfiles --clean`. Protected directories and their files survive;
// unprotected siblings are cleaned; once the protection is dropped the same
// run cleans the formerly protected ones too (so the survival was the
// protection's doing, not an artefact of the set-up). Each mechanism is tested
// alone, then both together as WorkDirManager applies them.
#include <gtest/gtest.h>

#include "support/temp_dir.h"
#include "workdir/dir_lock.h"
#include "workdir/tmp_file_protection.h"
#include "workdir/tmpfiles_exclusions.h"
#include "workdir/workdir_manager.h"
#include "workdir_test_support.h"

namespace infervisor {
namespace {

namespace fs = std::filesystem;
using testing::exists_nofollow;
using testing::TempDir;

constexpr long kTwoHours = 2 * 3600;

struct TmpfilesClean : ::testing::Test {
    TempDir root;
    fs::path aged = root.path() / "aged";
    fs::path age_conf = root.path() / "age.conf";
    fs::path exclusions_dir = root.path() / "tmpfiles.d";
    fs::path exclusions = exclusions_dir / kTmpfilesExclusionFile;
    fs::path open_files = exclusions_dir / kOpenFilesExclusionFile;
    std::optional<fs::path> tmpfiles = testing::find_systemd_tmpfiles();

    void SetUp() override {
        if (!tmpfiles) GTEST_SKIP() << "systemd-tmpfiles is not installed";
        if (!testing::running_as_root()) GTEST_SKIP() << "needs root";
        // Files and directories whose access and modification times are older
        // than an hour are removed. Birth and change times cannot be set back,
        // so the rule ages by atime/mtime only ("amAM:", systemd >= 250).
        root.write("age.conf", "d " + aged.string() + " - - - amAM:1h -\n");
        root.mkdir("aged");
    }

    // Makes everything under `aged` two hours old and runs the cleaner with
    // the aging rule plus, when it exists, the exclusion file.
    void clean() {
        testing::make_old(aged, kTwoHours);
        std::vector<std::string> argv = {tmpfiles->string(), "--clean", age_conf.string()};
        if (fs::exists(exclusions)) argv.push_back(exclusions.string());
        if (fs::exists(open_files)) argv.push_back(open_files.string());
        auto run = testing::run_program(argv);
        ASSERT_EQ(run.exit_status, 0) << run.output;
    }

    void fill(const std::string& rel) {
        root.write("aged/" + rel + "/data.bin", "weights");
        root.write("aged/" + rel + "/sub/partial", "task state");
    }
    bool intact(const std::string& rel) const {
        return exists_nofollow(aged / rel / "data.bin") &&
               exists_nofollow(aged / rel / "sub" / "partial");
    }
    bool gone(const std::string& rel) const { return !exists_nofollow(aged / rel); }
};

TEST_F(TmpfilesClean, SetUpIsAgedAtAll) {
    fill("plain");
    clean();
    EXPECT_TRUE(gone("plain"));
}

TEST_F(TmpfilesClean, SharedFlockAloneProtectsADirectory) {
    fill("locked");
    fill("unlocked");
    auto lock = DirLock::acquire(testing::open_dir(aged / "locked").get(), aged / "locked");
    ASSERT_TRUE(lock.ok()) << lock.error().message();

    clean();
    EXPECT_TRUE(intact("locked"));
    EXPECT_TRUE(gone("unlocked"));

    lock->release();
    clean();
    EXPECT_TRUE(gone("locked"));
}

TEST_F(TmpfilesClean, ExclusionLineAloneProtectsADirectory) {
    fill("excluded");
    fill("included");
    fill("still-excluded");
    ASSERT_TRUE(
        write_tmpfiles_exclusions(exclusions_dir, {aged / "excluded", aged / "still-excluded"})
            .ok());
    clean();
    EXPECT_TRUE(intact("excluded"));
    EXPECT_TRUE(intact("still-excluded"));
    EXPECT_TRUE(gone("included"));

    ASSERT_TRUE(write_tmpfiles_exclusions(exclusions_dir, {aged / "still-excluded"}).ok());
    clean();
    EXPECT_TRUE(gone("excluded"));
    EXPECT_TRUE(intact("still-excluded"));
}

// As systemd-tmpfiles-clean.service runs it: no files on the command line,
// configuration found in the tmpfiles.d directories (here below --root). The
// generated file in /run/tmpfiles.d must be read next to a packaged
// /usr/lib/tmpfiles.d/infervisor.conf, neither masking the other.
TEST_F(TmpfilesClean, ExclusionFileIsFoundInRunTmpfilesDNextToThePackagedFile) {
    root.write("usr/lib/tmpfiles.d/infervisor.conf", "d /aged - - - amAM:1h -\n");
    fill("excluded");
    fill("included");
    // Paths on the lines are relative to --root, as tmpfiles reads them there.
    ASSERT_TRUE(write_tmpfiles_exclusions(root.path() / "run/tmpfiles.d", {"/aged/excluded"}).ok());
    testing::make_old(aged, kTwoHours);
    auto run =
        testing::run_program({tmpfiles->string(), "--root=" + root.path().string(), "--clean"});
    ASSERT_EQ(run.exit_status, 0) << run.output;
    EXPECT_TRUE(intact("excluded"));
    EXPECT_TRUE(gone("included"));
}

TEST_F(TmpfilesClean, WorkDirManagerProtectsWorkDirsAndExtraDirsUntilReleased) {
    Paths paths{.state_dir = aged / "state", .tmpfiles_dir = exclusions_dir};
    WorkDirManager manager(paths);
    WorkDirSpec llama{
        .worker = "llama",
        .extra_dirs = {{aged / "cache-llama", 0700, true}, {aged / "scratch-llama", 0700, false}}};
    ASSERT_TRUE(manager.prepare(llama, 65534, 65534).ok());
    ASSERT_TRUE(manager.prepare(WorkDirSpec{.worker = "whisper"}, 65534, 65534).ok());
    fill("state/workers/llama");
    fill("state/workers/llama/tmp");
    fill("state/workers/whisper");
    fill("state/workers/stray");
    fill("cache-llama");
    fill("scratch-llama");
    fill("cache-other");

    clean();
    EXPECT_TRUE(intact("state/workers/llama"));
    EXPECT_TRUE(intact("state/workers/llama/tmp"));
    EXPECT_TRUE(intact("state/workers/whisper"));
    EXPECT_TRUE(intact("cache-llama"));
    EXPECT_TRUE(gone("state/workers/stray"));
    EXPECT_TRUE(gone("scratch-llama"));  // protect: false
    EXPECT_TRUE(gone("cache-other"));

    ASSERT_TRUE(manager.release("llama").ok());
    clean();
    EXPECT_TRUE(gone("state/workers/llama"));
    EXPECT_TRUE(gone("cache-llama"));
    EXPECT_TRUE(intact("state/workers/whisper"));
}

// What a worker sharing the host's /tmp holds open: single files, among them
// names tmpfiles cannot take verbatim (a space, a quote, a newline, '%', a
// glob character), are kept while its siblings age away; released, they go.
TEST_F(TmpfilesClean, OpenFileLinesProtectExactlyThoseFilesUntilReleased) {
    const std::vector<std::string> odd = {"model.bin", "with space", "quote\"d",    "new\nline",
                                          "100%",      "star*",      "back\\slash", "br[acket"};
    std::vector<std::string> held;
    for (const auto& name : odd) {
        root.write("aged/cache/" + name, "weights");
        held.push_back((aged / "cache" / name).string());
    }
    root.write("aged/cache/model.bin.old", "stale");
    root.write("aged/cache/with_space", "sibling");
    root.write("aged/other/file", "stale");
    TmpFileProtection protection(exclusions_dir);
    auto added = protection.add("llama", held);
    ASSERT_EQ(added.paths.size(), odd.size());
    ASSERT_TRUE(protection.write().ok());

    clean();
    for (const auto& name : odd) EXPECT_TRUE(exists_nofollow(aged / "cache" / name)) << name;
    EXPECT_TRUE(gone("cache/model.bin.old"));
    EXPECT_TRUE(gone("other"));
    // The '?' of "with?space" also covers a sibling differing only there.
    EXPECT_TRUE(exists_nofollow(aged / "cache/with_space"));

    ASSERT_TRUE(protection.release("llama"));
    ASSERT_TRUE(protection.write().ok());
    EXPECT_FALSE(fs::exists(open_files));
    clean();
    EXPECT_TRUE(gone("cache"));
}

}  // namespace
}  // namespace infervisor
