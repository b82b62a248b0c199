// The criu command lines infervisord builds, and the record it keeps next to
// a dump. What criu itself does with them is exercised in the VM
// (tests/vm/scenarios/145-criu-checkpoint.sh): this host's kernel is newer than
// criu 3.17 understands (its vDSO check fails), so criu cannot run here.
#include "checkpoint/criu_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/sysmacros.h>

namespace infervisor {
namespace {

using ::testing::ElementsAre;

std::string joined(const std::vector<std::string>& argv) {
    std::string out;
    for (const auto& a : argv) out += (out.empty() ? "" : " ") + a;
    return out;
}

TEST(CriuCommand, DumpNamesTheJournalStreamExternalOnce) {
    CriuDump dump{"/usr/sbin/criu",
                  236,
                  "/var/lib/infervisor/checkpoints/w/staging",
                  {"/dev/null", "socket:[1732]", "socket:[1732]"},
                  false};
    EXPECT_EQ(joined(criu_dump_argv(dump)),
              "/usr/sbin/criu dump --tree 236 --images-dir "
              "/var/lib/infervisor/checkpoints/w/staging --log-file dump.log "
              "--manage-cgroups=ignore --external unix[1732] --leave-stopped");
}

TEST(CriuCommand, DumpThatKeepsTheWorkerRunning) {
    CriuDump dump{"/usr/sbin/criu", 7, "/d", {"/dev/null", "pipe:[5]", "socket:[6]"}, true};
    auto argv = criu_dump_argv(dump);
    EXPECT_EQ(argv.back(), "--leave-running");
    // A pipe needs nothing on dump; only the socket is external.
    EXPECT_EQ(std::count(argv.begin(), argv.end(), "--external"), 1);
    EXPECT_NE(joined(argv).find("--external unix[6]"), std::string::npos);
    EXPECT_EQ(joined(argv).find("--shell-job"), std::string::npos);
}

TEST(CriuCommand, RestoreHandsTheNewStreamInAsFdZeroForEachDumpedOne) {
    CriuRestore restore{"/usr/sbin/criu",
                        "/c/0000000003",
                        "/c/0000000003/restore.pid",
                        {"/dev/null", "socket:[1732]", "socket:[1732]"}};
    EXPECT_EQ(
        joined(criu_restore_argv(restore)),
        "/usr/sbin/criu restore --images-dir /c/0000000003 --log-file restore.log "
        "--manage-cgroups=ignore --restore-detached --restore-sibling --leave-stopped --pidfile "
        "/c/0000000003/restore.pid --inherit-fd fd[0]:socket:[1732]");
    restore.stdio = {"/dev/null", "pipe:[9]", "socket:[10]"};
    auto argv = criu_restore_argv(restore);
    EXPECT_THAT(std::vector<std::string>(argv.end() - 4, argv.end()),
                ElementsAre("--inherit-fd", "fd[0]:pipe:[9]", "--inherit-fd", "fd[0]:socket:[10]"));
}

TEST(CriuCommand, RestoreWithPlainFilesInheritsNothing) {
    CriuRestore restore{
        "/usr/sbin/criu", "/c/1", "/c/1/restore.pid", {"/dev/null", "/var/log/w.log", ""}};
    EXPECT_EQ(joined(criu_restore_argv(restore)).find("--inherit-fd"), std::string::npos);
}

TEST(CriuCommand, CheckLogsWhereItIsTold) {
    EXPECT_EQ(joined(criu_check_argv("/usr/sbin/criu", "/c/w/staging/check.log")),
              "/usr/sbin/criu check --log-file /c/w/staging/check.log");
}

TEST(CriuCommand, AnonInodes) {
    EXPECT_EQ(anon_inode_of("socket:[1732]", "socket"), 1732u);
    EXPECT_EQ(anon_inode_of("pipe:[5]", "pipe"), 5u);
    EXPECT_FALSE(anon_inode_of("pipe:[5]", "socket"));
    EXPECT_FALSE(anon_inode_of("socket:[]", "socket"));
    EXPECT_FALSE(anon_inode_of("socket:[12a]", "socket"));
    EXPECT_FALSE(anon_inode_of("socket:[1] ", "socket"));
    EXPECT_FALSE(anon_inode_of("/tmp/socket:[1]", "socket"));
    EXPECT_FALSE(anon_inode_of("socket:[123456789012345678901]", "socket"));
}

TEST(CriuCommand, RecordRoundTrips) {
    CriuRecord record{{"/dev/null", "socket:[1732]", "socket:[1732]"}};
    std::string text = format_criu_record(record);
    EXPECT_EQ(text, "stdio0=/dev/null\nstdio1=socket:[1732]\nstdio2=socket:[1732]\n");
    EXPECT_EQ(parse_criu_record(text), record);
}

// Whom the image runs as (issue 26, defect 2): recorded, and read back
// whole or not at all.
TEST(CriuCommand, RecordKeepsTheIdentity) {
    CriuRecord record{{"/dev/null"}, ProcessIdentity{61234, 61234, {44, 109}}};
    std::string text = format_criu_record(record);
    EXPECT_EQ(text, "stdio0=/dev/null\nuid=61234\ngid=61234\ngroups=44,109\n");
    EXPECT_EQ(parse_criu_record(text), record);
    CriuRecord none{{"/dev/null"}, ProcessIdentity{61234, 61234, {}}};
    EXPECT_EQ(parse_criu_record(format_criu_record(none)), none);
    // An older daemon's record, or a partial or garbled one: no identity.
    for (const char* older : {"stdio0=/dev/null\n", "stdio0=/dev/null\nuid=1\ngid=1\n",
                              "stdio0=/dev/null\nuid=1,2\ngid=1\ngroups=\n",
                              "stdio0=/dev/null\nuid=x\ngid=1\ngroups=\n",
                              "stdio0=/dev/null\nuid=1\ngid=1\ngroups=3,-4\n",
                              "stdio0=/dev/null\nuid=99999999999\ngid=1\ngroups=\n"}) {
        auto parsed = parse_criu_record(older);
        ASSERT_TRUE(parsed) << older;
        EXPECT_FALSE(parsed->identity) << older;
    }
}

// The files the worker held (issue 26, defect 1): recorded with their
// count, and read back only whole; a record without them verifies nothing.
TEST(CriuCommand, RecordKeepsTheHeldFilesWholeOrNotAtAll) {
    CriuRecord record{
        {"/dev/null"},
        ProcessIdentity{61234, 61234, {}},
        std::set<HeldFile>{{makedev(8, 1), 1234, 1733312345, 5}, {makedev(0, 27), 9, 0, 0}}};
    std::string text = format_criu_record(record);
    EXPECT_EQ(text,
              "stdio0=/dev/null\nuid=61234\ngid=61234\ngroups=\nheld-files=2\n"
              "held=0:27:9:0.000000000\nheld=8:1:1234:1733312345.000000005\nghost-dirs=0\n");
    EXPECT_EQ(parse_criu_record(text), record);
    record.ghost_dirs = {{"/var/lib/infervisor/workers/w/a dir", {makedev(8, 1), 77, 1, 2}}};
    text = format_criu_record(record);
    EXPECT_NE(
        text.find("ghost-dirs=1\nghost-dir=8:1:77:1.000000002 /var/lib/infervisor/workers/w/a "
                  "dir\n"),
        std::string::npos)
        << text;
    EXPECT_EQ(parse_criu_record(text), record);
    CriuRecord nothing_held{{"/dev/null"}, std::nullopt, std::set<HeldFile>{}};
    EXPECT_EQ(parse_criu_record(format_criu_record(nothing_held)), nothing_held);
    std::string base = "stdio0=/dev/null\n";
    for (std::string torn :
         {base,                                             // an older daemon's
          base + "held=8:1:1:0.000000000\n",                // no count
          base + "held-files=2\nheld=8:1:1:0.000000000\n",  // one missing
          base + "held-files=1\nheld=8:1:1:0.000000000\nheld=8:1:1:0.000000000\n",
          base + "held-files=1\nheld=8:1:x:0.000000000\n",
          base + "held-files=1\nheld-files=1\nheld=8:1:1:0.000000000\n", base + "held-files=-1\n",
          base + "held-files=0\n",  // no ghost-dirs=
          base + "held-files=0\nghost-dirs=1\n",
          base + "held-files=0\nghost-dirs=1\nghost-dir=8:1:1:0.000000000 rel\n",
          base + "held-files=0\nghost-dirs=1\nghost-dir=8:1:1:0.000000000\n"}) {
        auto parsed = parse_criu_record(torn);
        ASSERT_TRUE(parsed) << torn;
        EXPECT_FALSE(parsed->held) << torn;
        EXPECT_TRUE(parsed->ghost_dirs.empty()) << torn;
    }
}

TEST(CriuCommand, ProcessIdentityIsReadFromProcStatus) {
    std::string status =
        "Name:\tworker\nUmask:\t0022\nState:\tS (sleeping)\nUid:\t61234\t61234\t61234\t61234\n"
        "Gid:\t61235\t61235\t61235\t61235\nFDSize:\t64\nGroups:\t109 44 \nNStgid:\t9\n";
    auto id = parse_process_identity(status);
    ASSERT_TRUE(id);
    EXPECT_EQ(*id, (ProcessIdentity{61234, 61235, {44, 109}}));
    EXPECT_EQ(id->describe(), "uid 61234 gid 61235 groups 44,109");
    auto no_groups = parse_process_identity("Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\n");
    ASSERT_TRUE(no_groups);
    EXPECT_EQ(no_groups->describe(), "uid 0 gid 0 groups none");
    EXPECT_FALSE(parse_process_identity("Uid:\t1\t1\t1\t1\nGroups:\t\n"));  // no Gid:
    EXPECT_FALSE(parse_process_identity("Uid:\tx\nGid:\t1\nGroups:\t\n"));
}

TEST(CriuCommand, RecordDropsNewlinesAndIgnoresJunk) {
    CriuRecord record{{"/dev/null", "/tmp/a\nstdio2=socket:[1]", "pipe:[3]"}};
    auto parsed = parse_criu_record(format_criu_record(record));
    ASSERT_TRUE(parsed);
    ASSERT_EQ(parsed->stdio.size(), 3u);
    EXPECT_EQ(parsed->stdio[1], "");
    EXPECT_EQ(parsed->stdio[2], "pipe:[3]");
    EXPECT_FALSE(parse_criu_record("junk\nstdio9=x\nstdioX=y\n"));
    EXPECT_FALSE(parse_criu_record(""));
}

TEST(CriuCommand, LogErrorsAreTheErrorLines) {
    std::string log =
        "(00.1) Dumping\n"
        "(00.5) Error (criu/sk-unix.c:864): unix: External socket is used.\n"
        "(00.6) Error (criu/cr-dump.c:2053): Dumping FAILED.\n";
    EXPECT_EQ(criu_log_errors(log),
              "(00.5) Error (criu/sk-unix.c:864): unix: External socket is used.; "
              "(00.6) Error (criu/cr-dump.c:2053): Dumping FAILED.");
    EXPECT_EQ(criu_log_errors("a\nb\nError 1\nError 2\nError 3\nError 4\n", 2), "Error 3; Error 4");
    EXPECT_EQ(criu_log_errors("starting\nkilled here\n\n"), "killed here");
    EXPECT_EQ(criu_log_errors(""), "");
}

}  // namespace
}  // namespace infervisor
