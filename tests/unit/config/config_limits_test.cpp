// Issue 10, defects 1, 6 and 9: configuration built to cost far more than
// its size (thousands of dirs, groups, workers, errors; aliases; oversize
// files; absurd sizes and durations) gets a clear error naming the limit,
// and the steps that remain are linear or n·log n. No wall-clock bound here:
// before these limits, the large cases below ran for minutes (and a test
// timeout is what a regression would hit); config-check-bench has figures.
#include "config/config_limits.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/account_lookup.h"
#include "config/config_loader.h"
#include "support/hostile_config.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::string worker(const std::string& name, const std::string& extra = "") {
    return "  - {name: " + name + ", command: [/bin/true], memory: {max: 1G}" + extra + "}\n";
}

TEST(ConfigLimits, FiftyThousandExtraDirsAreOneErrorAtTheList) {
    auto loaded = load_config_text(testing::config_with_extra_dirs(50000), "h.yaml");
    ASSERT_EQ(loaded.errors.count(), 1u) << loaded.errors.format();
    EXPECT_THAT(loaded.errors.format(),
                HasSubstr("h.yaml:5:17: 'extra_dirs' has 50000 items; at most 64 are allowed"));
}

TEST(ConfigLimits, ThousandsOfValidDirsAreCheckedWithoutComparingEveryPair) {
    // 500 workers x 64 extra dirs: 32,500 dirs, valid. Comparing every pair
    // (the check before) takes minutes; sorting takes milliseconds.
    std::string text = "workers:\n";
    for (int w = 0; w < 500; ++w) {
        std::string dirs = ", extra_dirs: [";
        for (int d = 0; d < 64; ++d)
            dirs += (d ? ", " : "") + std::string("{path: /srv/") + std::to_string(w) + "/" +
                    std::to_string(d) + "}";
        text += worker("w" + std::to_string(w), dirs + "]");
    }
    ASSERT_LT(text.size(), config_limits::kMaxFileBytes);
    auto loaded = load_config_text(text, "many.yaml");
    EXPECT_TRUE(loaded.ok()) << loaded.errors.format();
    EXPECT_EQ(loaded.config.workers.size(), 500u);
}

TEST(ConfigLimits, OverlapsAreFoundAfterSorting) {
    std::string text = "workers:\n" +
                       worker("a", ", extra_dirs: [{path: /srv/x}, {path: /srv/x}]") +
                       worker("b", ", workdir: /srv/x/y/z") +
                       worker("c", ", workdir: /srv/c, extra_dirs: [{path: /srv/c/own}]") +
                       worker("d", ", workdir: /srv/cc");
    auto loaded = load_config_text(text, "o.yaml");
    auto all = loaded.errors.format();
    EXPECT_EQ(loaded.errors.count(), 2u) << all;
    EXPECT_THAT(all, HasSubstr("worker 'a' names /srv/x twice (extra dir, extra dir)"));
    EXPECT_THAT(all, HasSubstr("workers must not share directories: worker 'a' extra dir /srv/x "
                               "and worker 'b' work dir /srv/x/y/z overlap"));
}

TEST(ConfigLimits, ErrorsAreCappedWithACount) {
    // 1,000 workers sharing one work dir: one error per pair before (499,500).
    auto loaded = load_config_text(testing::config_with_shared_workdir(1000), "s.yaml");
    EXPECT_EQ(loaded.errors.all().size(), ConfigErrors::kMaxKept);
    EXPECT_EQ(loaded.errors.count(), 999u);
    auto lines = loaded.errors.lines();
    EXPECT_EQ(lines.size(), ConfigErrors::kMaxKept + 1);
    EXPECT_EQ(lines.back(),
              "... and 899 more error(s) not shown (only the first 100 are reported)");
}

TEST(ConfigLimits, RepeatedDirsAreOneErrorEach) {
    auto loaded = load_config_text(testing::config_with_repeated_extra_dir(64), "r.yaml");
    EXPECT_EQ(loaded.errors.count(), 63u) << loaded.errors.format();
}

TEST(ConfigLimits, SupplementaryGroupsAreCappedPerWorker) {
    auto loaded = load_config_text(testing::config_with_unknown_groups(20000), "g.yaml");
    ASSERT_EQ(loaded.errors.count(), 1u) << loaded.errors.format();
    EXPECT_THAT(loaded.errors.format(),
                HasSubstr("'supplementary_groups' in worker 'w' has 20000 items; at most 64"));
}

TEST(ConfigLimits, DistinctAccountNamesAreCappedPerConfiguration) {
    // 10 workers x 64 unknown groups: 640 distinct names, over the 256 looked up.
    std::string text = "workers:\n";
    for (int w = 0; w < 10; ++w) {
        std::string groups = ", supplementary_groups: [";
        for (int g = 0; g < 64; ++g)
            groups += (g ? ", " : "") + std::string("nosuch") + std::to_string(w * 64 + g);
        text += worker("w" + std::to_string(w), groups + "]");
    }
    auto loaded = load_config_text(text, "n.yaml");
    // The limit comes first, before the errors of the names that were checked.
    EXPECT_EQ(loaded.errors.all().at(0).format(),
              "n.yaml: the configuration names 641 distinct users and groups; only the first "
              "256 are looked up, the others are not checked (the limit)");
    EXPECT_EQ(loaded.errors.all().size(), ConfigErrors::kMaxKept);
}

TEST(AccountLookup, LooksEachNameUpOnceAndAtMostTheLimit) {
    AccountLookup accounts(2);
    EXPECT_EQ(accounts.user("root"), AccountLookup::Answer::exists);
    EXPECT_EQ(accounts.group("no-such-group-xyz"), AccountLookup::Answer::missing);
    EXPECT_EQ(accounts.group("root"), AccountLookup::Answer::not_checked);
    EXPECT_EQ(accounts.user("root"), AccountLookup::Answer::exists);  // cached
    EXPECT_EQ(accounts.group("no-such-group-xyz"), AccountLookup::Answer::missing);
    EXPECT_EQ(accounts.not_checked(), 1u);
}

TEST(ConfigLimits, WorkersAreCapped) {
    auto over = load_config_text(testing::config_with_workers(config_limits::kMaxWorkers + 1), "w");
    ASSERT_EQ(over.errors.count(), 1u);
    EXPECT_THAT(over.errors.format(), HasSubstr("w:2:3: 'workers' has 1025 items; at most 1024 "
                                                "workers are allowed"));
    auto at = load_config_text(testing::config_with_workers(config_limits::kMaxWorkers), "w");
    EXPECT_TRUE(at.ok()) << at.errors.format();
}

TEST(ConfigLimits, RulesEnvironmentAndCommandAreCapped) {
    std::string rules = ", rules: [";
    for (int i = 0; i < 65; ++i)
        rules += (i ? ", " : "") + std::string("{name: r") + std::to_string(i) +
                 ", when: 'memory.current > 1G', action: log}";
    std::string env = ", environment: {";
    for (int i = 0; i < 1025; ++i)
        env += (i ? ", " : "") + std::string("V") + std::to_string(i) + ": x";
    std::string text = "workers:\n" + worker("a", rules + "]") + worker("b", env + "}");
    auto all = load_config_text(text, "c.yaml").errors.format();
    EXPECT_THAT(all, HasSubstr("'rules' has 65 items; at most 64 are allowed"));
    EXPECT_THAT(all, HasSubstr("'environment' in worker 'b' has 1025 items; at most 1024"));
}

TEST(ConfigLimits, ALongUnknownKeyCostsNoHintAndAShortMessage) {
    auto loaded = load_config_text(testing::config_with_long_unknown_key(500000), "k.yaml");
    ASSERT_EQ(loaded.errors.count(), 1u);
    const auto& message = loaded.errors.all()[0].message;
    EXPECT_LE(message.size(), ConfigErrors::kMaxMessageBytes + 16);
    EXPECT_THAT(message, AllOf(HasSubstr("unknown key 'kkkk"), HasSubstr("(cut)")));
}

TEST(ConfigLimits, AliasBombsAreRefusedBeforeAnythingReadsThem) {
    // Each level holds ten uses of the one before: 10^7 nodes from 700 bytes.
    std::string text = "x0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
    for (int i = 1; i <= 7; ++i) {
        std::string prev = "*a" + std::to_string(i - 1);
        text += "x" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev;
        for (int j = 1; j < 10; ++j) text += ", " + prev;
        text += "]\n";
    }
    text += "workers: *a7\n";
    auto loaded = load_config_text(text, "b.yaml");
    ASSERT_EQ(loaded.errors.count(), 1u) << loaded.errors.format();
    EXPECT_THAT(loaded.errors.format(), HasSubstr("expands to more than 1000000 YAML nodes"));
    // A large scalar used many times: 20 uses of 1 MiB.
    std::string big = "big: &big " + std::string(1000000, 'v') + "\nworkers:\n" +
                      worker("a",
                             ", environment: {A: *big, B: *big, C: *big, D: *big, E: *big, "
                             "F: *big, G: *big, H: *big, I: *big, J: *big, K: *big, L: *big, "
                             "M: *big, N: *big, O: *big, P: *big, Q: *big, R: *big}");
    EXPECT_THAT(load_config_text(big, "s.yaml").errors.format(),
                HasSubstr("expands to more than 16 MiB of text"));
}

TEST(ConfigLimits, TextOverTheFileLimitIsRefused) {
    std::string text = testing::config_with_workers(10) + "#" +
                       std::string(config_limits::kMaxFileBytes, 'x') + "\n";
    auto loaded = load_config_text(text, "t.yaml");
    EXPECT_THAT(loaded.errors.format(),
                HasSubstr("t.yaml: the configuration text is larger than 1024 KiB"));
    EXPECT_TRUE(loaded.config.workers.empty());
}

// Defect 6: a file over the limit was cut at 1 MiB, silently dropping the
// workers after the cut (a reload would then stop them).
TEST(ConfigLimits, AFileOverTheLimitIsAnErrorNotACut) {
    testing::TempDir dir;
    std::string text = "workers:\n";
    for (int i = 0; text.size() <= config_limits::kMaxFileBytes; ++i)
        text += worker("w" + std::to_string(i),
                       ", environment: {PAD: '" + std::string(200, 'p') + "'}");
    auto file = dir.write("infervisor.yaml", text);
    auto loaded = load_config({file, {}});
    EXPECT_FALSE(loaded.ok());
    EXPECT_THAT(loaded.errors.format(),
                HasSubstr(file.string() + ": cannot read: " + file.string() +
                          " is larger than 1024 KiB, the limit for a configuration file"));
    EXPECT_TRUE(loaded.config.workers.empty());
}

// Defect 9: sizes and durations that mean nothing.
TEST(ConfigLimits, AbsurdSizesAndDurationsAreRefused) {
    std::string text = "sample_interval: 2h\nworkers:\n" +
                       worker("a", ", restart: {backoff_max: 36500d}, stop: {timeout: 2h}") +
                       "  - name: b\n    command: [/bin/true]\n"
                       "    memory: {max: 18446744073709551615}\n"
                       "    start_timeout: 36500d\n";
    auto all = load_config_text(text, "a.yaml").errors.format();
    EXPECT_THAT(all,
                HasSubstr("'sample_interval' in the configuration must be at most 1h, not 2h"));
    EXPECT_THAT(all, HasSubstr("'backoff_max' in 'restart' must be at most 1d, not 36500d"));
    EXPECT_THAT(all, HasSubstr("'timeout' in 'stop' must be at most 1h, not 2h"));
    EXPECT_THAT(all, HasSubstr("'max': 18446744073709551615 is above the largest size accepted"));
    EXPECT_THAT(all, HasSubstr("'start_timeout' in worker 'b' must be at most 1d, not 36500d"));
    std::string fine = "workers:\n" + worker("c", ", memory: {max: max}, workdir_quota: 1024T");
    // memory.max "max" is refused by the validator for its own reason, not as absurd.
    EXPECT_THAT(load_config_text(fine, "f.yaml").errors.format(),
                Not(HasSubstr("largest size accepted")));
}

TEST(ConfigErrors, KeepsTheFirstHundredAndCountsTheRest) {
    ConfigErrors errors;
    errors.set_file("f");
    for (int i = 0; i < 1000; ++i) errors.add_at("f", i + 1, 1, "problem " + std::to_string(i));
    EXPECT_EQ(errors.all().size(), 100u);
    EXPECT_EQ(errors.count(), 1000u);
    EXPECT_EQ(errors.dropped(), 900u);
    EXPECT_THAT(errors.format(), HasSubstr("f:100:1: problem 99\n... and 900 more error(s)"));
    EXPECT_FALSE(errors.empty());
}

TEST(ConfigErrors, ListsErrorsInReadingOrderWhicheverCheckFoundThemFirst) {
    ConfigErrors errors;
    errors.set_file("main.yaml");
    errors.set_file("workers.d/a.yaml");
    // Found out of order: the validator's errors come after the parser's.
    errors.add_at("workers.d/a.yaml", 9, 5, "late in the drop-in");
    errors.add_at("main.yaml", 12, 3, "late in main");
    errors.add_at("workers.d/a.yaml", 2, 7, "early in the drop-in");
    errors.add_at("main.yaml", 4, 9, "second on line 4");
    errors.add_at("main.yaml", 4, 1, "first on line 4");
    errors.add_at("main.yaml", 4, 9, "same place, found later");
    errors.add_unplaced("no place: the drop-in first");
    EXPECT_THAT(
        errors.lines(),
        ElementsAre("main.yaml:4:1: first on line 4", "main.yaml:4:9: second on line 4",
                    "main.yaml:4:9: same place, found later", "main.yaml:12:3: late in main",
                    "workers.d/a.yaml: no place: the drop-in first",
                    "workers.d/a.yaml:2:7: early in the drop-in",
                    "workers.d/a.yaml:9:5: late in the drop-in"));
}

TEST(ConfigErrors, TheHundredKeptAreTheFirstInTheFilesNotTheFirstFound) {
    ConfigErrors errors;
    errors.set_file("main.yaml");
    for (int i = 200; i > 0; --i) errors.add_at("main.yaml", i, 1, "problem " + std::to_string(i));
    errors.add_at("later.yaml", 1, 1, "in a file named only when full");
    ASSERT_EQ(errors.all().size(), 100u);
    EXPECT_EQ(errors.all().front().line, 1);
    EXPECT_EQ(errors.all().back().line, 100);
    EXPECT_EQ(errors.dropped(), 101u);
    EXPECT_EQ(errors.count(), 201u);
}

}  // namespace
}  // namespace infervisor
