// Issue 10: which users and directories a worker may be given, as the
// configuration check sees it. Defect 5: system directories and other
// workers' directories were accepted as work or extra dirs. Defect 2: each
// worker gets a uid of its own unless the configuration names a user.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config_loader.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

using ::testing::HasSubstr;

LoadedConfig load(const std::string& text) { return load_config_text(text, "test.yaml"); }

std::string worker_with_dir(const std::string& key, const std::string& path) {
    std::string dirs = key == "workdir" ? "    workdir: " + path + "\n"
                                        : "    extra_dirs:\n      - path: " + path + "\n";
    return "workers:\n"
           "  - name: a\n"
           "    command: [/bin/true]\n"
           "    memory: {max: 64M}\n" +
           dirs;
}

// The paths the adversarial review handed to a worker, each refused where it
// stands (file:line:col) as a work dir and as an extra dir.
TEST(WorkerDirs, TheIssuesSystemPathsAreRefusedWithTheirPlace) {
    for (const char* path : {"/usr/bin", "/etc/ssh", "/root/.ssh", "/var/lib/dpkg", "/home/alice",
                             "/run/systemd", "/boot/grub", "/lib/modules", "/sbin/x"}) {
        auto as_workdir = load(worker_with_dir("workdir", path));
        EXPECT_THAT(as_workdir.errors.format(),
                    HasSubstr("test.yaml:5:14: 'workdir': " + std::string(path)))
            << path;
        auto as_extra = load(worker_with_dir("extra_dirs", path));
        EXPECT_THAT(as_extra.errors.format(),
                    HasSubstr("test.yaml:6:15: 'path': " + std::string(path)))
            << path;
        EXPECT_THAT(as_extra.errors.format(), HasSubstr("system's own tree")) << path;
    }
}

TEST(WorkerDirs, TheDaemonsAndOtherWorkersDirsAreRefused) {
    for (const char* path :
         {"/var/lib/infervisor/checkpoints/z", "/var/lib/infervisor/checkpoints/a",
          "/var/lib/infervisor/workers/b", "/var/lib/infervisor/dynamic-users",
          "/var/lib/infervisor/elsewhere"}) {
        auto loaded = load(worker_with_dir("extra_dirs", path));
        EXPECT_THAT(loaded.errors.format(), HasSubstr("worker 'a' extra dir " + std::string(path) +
                                                      " is inside the daemon's state dir"))
            << path;
    }
    EXPECT_TRUE(load(worker_with_dir("workdir", "/var/lib/infervisor/workers/a")).ok());
    EXPECT_TRUE(load(worker_with_dir("extra_dirs", "/var/lib/infervisor/workers/a/cache")).ok());
}

TEST(WorkerDirs, OrdinaryPlacesAndAdoptionAreAccepted) {
    for (const char* path : {"/srv/models/a", "/opt/a", "/var/tmp/a-cache", "/mnt/data/a",
                             "/home/alice/models", "/tmp/a"})
        EXPECT_TRUE(load(worker_with_dir("extra_dirs", path)).ok()) << path;
    auto adopted = load(
        "workers:\n"
        "  - name: a\n"
        "    command: [/bin/true]\n"
        "    memory: {max: 64M}\n"
        "    workdir: {path: /srv/a, adopt: true}\n"
        "    extra_dirs:\n"
        "      - {path: /srv/models, adopt: true}\n");
    ASSERT_TRUE(adopted.ok()) << adopted.errors.format();
    const WorkerSpec& spec = adopted.config.workers.at(0);
    EXPECT_EQ(spec.workdir.workdir, "/srv/a");
    EXPECT_TRUE(spec.workdir.adopt_workdir);
    ASSERT_EQ(spec.workdir.extra_dirs.size(), 1u);
    EXPECT_TRUE(spec.workdir.extra_dirs[0].adopt);
}

TEST(WorkerUsers, AConfigFileGivesEachWorkerAUidOfItsOwnUnlessItNamesAUser) {
    auto loaded = load(
        "workers:\n"
        "  - {name: a, command: [/bin/true], memory: {max: 64M}}\n"
        "  - {name: b, command: [/bin/true], memory: {max: 64M}, user: nobody}\n");
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    EXPECT_EQ(loaded.config.workers[0].user, kDynamicUser);
    EXPECT_EQ(loaded.config.workers[1].user, "nobody");
}

TEST(WorkerCredentials, AreCheckedWhereTheyAreWritten) {
    testing::TempDir dir;
    auto token = dir.write("hf_token", "hf_secret");
    auto big = dir.write("big", std::string((1 << 20) + 1, 'x'));
    auto loaded = load(
        "workers:\n"
        "  - name: a\n"
        "    command: [/bin/true]\n"
        "    memory: {max: 64M}\n"
        "    credentials:\n"
        "      hf_token: " +
        token.string() +
        "\n"
        "      ../escape: " +
        token.string() +
        "\n"
        "      missing: " +
        (dir.path() / "nope").string() +
        "\n"
        "      big: " +
        big.string() +
        "\n"
        "      relative: some/file\n");
    std::string all = loaded.errors.format();
    // At the `credentials` key.
    EXPECT_THAT(all, HasSubstr("test.yaml:5:5: worker 'a': credential name '../escape'"));
    EXPECT_THAT(all, HasSubstr("credential 'missing': cannot use"));
    EXPECT_THAT(all, HasSubstr("credential 'big': " + big.string() + " is larger than"));
    EXPECT_THAT(all, HasSubstr("credential 'relative': must be an absolute path"));
    EXPECT_THAT(all, ::testing::Not(HasSubstr("'hf_token'")));
}

}  // namespace
}  // namespace infervisor
