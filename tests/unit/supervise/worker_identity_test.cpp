// Issue 10, defects 2 and 3: each worker runs under a uid of its own
// (user: dynamic), its dirs are its own, and its secrets reach it as files
// only it can read (credentials), on real processes.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/file_io.h"
#include "supervise/worker_credentials.h"
#include "supervise/worker_launch.h"
#include "supervisor_fixture.h"

namespace infervisor::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using K = EventKind;
namespace fs = std::filesystem;

class WorkerIdentityTest : public SupervisorFixture {
  protected:
    void SetUp() override {
        SupervisorFixture::SetUp();
        if (IsSkipped()) return;
        // Workers that are not root must reach their dirs below the test's dir.
        ASSERT_EQ(::chmod(dir_->path().c_str(), 0711), 0);
        secret_ = dir_->write("secrets/token-" + std::to_string(::getpid()), "hf_secret\n");
        ASSERT_EQ(::chmod(secret_.parent_path().c_str(), 0700), 0);
    }

    // A shell worker that writes what it sees into its work dir, then waits.
    WorkerSpec reporter(const std::string& name) const {
        WorkerSpec spec = example(name, {});
        spec.user = kDynamicUser;
        spec.command = {"/bin/sh", "-c",
                        "id -u > \"$INFERVISOR_WORKDIR/uid.tmp\"; "
                        "cat \"$CREDENTIALS_DIRECTORY/token\" > \"$INFERVISOR_WORKDIR/seen\"; "
                        "echo \"$HOME $USER\" > \"$INFERVISOR_WORKDIR/env\"; "
                        "mv \"$INFERVISOR_WORKDIR/uid.tmp\" \"$INFERVISOR_WORKDIR/uid\"; "
                        "exec sleep 1000"};
        spec.credentials = {{"token", secret_}};
        return spec;
    }

    fs::path workdir(const std::string& name) const {
        return ctx_->paths.state_dir / "workers" / name;
    }
    void wait_for_report(const std::string& name) {
        run_until([&] { return fs::exists(workdir(name) / "uid"); });
    }
    std::string report(const std::string& name, const std::string& file) const {
        auto text = read_file(workdir(name) / file);
        return text ? std::string(trim(*text)) : "<" + text.error().message() + ">";
    }

    fs::path secret_;
};

// Runs `fn` in a child as uid `id` and gid `gid` (default: the same number;
// no supplementary groups): its exit status is what it returns.
int as_user(uid_t id, const std::function<int()>& fn, gid_t gid = static_cast<gid_t>(-1)) {
    if (gid == static_cast<gid_t>(-1)) gid = id;
    pid_t pid = ::fork();
    if (pid == 0) {
        if (::setgroups(0, nullptr) < 0 || ::setresgid(gid, gid, gid) < 0 ||
            ::setresuid(id, id, id) < 0)
            ::_exit(100);
        ::_exit(fn());
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 101;
}

TEST_F(WorkerIdentityTest, EachWorkerRunsUnderItsOwnUidAndReadsOnlyItsOwnCredentials) {
    supervisor_->apply(config({reporter("alpha"), reporter("beta")}));
    wait_for_report("alpha");
    wait_for_report("beta");

    uid_t alpha = static_cast<uid_t>(std::stoul(report("alpha", "uid")));
    uid_t beta = static_cast<uid_t>(std::stoul(report("beta", "uid")));
    EXPECT_NE(alpha, beta);
    EXPECT_GE(alpha, kDynamicUidFirst);
    EXPECT_LE(alpha, kDynamicUidLast);
    auto who = resolve_identity(reporter("alpha"), ctx_->paths);  // what others call
    ASSERT_TRUE(who.ok()) << who.error().message();
    EXPECT_EQ(who->uid, alpha);
    EXPECT_EQ(who->gid, alpha);

    EXPECT_EQ(report("alpha", "seen"), "hf_secret");
    EXPECT_EQ(report("alpha", "env"), workdir("alpha").string() + " infervisor-w-alpha");
    struct stat st;
    ASSERT_EQ(::stat(workdir("alpha").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, alpha);
    EXPECT_EQ(st.st_mode & 07777, 0700u);

    fs::path creds = credentials_dir(ctx_->paths, "alpha");
    ASSERT_EQ(::stat(creds.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(st.st_gid, 0u);
    EXPECT_EQ(st.st_mode & 07777, 0711u);
    ASSERT_EQ(::stat((creds / "token").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, alpha);
    EXPECT_EQ(st.st_gid, 0u);
    EXPECT_EQ(st.st_mode & 07777, 0400u);

    // The kernel keeps beta out of alpha's work dir and credentials, and
    // alpha may not change its own credentials.
    auto cannot_open = [](fs::path p, int flags) {
        return [p, flags] { return ::open(p.c_str(), flags) < 0 && errno == EACCES ? 0 : 1; };
    };
    EXPECT_EQ(as_user(beta, cannot_open(creds / "token", O_RDONLY)), 0);
    EXPECT_EQ(as_user(beta, cannot_open(workdir("alpha") / "seen", O_RDONLY)), 0);
    EXPECT_EQ(as_user(alpha, cannot_open(creds / "token", O_WRONLY)), 0);
    EXPECT_EQ(as_user(alpha, cannot_open(creds / "new", O_WRONLY | O_CREAT)), 0);

    // The secret is nowhere in the worker's environment.
    pid_t pid = supervisor_->find("alpha")->main_pid();
    auto environ = read_file("/proc/" + std::to_string(pid) + "/environ");
    ASSERT_TRUE(environ.ok());
    EXPECT_THAT(*environ, Not(HasSubstr("hf_secret")));
    EXPECT_THAT(*environ, HasSubstr("CREDENTIALS_DIRECTORY=" + creds.string()));

    // Gone with the run.
    bool stopped = false;
    supervisor_->find("alpha")->stop([&] { stopped = true; });
    run_until([&] { return stopped; });
    EXPECT_FALSE(fs::exists(creds));
}

// Issue 26, defect 5: `group:` replaces a dynamic worker's primary group,
// and its credentials were root:GROUP 0440, readable by every member of
// that group (render, video on a GPU host). Now they are the uid's alone.
TEST_F(WorkerIdentityTest, ADynamicWorkersCredentialsAreNotItsGroupsWhateverTheGroup) {
    auto spec = reporter("epsilon");
    spec.group = "nogroup";  // 65534 on Debian: a group others are in
    auto group = ::getgrnam("nogroup");
    if (!group) GTEST_SKIP() << "no group 'nogroup' on this host";
    supervisor_->apply(config({spec}));
    wait_for_report("epsilon");
    EXPECT_EQ(report("epsilon", "seen"), "hf_secret");  // the worker reads it
    uid_t worker = static_cast<uid_t>(std::stoul(report("epsilon", "uid")));
    fs::path token = credentials_dir(ctx_->paths, "epsilon") / "token";
    struct stat st;
    ASSERT_EQ(::stat(token.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, worker);
    EXPECT_NE(st.st_gid, group->gr_gid);
    EXPECT_EQ(st.st_mode & 07077, 0u);  // nothing for group or others
    // Another uid in the worker's group cannot read it.
    auto cannot_read = [token] {
        return ::open(token.c_str(), O_RDONLY) < 0 && errno == EACCES ? 0 : 1;
    };
    EXPECT_EQ(as_user(kDynamicUidLast, cannot_read, group->gr_gid), 0);
}

TEST_F(WorkerIdentityTest, AWorkerKeepsItsUidAcrossRestartsOfTheDaemon) {
    auto spec = reporter("gamma");
    auto first = resolve_identity(spec, ctx_->paths);
    ASSERT_TRUE(first.ok());
    supervisor_->apply(config({spec}));
    wait_for_report("gamma");
    EXPECT_EQ(report("gamma", "uid"), std::to_string(first->uid));
    auto again = resolve_identity(spec, ctx_->paths);  // a new daemon reads the same store
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->uid, first->uid);
    EXPECT_EQ(known_uid(spec, ctx_->paths), first->uid);
}

// A worker switching from a shared user to its own uid takes its work dir
// (a dir the daemon made) and what it wrote there along.
TEST_F(WorkerIdentityTest, SwitchingFromASharedUserToItsOwnUidHandsItsWorkDirOver) {
    auto shared = reporter("delta");
    shared.user = "nobody";
    shared.credentials.clear();
    shared.command = {
        "/bin/sh", "-c",
        "echo kept > \"$INFERVISOR_WORKDIR/notes\"; id -u > \"$INFERVISOR_WORKDIR/u\" "
        "&& mv \"$INFERVISOR_WORKDIR/u\" \"$INFERVISOR_WORKDIR/uid\"; exec sleep 1000"};
    supervisor_->apply(config({shared}));
    wait_for_report("delta");
    EXPECT_EQ(report("delta", "uid"), "65534");
    fs::remove(workdir("delta") / "uid");

    auto own = reporter("delta");
    own.credentials.clear();
    own.command = {"/bin/sh", "-c",
                   "echo appended >> \"$INFERVISOR_WORKDIR/notes\" && id -u > "
                   "\"$INFERVISOR_WORKDIR/u\" && mv \"$INFERVISOR_WORKDIR/u\" "
                   "\"$INFERVISOR_WORKDIR/uid\"; exec sleep 1000"};
    supervisor_->apply(config({own}));
    wait_for_report("delta");
    auto uid = report("delta", "uid");
    EXPECT_NE(uid, "65534");
    EXPECT_EQ(report("delta", "notes"), "kept\nappended");
    struct stat st;
    ASSERT_EQ(::stat((workdir("delta") / "notes").c_str(), &st), 0);
    EXPECT_EQ(std::to_string(st.st_uid), uid);
}

// Issue 30: an AMD or Intel card is used through its render node (and
// ROCm's /dev/kfd), whose group a dynamic uid is not in; a worker given the
// card gets those groups, and only those, through the real start.
class GpuGroupsTest : public WorkerIdentityTest {
  protected:
    static constexpr gid_t kRender = 61911;
    static constexpr gid_t kKfd = 61912;

    void SetUp() override {
        WorkerIdentityTest::SetUp();
        if (IsSkipped()) return;
        ctx_->paths.sysfs = dir_->mkdir("sys");
        ctx_->paths.devfs = dir_->mkdir("dev");
        dir_->mkdir("sys/class/drm/card1/device/drm/renderD128");
        node("dev/dri/renderD128", kRender);
        node("dev/kfd", kKfd);
        GpuDevice amd;
        amd.index = 1;
        amd.vendor = "amd";
        amd.uuid = "GPU-0123456789abcdef";
        amd.pci_bus_id = "0000:03:00.0";
        ctx_->gpu_devices = [amd]() -> Result<std::vector<GpuDevice>> {
            return std::vector<GpuDevice>{amd};
        };
    }
    void node(const std::string& rel, gid_t gid) {
        fs::path p = dir_->path() / rel;
        fs::create_directories(p.parent_path());
        ASSERT_EQ(::mknod(p.c_str(), S_IFCHR | 0660, makedev(226, 128)), 0);
        ASSERT_EQ(::chown(p.c_str(), 0, gid), 0);
    }
    WorkerSpec on_the_card(const std::string& name) const {
        WorkerSpec spec = reporter(name);
        spec.credentials.clear();
        spec.command = {"/bin/sh", "-c",
                        "id -G > \"$INFERVISOR_WORKDIR/uid.tmp\"; "
                        "mv \"$INFERVISOR_WORKDIR/uid.tmp\" \"$INFERVISOR_WORKDIR/uid\"; "
                        "exec sleep 1000"};
        spec.gpu = GpuSpec{{"0000:03:00.0"}, std::nullopt};
        return spec;
    }
};

TEST_F(GpuGroupsTest, ADynamicWorkerOnAnAmdCardGetsItsRenderNodesAndKfdsGroupsOnly) {
    supervisor_->apply(config({on_the_card("gamma")}));
    wait_for_report("gamma");
    auto who = resolve_identity(on_the_card("gamma"), ctx_->paths);
    ASSERT_TRUE(who.ok()) << who.error().message();
    EXPECT_EQ(report("gamma", "uid"), std::to_string(who->gid) + " " + std::to_string(kRender) +
                                          " " + std::to_string(kKfd));
}

TEST_F(GpuGroupsTest, ARenderNodeOfRootsGroupIsAFailedStartNamingIt) {
    ASSERT_EQ(::chown((dir_->path() / "dev/dri/renderD128").c_str(), 0, 0), 0);
    supervisor_->apply(config({on_the_card("delta")}));
    run_until_event("delta", K::start_failed);
    const Event* failed = last("delta", K::start_failed);
    EXPECT_THAT(failed->message, HasSubstr((dir_->path() / "dev/dri/renderD128").string()));
    EXPECT_THAT(failed->message, HasSubstr("gid 0"));
    EXPECT_FALSE(fs::exists(workdir("delta") / "uid"));
}

}  // namespace
}  // namespace infervisor::testing
