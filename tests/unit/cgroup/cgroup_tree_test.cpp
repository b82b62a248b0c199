#include "cgroup/cgroup_tree.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cgroup/cgroup_limits.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A cgroupfs stand-in: the interface files the kernel would show, as plain files.
void make_cgroup(const testing::TempDir& fs, const std::string& rel,
                 const std::string& controllers) {
    fs.write(rel + "/cgroup.controllers", controllers + "\n");
    fs.write(rel + "/cgroup.subtree_control", "");
    fs.write(rel + "/cgroup.procs", "");
    fs.write(rel + "/cgroup.events", "populated 0\nfrozen 0\n");
}

TEST(CgroupTree, RootComesFromOwnCgroupOrItsSupervisorLeaf) {
    EXPECT_EQ(CgroupTree::root_from_own_cgroup("/cg/system.slice/x.service"),
              "/cg/system.slice/x.service");
    EXPECT_EQ(CgroupTree::root_from_own_cgroup("/cg/system.slice/x.service/supervisor"),
              "/cg/system.slice/x.service");
}

TEST(CgroupTree, RefusesWithoutMemoryControllerAndNamesTheRemedy) {
    testing::TempDir fs;
    make_cgroup(fs, "svc", "hugetlb");
    CgroupTree tree(fs.path() / "svc");
    auto r = tree.setup(1234);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().what, HasSubstr("'memory pids cpu' not available"));
    EXPECT_THAT(r.error().what, HasSubstr("(available: 'hugetlb')"));
    EXPECT_THAT(r.error().what, HasSubstr("systemd.unified_cgroup_hierarchy=1"));
    EXPECT_FALSE(std::filesystem::exists(fs.path() / "svc/supervisor"));  // nothing touched
}

TEST(CgroupTree, SetupMovesSelfAndEnablesControllers) {
    testing::TempDir fs;
    make_cgroup(fs, "svc", "cpuset cpu io memory pids");
    make_cgroup(fs, "svc/supervisor", "");
    make_cgroup(fs, "svc/workers", "cpu memory pids");
    CgroupTree tree(fs.path() / "svc");
    ASSERT_TRUE(tree.setup(4242).ok());
    EXPECT_FALSE(tree.outlives_daemon());
    EXPECT_EQ(testing::slurp(fs.path() / "svc/supervisor/cgroup.procs"), "4242");
    EXPECT_EQ(testing::slurp(fs.path() / "svc/cgroup.subtree_control"), "+memory +pids +cpu");
    EXPECT_EQ(testing::slurp(fs.path() / "svc/workers/cgroup.subtree_control"),
              "+memory +pids +cpu");
}

TEST(CgroupTree, EnablesDmemWhereTheKernelOffersIt) {
    testing::TempDir fs;
    make_cgroup(fs, "svc", "cpu io memory pids dmem");
    make_cgroup(fs, "svc/supervisor", "");
    make_cgroup(fs, "svc/workers", "cpu memory pids dmem");
    CgroupTree tree(fs.path() / "svc");
    ASSERT_TRUE(tree.setup(4242).ok());
    EXPECT_EQ(testing::slurp(fs.path() / "svc/cgroup.subtree_control"), "+memory +pids +cpu +dmem");
    EXPECT_EQ(testing::slurp(fs.path() / "svc/workers/cgroup.subtree_control"),
              "+memory +pids +cpu +dmem");
}

TEST(CgroupTree, AnAnchorHomeMovesTheAnchorsProcessIntoItsLeafAndLeavesTheDaemonWhereItIs) {
    testing::TempDir fs;
    make_cgroup(fs, "anchor-unit", "cpuset cpu io memory pids");
    fs.write("anchor-unit/cgroup.procs", "777\n");
    make_cgroup(fs, "anchor-unit/anchor", "");  // what the kernel's mkdir would make
    make_cgroup(fs, "anchor-unit/workers", "cpu memory pids");
    CgroupTree tree(fs.path() / "anchor-unit", CgroupTree::Home::anchor);
    ASSERT_TRUE(tree.setup(4242).ok());
    EXPECT_TRUE(tree.outlives_daemon());
    EXPECT_EQ(testing::slurp(fs.path() / "anchor-unit/anchor/cgroup.procs"), "777");
    EXPECT_FALSE(std::filesystem::exists(fs.path() / "anchor-unit/supervisor"));
    EXPECT_EQ(testing::slurp(fs.path() / "anchor-unit/cgroup.subtree_control"),
              "+memory +pids +cpu");
}

TEST(CgroupTree, FindsLeftoverWorkers) {
    testing::TempDir fs;
    make_cgroup(fs, "svc/workers/llama", "");
    make_cgroup(fs, "svc/workers/whisper", "");
    CgroupTree tree(fs.path() / "svc");
    auto names = tree.existing_workers();
    std::sort(names.begin(), names.end());
    EXPECT_THAT(names, ElementsAre("llama", "whisper"));
}

TEST(CgroupLimits, WritesEveryLimitAndOomGroup) {
    testing::TempDir fs;
    for (const char* f : {"memory.max", "memory.high", "memory.swap.max", "memory.oom.group",
                          "pids.max", "cpu.weight"})
        fs.write(std::string("w/") + f, "");
    CgroupLimits limits{1ull << 30, 900ull << 20, 0, 256, 200};
    auto warnings = apply_limits(CgroupDir(fs.path() / "w"), limits);
    ASSERT_TRUE(warnings.ok()) << warnings.error().message();
    EXPECT_TRUE(warnings->empty());
    EXPECT_EQ(testing::slurp(fs.path() / "w/memory.max"), "1073741824");
    EXPECT_EQ(testing::slurp(fs.path() / "w/memory.high"), "943718400");
    EXPECT_EQ(testing::slurp(fs.path() / "w/memory.swap.max"), "0");
    EXPECT_EQ(testing::slurp(fs.path() / "w/memory.oom.group"), "1");
    EXPECT_EQ(testing::slurp(fs.path() / "w/pids.max"), "256");
    EXPECT_EQ(testing::slurp(fs.path() / "w/cpu.weight"), "200");
}

TEST(CgroupLimits, MissingSwapFileIsAWarningMissingMemoryMaxAnError) {
    testing::TempDir fs;
    for (const char* f : {"memory.max", "memory.high", "memory.oom.group", "pids.max"})
        fs.write(std::string("w/") + f, "");
    auto warnings =
        apply_limits(CgroupDir(fs.path() / "w"), CgroupLimits{1ull << 30, {}, 0, {}, {}});
    ASSERT_TRUE(warnings.ok());
    EXPECT_THAT(*warnings, ElementsAre(HasSubstr("memory.swap.max is not available")));
    EXPECT_EQ(testing::slurp(fs.path() / "w/memory.high"), "max");

    testing::TempDir empty;
    empty.mkdir("w");
    auto r = apply_limits(CgroupDir(empty.path() / "w"), CgroupLimits{1ull << 30, {}, 0, {}, {}});
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().what, HasSubstr("has no memory.max"));
}

TEST(CgroupDir, ReadsEventsAndProcs) {
    testing::TempDir fs;
    fs.write("w/cgroup.events", "populated 1\nfrozen 0\n");
    fs.write("w/cgroup.procs", "12\n34\n");
    fs.write("w/memory.events", "low 0\nhigh 3\nmax 1\noom 1\noom_kill 1\n");
    CgroupDir dir(fs.path() / "w");
    EXPECT_TRUE(*dir.populated());
    EXPECT_THAT(*dir.procs(), ElementsAre(12, 34));
    EXPECT_EQ(dir.memory_event("oom_kill"), 1);
    EXPECT_EQ(dir.memory_event("oom_group_kill"), 0);
}

// Issue 26, defect 10 (issue 27, defect 5): procs() fed kill(2) whatever the
// file said; 0 is the caller's process group and -1 every process it may
// signal. A fake (or broken) cgroupfs listing them must give neither.
// (Deliberately no kill() here: without the guard it would SIGKILL every
// process on the host.)
TEST(CgroupDir, ProcsNeverListsAPidThatIsNotPositive) {
    testing::TempDir fs;
    fs.write("w/cgroup.procs", "0\n-1\n12\n 7\nx\n-99\n34\n");
    CgroupDir dir(fs.path() / "w");
    EXPECT_THAT(*dir.procs(), ElementsAre(12, 34));
    fs.write("w/cgroup.procs", "0\n-1\n");
    EXPECT_TRUE(dir.procs()->empty());
}

}  // namespace
}  // namespace infervisor
