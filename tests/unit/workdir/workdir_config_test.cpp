#include "workdir/workdir_config.h"

#include <gtest/gtest.h>

#include "workdir/workdir_validation.h"

namespace infervisor {
namespace {

namespace fs = std::filesystem;

struct Parsed {
    WorkDirSpec spec;
    ConfigErrors errors;
};

Parsed parse(const std::string& yaml) {
    Parsed out;
    out.spec.worker = "llama";
    out.errors.set_file("test.yaml");
    YamlMap map(YAML::Load(yaml), out.errors, "worker 'llama'");
    map.get_string("name", out.spec.worker);  // a key the caller owns
    parse_workdir_keys(map, out.spec, out.errors);
    map.finish();
    return out;
}

TEST(WorkDirConfig, DefaultsWhenNothingIsSet) {
    auto p = parse("name: llama\n");
    ASSERT_TRUE(p.errors.empty()) << p.errors.format();
    EXPECT_EQ(p.spec, (WorkDirSpec{.worker = "llama"}));
    EXPECT_EQ(resolve_workdir(p.spec, Paths{}), "/var/lib/infervisor/workers/llama");
}

TEST(WorkDirConfig, ReadsAllKeys) {
    auto p = parse(
        "workdir: /srv/models//llama/\n"
        "extra_dirs:\n"
        "  - path: /var/tmp/llama-cache\n"
        "    mode: \"0750\"\n"
        "  - path: /tmp/llama-scratch\n"
        "    mode: 700\n"
        "    protect: false\n"
        "workdir_quota: 20G\n"
        "remove_workdir_on_removal: true\n");
    ASSERT_TRUE(p.errors.empty()) << p.errors.format();
    EXPECT_EQ(p.spec.workdir, "/srv/models/llama");
    ASSERT_EQ(p.spec.extra_dirs.size(), 2u);
    EXPECT_EQ(p.spec.extra_dirs[0], (ExtraDirSpec{"/var/tmp/llama-cache", 0750, true}));
    EXPECT_EQ(p.spec.extra_dirs[1], (ExtraDirSpec{"/tmp/llama-scratch", 0700, false}));
    EXPECT_EQ(p.spec.quota, ByteLimit(20ull << 30));
    EXPECT_TRUE(p.spec.remove_on_removal);
    EXPECT_EQ(resolve_workdir(p.spec, Paths{}), "/srv/models/llama");
}

TEST(WorkDirConfig, ReportsBadValuesWhereTheyStand) {
    auto p = parse(
        "workdir: relative/dir\n"
        "extra_dirs:\n"
        "  - path: /var/tmp/../etc\n"
        "  - mode: \"0700\"\n"
        "  - path: /var/tmp/x\n"
        "    mode: rwx\n"
        "    colour: blue\n"
        "workdir_quota: lots\n");
    std::string all = p.errors.format();
    EXPECT_NE(all.find("test.yaml:1:10: 'workdir': must be an absolute path"), std::string::npos)
        << all;
    EXPECT_NE(all.find("test.yaml:3:11: 'path': must not contain '.' or '..'"), std::string::npos)
        << all;
    EXPECT_NE(all.find("missing required key 'path'"), std::string::npos) << all;
    EXPECT_NE(all.find("'mode': expected an octal mode"), std::string::npos) << all;
    EXPECT_NE(all.find("unknown key 'colour'"), std::string::npos) << all;
    EXPECT_NE(all.find("'workdir_quota'"), std::string::npos) << all;
}

TEST(WorkDirConfig, ExtraDirsMustBeAList) {
    auto p = parse("extra_dirs: /var/tmp/x\n");
    EXPECT_NE(p.errors.format().find("must be a list"), std::string::npos);
}

TEST(WorkDirConfig, ParsesOctalModes) {
    EXPECT_EQ(*parse_dir_mode("0700"), 0700u);
    EXPECT_EQ(*parse_dir_mode("755"), 0755u);
    EXPECT_EQ(*parse_dir_mode("02770"), 02770u);
    EXPECT_EQ(*parse_dir_mode("1777"), 01777u);
    for (const char* bad : {"", "0800", "rwx", "-1", "04700", "077777", "0x1ff"})
        EXPECT_FALSE(parse_dir_mode(bad).ok()) << bad;
}

TEST(WorkDirPath, AcceptsOrdinaryPlaces) {
    for (const char* good : {"/var/lib/infervisor/workers/llama", "/var/tmp/llama-cache",
                             "/tmp/llama", "/srv/models/llama", "/home/ai/cache"})
        EXPECT_TRUE(check_worker_dir_path(good).ok()) << good;
}

TEST(WorkDirPath, RefusesDangerousPaths) {
    for (const char* bad : {"", "relative", "/", "//", "/proc/1", "/sys/fs", "/dev/shm/x", "/dev",
                            "/etc", "/var", "/var/tmp", "/tmp", "/usr/local", "/home",
                            "/var/tmp/../../etc", "/var/tmp/./x", "/tmp/a b", "/tmp/a*", "/tmp/%h"})
        EXPECT_FALSE(check_worker_dir_path(bad).ok()) << bad;
}

std::string validate(const std::vector<WorkDirSpec>& specs) {
    ConfigErrors errors;
    validate_workdir_specs(specs, Paths{}, errors);
    return errors.format();
}

TEST(WorkDirValidation, AcceptsSeparateWorkers) {
    EXPECT_EQ(validate({{.worker = "llama", .extra_dirs = {{"/var/tmp/llama", 0700, true}}},
                        {.worker = "whisper", .extra_dirs = {{"/var/tmp/whisper", 0700, true}}}}),
              "");
}

TEST(WorkDirValidation, RefusesSharedOrNestedDirectories) {
    auto same = validate({{.worker = "a", .extra_dirs = {{"/var/tmp/cache", 0700, true}}},
                          {.worker = "b", .extra_dirs = {{"/var/tmp/cache", 0700, true}}}});
    EXPECT_NE(same.find("workers must not share directories"), std::string::npos) << same;

    auto nested = validate({{.worker = "a", .workdir = "/srv/a"},
                            {.worker = "b", .extra_dirs = {{"/srv/a/cache", 0700, true}}}});
    EXPECT_NE(nested.find("worker 'a' work dir /srv/a"), std::string::npos) << nested;

    auto into_default =
        validate({{.worker = "a"}, {.worker = "b", .workdir = "/var/lib/infervisor/workers/a/x"}});
    EXPECT_NE(into_default.find("share"), std::string::npos) << into_default;
}

TEST(WorkDirValidation, RefusesTheSamePathTwiceInOneWorker) {
    auto twice =
        validate({{.worker = "a", .workdir = "/srv/a", .extra_dirs = {{"/srv/a", 0700, true}}}});
    EXPECT_NE(twice.find("names /srv/a twice"), std::string::npos) << twice;
    EXPECT_EQ(
        validate(
            {{.worker = "a", .workdir = "/srv/a", .extra_dirs = {{"/srv/a/cache", 0700, true}}}}),
        "");  // nesting within one worker is fine
}

TEST(WorkDirValidation, RefusesTheDaemonsOwnDirectories) {
    auto state = validate({{.worker = "a", .workdir = "/var/lib/infervisor"}});
    EXPECT_NE(state.find("the daemon's directory /var/lib/infervisor"), std::string::npos) << state;
    auto workers =
        validate({{.worker = "a", .extra_dirs = {{"/var/lib/infervisor/workers", 0700, true}}}});
    EXPECT_NE(workers.find("daemon's directory"), std::string::npos) << workers;
}

TEST(WorkDirValidation, RefusesNamesThatCannotNameADefaultWorkDir) {
    EXPECT_NE(validate({{.worker = ".."}}).find("cannot be used"), std::string::npos);
    EXPECT_NE(validate({{.worker = "a/b"}}).find("cannot be used"), std::string::npos);
    EXPECT_EQ(validate({{.worker = "a b", .workdir = "/srv/ab"}}), "");
}

}  // namespace
}  // namespace infervisor
