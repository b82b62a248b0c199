#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "config/config_loader.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> errors_of(const char* text) {
    auto loaded = load_config_text(text, "test.yaml");
    std::vector<std::string> out;
    for (const auto& e : loaded.errors.all()) out.push_back(e.format());
    return out;
}

constexpr const char* kFull = R"(log_level: debug
dry_run: true
control_group: ops
defaults:
  restart:
    backoff_max: 30s
workers:
  - name: llama
    command: [/usr/bin/llama-server, --model, /models/x.gguf]
    environment: {OMP_NUM_THREADS: "4"}
    user: nobody
    memory: {max: 2G, high: 1800M, swap_max: 0}
    pids_max: 256
    cpu_weight: 200
    restart: {policy: always, backoff_initial: 2s, start_limit_burst: 3, start_limit_interval: 1m}
    stop: {signal: SIGINT, timeout: 10s}
    notify: true
    watchdog: 30s
  - name: whisper
    command: [/usr/bin/whisper]
    memory: {max: 512M}
)";

TEST(ConfigParser, ParsesEveryWorkerField) {
    auto loaded = load_config_text(kFull, "full.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    const Config& c = loaded.config;
    EXPECT_EQ(c.daemon.log_level, "debug");
    EXPECT_TRUE(c.daemon.dry_run);
    EXPECT_EQ(c.daemon.control_group, "ops");
    ASSERT_EQ(c.workers.size(), 2u);
    const WorkerSpec& w = c.workers[0];
    EXPECT_EQ(w.name, "llama");
    EXPECT_THAT(w.command, ElementsAre("/usr/bin/llama-server", "--model", "/models/x.gguf"));
    EXPECT_EQ(w.environment.at("OMP_NUM_THREADS"), "4");
    EXPECT_EQ(w.user, "nobody");
    EXPECT_EQ(*w.memory.max, 2ull << 30);
    EXPECT_EQ(*w.memory.high, 1800ull << 20);
    EXPECT_EQ(*w.memory.swap_max, 0u);
    EXPECT_EQ(*w.pids_max, 256);
    EXPECT_EQ(*w.cpu_weight, 200);
    EXPECT_EQ(w.restart.mode, RestartMode::always);
    EXPECT_EQ(w.restart.backoff_initial, std::chrono::seconds(2));
    EXPECT_EQ(w.restart.backoff_max, std::chrono::seconds(30));  // from defaults
    EXPECT_EQ(w.restart.start_limit_burst, 3);
    EXPECT_EQ(w.stop_signal, SIGINT);
    EXPECT_EQ(w.stop_timeout, std::chrono::seconds(10));
    EXPECT_TRUE(w.notify);
    EXPECT_EQ(w.watchdog, std::chrono::seconds(30));
    EXPECT_FALSE(w.learn_watchdog);            // given: none learned
    EXPECT_TRUE(c.workers[1].learn_watchdog);  // not given: learned
    EXPECT_EQ(c.worker_sources[0].item.line, 8);
    EXPECT_EQ(c.worker_sources[0].item.column, 5);
    // Defaults apply; everything else keeps the built-in default.
    EXPECT_EQ(c.workers[1].restart.backoff_max, std::chrono::seconds(30));
    EXPECT_EQ(c.workers[1].restart.mode, RestartMode::on_failure);
    EXPECT_EQ(*c.workers[1].memory.swap_max, 0u);
    EXPECT_FALSE(c.workers[1].memory.high.has_value());
}

TEST(ConfigParser, ReportsEveryErrorWithItsPlace) {
    auto errors = errors_of(R"(workers:
  - name: a
    command: [/bin/a]
    memory: {max: 1G, hihg: 2G}
    pids_max: many
    restart: {policy: sometimes}
    stop: {signal: SIGFOO, timeout: 30}
    colour: blue
)");
    EXPECT_THAT(
        errors,
        ElementsAre(
            "test.yaml:4:23: unknown key 'hihg' in 'memory' (did you mean 'high'?)",
            "test.yaml:5:15: 'pids_max' must be a whole number, not 'many'",
            "test.yaml:6:23: restart policy must be never, on-failure or always, not 'sometimes'",
            "test.yaml:7:20: unknown signal 'SIGFOO'",
            HasSubstr("test.yaml:7:37: 'timeout': invalid duration '30': missing unit"),
            "test.yaml:8:5: unknown key 'colour' in worker 'a'"));
}

TEST(ConfigParser, ReportsBadSizesAndWrongTypes) {
    auto errors = errors_of(R"(workers:
  - name: a
    command: /bin/a
    memory: {max: 1Q}
    environment: [A=1]
)");
    EXPECT_THAT(
        errors,
        // In file order, and no "memory.max is required": it was written, only
        // wrong.
        ElementsAre("test.yaml:3:14: 'command' in worker 'a' must be a list, not a scalar",
                    "test.yaml:4:19: 'max': invalid size '1Q': unknown unit 'Q' (use K, M, G or T)",
                    "test.yaml:5:18: 'environment' must be a mapping, not a list"));
}

TEST(ConfigParser, AMistakeIsReportedOnceNotAgainByTheChecksThatFollow) {
    // A bad value leaves its field at the default; the checks that judge
    // fields together would otherwise report what the file does not say.
    auto errors = errors_of(R"(sample_interval: 2x
growth_window: 1m
defaults:
  restart: {backoff_max: 1q}
workers:
  - name: a
    command: [/bin/a]
    memory: {max: 1G}
    restart: {backoff_initial: 2m}
  - name: b
    command: [/bin/b]
    memory: {max: 12GG, high: 1G}
)");
    EXPECT_THAT(errors,
                ElementsAre(HasSubstr("test.yaml:1:18: 'sample_interval': "
                                      "invalid duration '2x'"),
                            HasSubstr("test.yaml:4:26: 'backoff_max': invalid duration '1q'"),
                            HasSubstr("test.yaml:12:19: 'max': invalid size '12GG'")));
    // The same checks still run on what is whole.
    EXPECT_THAT(errors_of(R"(sample_interval: 1m
growth_window: 1m
workers:
  - name: a
    command: [/bin/a]
    memory: {high: 1G}
    restart: {backoff_initial: 2m, backoff_max: 1m}
)"),
                ElementsAre(HasSubstr("growth_window (1m) must be at least twice sample_interval"),
                            HasSubstr("worker 'a': memory.max is required"),
                            HasSubstr("worker 'a': restart.backoff_initial (2m) is above "
                                      "restart.backoff_max (1m)")));
}

// Issue 27, point 12: a worker whose program is not there will fail to
// start; said at check time, where the worker is written, as a warning (it
// may be installed before the worker starts; the others must still run).
TEST(ConfigValidator, WarnsOfACommandThatCannotBeRun) {
    testing::TempDir dir;
    auto script = dir.write("script.sh", "#!/bin/sh\n");
    ::chmod(script.c_str(), 0644);
    auto runnable = dir.write("run.sh", "#!/bin/sh\n");
    ::chmod(runnable.c_str(), 0755);
    std::string text = "workers:\n";
    for (const auto& program : {std::string("/nonexistent/llama-server"), script.string(),
                                dir.path().string(), runnable.string(), script.string() + "/x"})
        text += "  - {name: w" + std::to_string(text.size()) + ", command: [" + program +
                "], memory: {max: 1G}}\n";
    auto loaded = load_config_text(text, "test.yaml");
    EXPECT_TRUE(loaded.ok()) << loaded.errors.format();
    auto warnings = loaded.errors.warning_lines();
    ASSERT_EQ(warnings.size(), 4u);
    // At the `command` key of each worker.
    EXPECT_THAT(warnings[0], AllOf(HasSubstr("test.yaml:2:16: worker 'w"),
                                   HasSubstr("command[0] '/nonexistent/llama-server' does not "
                                             "exist: starting the worker will fail")));
    EXPECT_THAT(warnings[1], HasSubstr("script.sh' is not an executable file"));
    EXPECT_THAT(warnings[2], HasSubstr("' is not an executable file"));
    EXPECT_THAT(warnings[3], HasSubstr("script.sh/x' does not exist"));
}

// Issue 27: an exec probe's program is looked at as the worker's is.
TEST(ConfigValidator, WarnsOfAnExecProbeThatCannotBeRun) {
    auto loaded = load_config_text(R"(workers:
  - name: web
    command: [/bin/true]
    memory: {max: 1G}
    probes:
      liveness: {kind: exec, command: [/nonexistent/check-model], timeout: 5s}
      readiness: {kind: exec, command: [/bin/true]}
)",
                                   "test.yaml");
    EXPECT_TRUE(loaded.ok()) << loaded.errors.format();
    EXPECT_THAT(loaded.errors.warning_lines(),
                ElementsAre("test.yaml:5:5: worker 'web': probe 'liveness': command[0] "
                            "'/nonexistent/check-model' does not exist: every attempt of the "
                            "probe will fail"));
}

// A field's problem is reported at its key; one the worker did not write (a
// value from `defaults:`) at the worker.
TEST(ConfigValidator, ReportsAFieldAtItsKeyOrAtTheWorker) {
    auto errors = errors_of(R"(defaults:
  memory: {max: 1G, high: 2G}
workers:
  - name: a
    command: [/bin/true]
  - name: b
    command: [/bin/true]
    memory:
      max: 1G
      high: 3G
)");
    EXPECT_THAT(errors, ElementsAre("test.yaml:4:5: worker 'a': memory.high (2G) is above "
                                    "memory.max (1G)",
                                    "test.yaml:8:5: worker 'b': memory.high (3G) is above "
                                    "memory.max (1G)"));
}

TEST(ConfigParser, ReportsMissingRequiredKeys) {
    auto errors = errors_of("workers:\n  - memory: {max: 1G}\n");
    EXPECT_THAT(errors, ElementsAre("test.yaml:2:5: worker is missing required key 'name'",
                                    "test.yaml:2:5: worker is missing required key 'command'"));
}

TEST(ConfigParser, ReportsDuplicateKeys) {
    auto errors = errors_of("log_level: info\nlog_level: debug\n");
    EXPECT_THAT(errors,
                ElementsAre("test.yaml:2:1: duplicate key 'log_level' in the configuration"));
}

TEST(ConfigParser, ReportsYamlSyntaxErrors) {
    auto errors = errors_of("workers:\n  - name: [unclosed\n");
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_THAT(errors[0], HasSubstr("test.yaml:"));
    EXPECT_THAT(errors[0], HasSubstr("YAML syntax error"));
}

TEST(ConfigValidator, RejectsImpossibleCombinations) {
    auto errors = errors_of(R"(workers:
  - name: a
    command: [bin/a]
    user: no-such-user-here
    memory: {max: 1G, high: 2G}
    restart: {backoff_initial: 2m, backoff_max: 1m}
  - name: a
    command: [/bin/a]
    memory: {max: 1G}
  - name: ../evil
    command: [/bin/a]
    memory: {max: 1G}
)");
    EXPECT_THAT(
        errors,
        ElementsAre(
            "test.yaml:3:5: worker 'a': command[0] must be an absolute path (no PATH search, no "
            "shell), not 'bin/a'",
            "test.yaml:4:5: worker 'a': user 'no-such-user-here' does not exist on this host",
            "test.yaml:5:5: worker 'a': memory.high (2G) is above memory.max (1G)",
            "test.yaml:6:5: worker 'a': restart.backoff_initial (2m) is above restart.backoff_max "
            "(1m)",
            "test.yaml:7:5: duplicate worker name 'a' (first defined at test.yaml:2:5)",
            HasSubstr("test.yaml:10:5: invalid worker name '../evil'")));
}

TEST(ConfigValidator, ReportsBadDaemonSettingsWhereTheyAreWritten) {
    auto errors = errors_of("dry_run: false\nlog_level: loud\nruntime_dir: run\n");
    EXPECT_THAT(errors,
                ElementsAre(HasSubstr("test.yaml:2:1: log_level must be one of"),
                            "test.yaml:3:1: runtime_dir must be an absolute path, not 'run'"));
}

TEST(ConfigValidator, RejectsNamesOfCgroupFiles) {
    auto errors = errors_of(R"(workers:
  - name: memory.max
    command: [/bin/a]
    memory: {max: 1G}
  - name: llama-3.1
    command: [/bin/a]
    memory: {max: 1G}
)");
    EXPECT_THAT(errors,
                ElementsAre(HasSubstr(
                    "test.yaml:2:5: invalid worker name 'memory.max': names starting with a cgroup "
                    "controller prefix")));
}

TEST(ConfigValidator, RejectsEnvironmentNamesWithEquals) {
    auto errors = errors_of(R"(workers:
  - name: a
    command: [/bin/a]
    memory: {max: 1G}
    environment: {"A=B": "1", "": "2", OK: "3"}
)");
    EXPECT_THAT(
        errors,
        ElementsAre("test.yaml:5:5: worker 'a': environment variable name '' is invalid: it must "
                    "be non-empty, without '='",
                    "test.yaml:5:5: worker 'a': environment variable name 'A=B' is invalid: it "
                    "must be non-empty, without '='"));
}

TEST(ConfigParser, GrowthWindowAndStartTimeout) {
    auto loaded = load_config_text(R"(sample_interval: 1s
growth_window: 10s
workers:
  - name: a
    command: [/bin/a]
    memory: {max: 1G}
    notify: true
    start_timeout: 2m
  - name: b
    command: [/bin/b]
    memory: {max: 1G}
    start_timeout: 0s
  - name: c
    command: [/bin/c]
    memory: {max: 1G}
)",
                                   "test.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    EXPECT_EQ(loaded.config.daemon.growth_window, std::chrono::seconds(10));
    EXPECT_EQ(loaded.config.workers[0].start_timeout, std::chrono::minutes(2));
    EXPECT_EQ(loaded.config.workers[1].start_timeout, std::chrono::seconds(0));
    EXPECT_EQ(loaded.config.workers[2].start_timeout, std::chrono::minutes(10));  // model loads
    // Unset: 15 x sample_interval.
    auto defaults = load_config_text("", "e.yaml").config.daemon;
    EXPECT_EQ(defaults.growth_window, Duration::zero());
    EXPECT_EQ(effective_growth_window(defaults), std::chrono::seconds(30));
    defaults.sample_interval = std::chrono::seconds(1);
    EXPECT_EQ(effective_growth_window(defaults), std::chrono::seconds(15));
    EXPECT_EQ(effective_growth_window(loaded.config.daemon), std::chrono::seconds(10));
}

TEST(ConfigParser, HostSettle) {
    EXPECT_EQ(load_config_text("", "e.yaml").config.daemon.host_settle, std::chrono::seconds(30));
    auto loaded = load_config_text("host_settle: 5m\n", "test.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    EXPECT_EQ(loaded.config.daemon.host_settle, std::chrono::minutes(5));
    EXPECT_EQ(load_config_text("host_settle: 0s\n", "test.yaml").config.daemon.host_settle,
              std::chrono::seconds(0));
    EXPECT_THAT(errors_of("host_settle: soon\n"), ElementsAre(HasSubstr("test.yaml:1:14: ")));
}

TEST(ConfigParser, ResumeWhenIsAHostCondition) {
    EXPECT_FALSE(load_config_text("", "e.yaml").config.daemon.resume_when);
    auto loaded = load_config_text("resume_when: host.mem.available > 2G for 1m\n", "test.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    const auto& when = loaded.config.daemon.resume_when;
    ASSERT_TRUE(when);
    EXPECT_EQ(when->metric, "host.mem.available");
    EXPECT_EQ(when->hold, std::chrono::minutes(1));
    EXPECT_EQ(when->threshold, 2.0 * (1ull << 30));
    EXPECT_THAT(errors_of("resume_when: memory.current > 1G\n"),
                ElementsAre(AllOf(HasSubstr("test.yaml:1:14: 'resume_when': "),
                                  HasSubstr("'memory.current' is a worker metric"))));
}

TEST(ConfigParser, MemoryReserveAndAdmission) {
    auto loaded = load_config_text(R"(workers:
  - name: a
    command: [/bin/a]
    memory: {max: 2G, reserve: 1G}
  - name: b
    command: [/bin/b]
    memory: {max: 2G, reserve: 2G}
    admission: overcommit
  - name: c
    command: [/bin/c]
    memory: {max: 2G}
)",
                                   "test.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    const auto& w = loaded.config.workers;
    EXPECT_EQ(w[0].memory.reserve, 1ull << 30);
    EXPECT_FALSE(w[0].overcommit);
    EXPECT_TRUE(w[1].overcommit);
    EXPECT_FALSE(w[2].memory.reserve);  // no reserve: starts at once
    EXPECT_THAT(errors_of(R"(workers:
  - name: a
    command: [/bin/a]
    memory: {max: 1G, reserve: 512M}
    admission: sometimes
)"),
                ElementsAre("test.yaml:5:16: 'admission' must be check or overcommit, not "
                            "'sometimes'"));
    EXPECT_THAT(errors_of(R"(workers:
  - name: a
    command: [/bin/a]
    memory: {max: 1G, reserve: 2G}
)"),
                ElementsAre(HasSubstr("memory.reserve (2G) is above memory.max (1G)")));
}

TEST(ConfigValidator, GrowthWindowMustSpanTwoSamples) {
    EXPECT_THAT(errors_of("sample_interval: 2s\ngrowth_window: 3s\n"),
                ElementsAre("test.yaml:2:1: growth_window (3s) must be at least twice "
                            "sample_interval (2s): memory.growth needs samples across half of it"));
    EXPECT_THAT(errors_of("growth_window: 3s\n"),
                ElementsAre(HasSubstr("test.yaml:1:1: growth_window")));
    EXPECT_TRUE(errors_of("sample_interval: 2s\ngrowth_window: 4s\n").empty());
}

TEST(ConfigParser, EmptyDocumentIsEmptyConfig) {
    auto loaded = load_config_text("", "empty.yaml");
    EXPECT_TRUE(loaded.ok());
    EXPECT_TRUE(loaded.config.workers.empty());
}

}  // namespace
}  // namespace infervisor
