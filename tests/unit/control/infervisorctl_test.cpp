// The real infervisorctl binary against a ControlServer with a FakeSupervisor.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ctl_process.h"
#include "server_fixture.h"

namespace infervisor {
namespace {

using nlohmann::json;
using testing::CtlOptions;
using testing::CtlResult;
using testing::FakeSupervisor;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_ctl;
using testing::ServerFixture;

class InfervisorctlTest : public ::testing::Test {
  protected:
    CtlResult ctl(std::vector<std::string> args, CtlOptions options = {}) {
        args.insert(args.begin(), {"--socket", server.socket_path().string()});
        return run_ctl(args, options);
    }

    ServerFixture server;
};

TEST_F(InfervisorctlTest, StatusPrintsATable) {
    auto r = ctl({"status"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("NAME"));
    EXPECT_THAT(r.out, HasSubstr("llama"));
    EXPECT_THAT(r.out, HasSubstr("4242"));
    EXPECT_THAT(r.out, HasSubstr("whisper"));
    EXPECT_THAT(r.out, Not(HasSubstr("\x1b[")));  // not a terminal: no colour
}

// Issue 27, point 8: the table was ~125 columns; at 80 every row wrapped.
TEST_F(InfervisorctlTest, TheStatusTableFits80ColumnsAndOWideHasTheRest) {
    server.on_loop([](FakeSupervisor& fake) {
        auto& w = fake.add_worker("whisper-large-v3", "running");
        w.phase = "loading";  // the widest state: "running (loading)"
        w.main_pid = 4194304;
        w.uptime_usec = 3 * 86400ull * 1000000;
        w.memory_current = 15ull << 30;
        w.memory_max = 17ull << 30;
        w.memory_pressure_some_avg10 = 12.34;
        w.restarts = 123;
        w.last_exit = "killed by SIGKILL (memory.max)";
        w.probes = {ProbeStatus{"startup", "GET http://127.0.0.1:8080/health", "unknown", true}};
        fake.add_worker("broken", "failed").state_reason =
            "start limit hit: 5 starts within 10s; the last: could not start: execve: No such "
            "file or directory";
    });
    auto narrow = ctl({"status"});
    std::istringstream lines(narrow.out);
    std::string line;
    bool table = true;
    while (std::getline(lines, line)) {
        if (line.empty()) table = false;  // the notes follow the table
        if (table) {
            EXPECT_LE(line.size(), 80u) << line;
        }
    }
    EXPECT_THAT(narrow.out, Not(HasSubstr("LAST EXIT")));
    EXPECT_THAT(narrow.out, HasSubstr("running (loading)"));
    // What the table has no room for, under it.
    EXPECT_THAT(narrow.out, HasSubstr("\nbroken: failed (start limit hit: 5 starts within 10s; "
                                      "the last: could not start: execve: No such file"));
    EXPECT_THAT(narrow.out, HasSubstr("whisper-large-v3: running (loading); probes: startup "
                                      "waiting\n"));
    auto wide = ctl({"status", "-o", "wide"});
    EXPECT_THAT(wide.out, HasSubstr("LAST EXIT"));
    EXPECT_THAT(wide.out, HasSubstr("killed by SIGKILL (memory.max)"));
    EXPECT_THAT(wide.out, HasSubstr("failed (start limit hit"));
    EXPECT_EQ(ctl({"status", "-o", "tall"}).exit_code, 2);
    // --no-legend is for scripts (the completions read names from it): rows only.
    EXPECT_THAT(ctl({"status", "--no-legend"}).out, Not(HasSubstr("broken: failed")));
}

// Issue 30: a worker's GPU memory (and its cap) is a column of the table
// when some worker has one, and a line of `status NAME`; a host without
// GPUs keeps the table it had.
TEST_F(InfervisorctlTest, TheGpuMemoryOfAWorkerIsShownWhereItIsRead) {
    auto before = ctl({"status"});
    EXPECT_THAT(before.out, Not(HasSubstr("GPU")));
    server.on_loop([](FakeSupervisor& fake) {
        auto& w = fake.add_worker("vllm", "running");
        w.main_pid = 77;
        w.gpu_memory = 6ull << 30;
        w.gpu_memory_max = 10ull << 30;
        w.gpu_utilization = 85;
    });
    auto table = ctl({"status"});
    EXPECT_THAT(table.out, HasSubstr("GPU"));
    EXPECT_THAT(table.out, HasSubstr("6G/10G"));
    auto one = ctl({"status", "vllm"});
    EXPECT_THAT(one.out, HasSubstr("GPU: 6G (gpu.memory_max 10G), compute 85.00%"));
    auto j = json::parse(ctl({"status", "--json", "vllm"}).out);
    EXPECT_EQ(j["workers"][0]["gpu_memory"], 6ull << 30);
    EXPECT_EQ(j["workers"][0]["gpu_memory_max"], 10ull << 30);
}

// Issue 27, point 6: `status NAME` answers what state, since when, why and
// what next, with the worker's newest events under it; JSON has the reason
// and the state's age.
TEST_F(InfervisorctlTest, StatusOfANamedWorkerSaysWhyAndWhatNext) {
    server.on_loop([](FakeSupervisor& fake) {
        auto& w = fake.add_worker("broken", "failed");
        w.state_reason =
            "start limit hit: 5 starts within 10s; the last: could not start: spawn "
            "/usr/bin/nonexistent-server: execve: No such file or directory";
        w.state_age_usec = 90'000'000;
        w.last_exit = "could not start: spawn /usr/bin/nonexistent-server: execve: No such file";
        for (int i = 0; i < 7; ++i)
            fake.emit({1700000000000000 + i * 1000000ull,
                       "broken",
                       "start-failed",
                       "could not start: attempt " + std::to_string(i),
                       {}});
        fake.emit({1700000010000000, "llama", "ready", "running", {}});
        fake.add_worker("batch", "parked").state_reason = "rule 'too-long'";
    });
    auto r = ctl({"status", "broken"});
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_THAT(r.out, HasSubstr("broken - failed\n"));
    EXPECT_THAT(r.out, HasSubstr("State: failed (start limit hit: 5 starts within 10s; the last: "
                                 "could not start: spawn /usr/bin/nonexistent-server: execve: No "
                                 "such file or directory) for 1m30s\n"));
    EXPECT_THAT(r.out, HasSubstr("Next: fix the cause (see its events and `infervisorctl logs "
                                 "broken`), then `infervisorctl start broken`"));
    // Its newest five events, oldest first; no one else's.
    EXPECT_THAT(r.out, Not(HasSubstr("attempt 1\n")));
    EXPECT_THAT(r.out, HasSubstr("broken start-failed: could not start: attempt 2\n"));
    EXPECT_THAT(r.out, HasSubstr("broken start-failed: could not start: attempt 6\n"));
    EXPECT_THAT(r.out, Not(HasSubstr("llama ready")));
    EXPECT_THAT(ctl({"status", "batch"}).out,
                HasSubstr("Next: `infervisorctl start batch` starts it again"));
    auto shown = ctl({"show", "broken"});
    EXPECT_THAT(shown.out, HasSubstr("Next: fix the cause"));
    EXPECT_THAT(shown.out, HasSubstr("attempt 6"));
    auto doc = json::parse(ctl({"status", "--json", "broken"}).out);
    EXPECT_THAT(doc["workers"][0]["state_reason"].get<std::string>(), HasSubstr("execve"));
    EXPECT_EQ(doc["workers"][0]["state_age_usec"], 90'000'000);
    // An unknown name: its error, and no empty table before it.
    auto nope = ctl({"status", "nope"});
    EXPECT_EQ(nope.out, "");
    EXPECT_THAT(nope.err, HasSubstr("no worker named 'nope'"));
}

TEST_F(InfervisorctlTest, StatusSaysWhyAWorkerIsSuspended) {
    server.on_loop([](FakeSupervisor& fake) {
        fake.add_worker("batch", "suspended").state_reason = "rule 'host-thrash'";
    });
    EXPECT_THAT(ctl({"status"}).out, HasSubstr("suspended (rule 'host-thrash')"));
    EXPECT_THAT(ctl({"show", "batch"}).out, HasSubstr("(rule 'host-thrash')"));
    auto doc = json::parse(ctl({"status", "--json", "batch"}).out);
    EXPECT_EQ(doc["workers"][0]["state_reason"], "rule 'host-thrash'");
}

TEST_F(InfervisorctlTest, StatusShowsACheckpointedWorkerWithItsCheckpoint) {
    server.on_loop([](FakeSupervisor& fake) {
        auto& s = fake.add_worker("batch", "checkpointed");
        s.state_reason = "rule 'host-thrash'; checkpoint of 96.0M written 2m ago";
        s.checkpoint = CheckpointStatus{"/var/lib/infervisor/checkpoints/batch/0000000003",
                                        96ull << 20, 120'000'000};
    });
    auto listed = ctl({"status", "batch"});
    EXPECT_EQ(listed.exit_code, 3);  // not running
    EXPECT_THAT(listed.out, HasSubstr("checkpointed (rule 'host-thrash'; checkpoint of 96.0M"));
    auto shown = ctl({"show", "batch"}).out;
    EXPECT_THAT(shown, HasSubstr("batch - checkpointed"));
    EXPECT_THAT(shown, HasSubstr("Checkpoint: /var/lib/infervisor/checkpoints/batch/0000000003 ("));
    auto doc = json::parse(ctl({"status", "--json", "batch"}).out);
    const auto& w = doc["workers"][0];
    EXPECT_EQ(w["state"], "checkpointed");
    EXPECT_EQ(w["checkpoint"]["path"], "/var/lib/infervisor/checkpoints/batch/0000000003");
    EXPECT_EQ(w["checkpoint"]["bytes"], 96ull << 20);
    EXPECT_EQ(w["checkpoint"]["age_usec"], 120'000'000);
    EXPECT_TRUE(doc["workers"][0].contains("checkpoint"));
}

TEST_F(InfervisorctlTest, StatusAsJsonAndForSomeWorkers) {
    auto r = ctl({"status", "--json", "whisper"});
    ASSERT_EQ(r.exit_code, 3) << r.err;  // whisper is stopped
    auto doc = json::parse(r.out);
    ASSERT_EQ(doc["workers"].size(), 1u);
    EXPECT_EQ(doc["workers"][0]["state"], "stopped");
}

TEST_F(InfervisorctlTest, StatusOfNamedWorkersExits3UnlessAllRun) {
    EXPECT_EQ(ctl({"status", "llama"}).exit_code, 0);
    auto stopped = ctl({"status", "llama", "whisper"});
    EXPECT_EQ(stopped.exit_code, 3);
    EXPECT_THAT(stopped.out, HasSubstr("whisper"));  // still shown
    EXPECT_EQ(ctl({"status"}).exit_code, 0);         // no names: a listing, never 3
}

TEST_F(InfervisorctlTest, GlobalOptionsBeforeOrAfterTheCommand) {
    auto before = ctl({"--json", "status"});
    ASSERT_EQ(before.exit_code, 0) << before.err;
    EXPECT_EQ(json::parse(before.out)["workers"].size(), 2u);
    auto after = ctl({"show", "llama", "--json"});
    EXPECT_EQ(json::parse(after.out)["spec"]["name"], "llama");
    auto bare = ctl({"status", "--no-legend"});
    EXPECT_EQ(bare.exit_code, 0);
    EXPECT_THAT(bare.out, Not(HasSubstr("NAME")));
    EXPECT_EQ(bare.out.rfind("llama", 0), 0u) << bare.out;
    EXPECT_EQ(ctl({"--no-pager", "--no-legend", "status"}).out, bare.out);
}

TEST_F(InfervisorctlTest, AnUnknownCommandIsNamed) {
    auto r = ctl({"bogus"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, "infervisorctl: unknown command 'bogus' (see 'infervisorctl --help')\n");
    EXPECT_EQ(ctl({"--json", "frobnicate", "llama"}).exit_code, 2);
}

TEST_F(InfervisorctlTest, AMisspeltCommandNamesTheOneMeant) {
    auto r = ctl({"statsu"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err,
              "infervisorctl: unknown command 'statsu' (did you mean 'status'?) (see "
              "'infervisorctl --help')\n");
    EXPECT_THAT(ctl({"--json", "relaod"}).err, HasSubstr("(did you mean 'reload'?)"));
    EXPECT_THAT(ctl({"evnets", "-f"}).err, HasSubstr("(did you mean 'events'?)"));
}

// The command's own options and the global ones (taken after the command).
TEST_F(InfervisorctlTest, AMisspeltOptionNamesTheOneMeant) {
    auto r = ctl({"status", "--jsno"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err,
              "infervisorctl: the following argument was not expected: --jsno (did you mean "
              "'--json'?)\n(see 'infervisorctl status --help')\n");
    EXPECT_THAT(ctl({"events", "--sinse", "1h"}).err, HasSubstr("(did you mean '--since'?)"));
    EXPECT_THAT(ctl({"status", "--no-pagr=1"}).err, HasSubstr("(did you mean '--no-pager'?)"));
    auto far = ctl({"status", "--zzzzzz"});
    EXPECT_EQ(far.exit_code, 2);
    EXPECT_THAT(far.err, Not(HasSubstr("did you mean")));
}

TEST_F(InfervisorctlTest, LongOutputGoesThroughThePagerOnATerminal) {
    std::map<std::string, std::string> sed_pager = {{"SYSTEMD_PAGER", "sed s/^/paged:/"}};
    auto paged = ctl({"status"}, {.stdout_on_pty = true, .env = sed_pager});
    EXPECT_EQ(paged.exit_code, 0);
    EXPECT_THAT(paged.out, HasSubstr("paged:NAME"));
    auto by_pager =
        ctl({"show", "llama"}, {.stdout_on_pty = true, .env = {{"PAGER", "sed s/^/p:/"}}});
    EXPECT_THAT(by_pager.out, HasSubstr("p:        PID: 4242"));
    auto plain = ctl({"status", "--no-pager"}, {.stdout_on_pty = true, .env = sed_pager});
    EXPECT_THAT(plain.out, Not(HasSubstr("paged:")));
    auto cat = ctl({"status"}, {.stdout_on_pty = true, .env = {{"SYSTEMD_PAGER", "cat"}}});
    EXPECT_THAT(cat.out, HasSubstr("NAME"));
    auto pipe = ctl({"status"}, {.env = sed_pager});  // not a terminal: no pager
    EXPECT_THAT(pipe.out, Not(HasSubstr("paged:")));
}

// Issue 26, defect 10: `less` without LESSSECURE lets a sudoers rule that
// allows only infervisorctl escape to a root shell with `!sh`.
TEST_F(InfervisorctlTest, ThePagerRunsInLessSecureMode) {
    std::map<std::string, std::string> env = {
        {"SYSTEMD_PAGER", "sh -c 'echo pager-sees-LESSSECURE=$LESSSECURE; cat'"},
        {"SYSTEMD_PAGERSECURE", "0"},
        {"LESSSECURE", "0"}};
    auto paged = ctl({"status"}, {.stdout_on_pty = true, .env = env});
    EXPECT_THAT(paged.out, HasSubstr("pager-sees-LESSSECURE=1"));
    // Under sudo the caller's own pager command is not run as root at all.
    std::map<std::string, std::string> sudo = {{"SYSTEMD_PAGER", "sed s/^/paged:/"},
                                               {"SUDO_UID", "1000"}};
    auto under_sudo = ctl({"status"}, {.stdout_on_pty = true, .env = sudo});
    EXPECT_EQ(under_sudo.exit_code, 0);
    EXPECT_THAT(under_sudo.out, HasSubstr("NAME"));
    EXPECT_THAT(under_sudo.out, Not(HasSubstr("paged:")));
}

TEST_F(InfervisorctlTest, UnknownWorkersExitWith3) {
    auto status = ctl({"status", "llama", "nope"});
    EXPECT_EQ(status.exit_code, 3);
    EXPECT_THAT(status.err, HasSubstr("no worker named 'nope'"));
    EXPECT_EQ(ctl({"show", "nope"}).exit_code, 3);
    EXPECT_EQ(ctl({"stop", "llama", "nope"}).exit_code, 3);
    EXPECT_EQ(ctl({"kill", "nope"}).exit_code, 3);
}

TEST_F(InfervisorctlTest, ShowsOneWorker) {
    auto r = ctl({"show", "llama"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("llama - running"));
    EXPECT_THAT(r.out, HasSubstr("/usr/bin/llama"));
    auto j = ctl({"show", "--json", "llama"});
    EXPECT_EQ(json::parse(j.out)["spec"]["name"], "llama");
}

TEST_F(InfervisorctlTest, StartsStopsRestartsAndKills) {
    EXPECT_EQ(ctl({"stop", "llama"}).exit_code, 0);
    EXPECT_EQ(json::parse(ctl({"status", "--json", "llama"}).out)["workers"][0]["state"],
              "stopped");
    EXPECT_EQ(ctl({"start", "llama", "whisper"}).exit_code, 0);
    EXPECT_EQ(ctl({"restart", "whisper"}).exit_code, 0);
    EXPECT_EQ(ctl({"kill", "llama"}).exit_code, 0);
    EXPECT_EQ(ctl({"kill", "--signal", "KILL", "llama"}).exit_code, 0);
    EXPECT_EQ(ctl({"kill", "-s", "SIGUSR1", "llama"}).exit_code, 0);
    EXPECT_EQ(ctl({"checkpoint", "llama", "whisper"}).exit_code, 0);
    EXPECT_EQ(ctl({"checkpoint", "nope"}).exit_code, 3);
    EXPECT_EQ(ctl({"suspend", "whisper"}).exit_code, 0);
    EXPECT_EQ(ctl({"resume", "whisper"}).exit_code, 0);
    EXPECT_EQ(ctl({"resume", "nope"}).exit_code, 3);
    server.on_loop([](FakeSupervisor& fake) {
        EXPECT_EQ(fake.actions,
                  (std::vector<std::string>{"stop llama", "start llama whisper", "restart whisper",
                                            "kill llama 15", "kill llama 9", "kill llama 10",
                                            "checkpoint llama whisper", "suspend whisper",
                                            "resume whisper"}));
    });
}

TEST_F(InfervisorctlTest, UsageErrorsExitWith2) {
    EXPECT_EQ(run_ctl({}).exit_code, 2);
    EXPECT_EQ(ctl({"frobnicate"}).exit_code, 2);
    EXPECT_EQ(ctl({"stop"}).exit_code, 2);
    EXPECT_EQ(ctl({"kill", "--signal", "NOPE", "llama"}).exit_code, 2);
    EXPECT_EQ(ctl({"config"}).exit_code, 2);
    server.on_loop([](FakeSupervisor& fake) { EXPECT_TRUE(fake.actions.empty()); });
}

TEST_F(InfervisorctlTest, HelpHasExitCodesAndExamples) {
    auto top = run_ctl({"--help"});
    EXPECT_EQ(top.exit_code, 0);
    EXPECT_THAT(top.out, HasSubstr("4 daemon not running"));
    auto stop = run_ctl({"stop", "--help"});
    EXPECT_EQ(stop.exit_code, 0);
    EXPECT_THAT(stop.out, HasSubstr("Examples:"));
    EXPECT_EQ(run_ctl({"--version"}).exit_code, 0);
}

TEST_F(InfervisorctlTest, ADaemonThatIsNotRunningExitsWith4) {
    auto r = run_ctl({"--socket", "/nonexistent/io.infervisor", "status"});
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_THAT(r.err, HasSubstr("not running"));
}

TEST_F(InfervisorctlTest, TheSocketMayComeFromTheEnvironment) {
    auto r = run_ctl({"status"}, {.env = {{"INFERVISOR_SOCKET", server.socket_path()}}});
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

// Issue 10, defect 3: `show` as an unprivileged user lists the environment's
// names but never its values; root sees them.
TEST_F(InfervisorctlTest, ShowHidesEnvironmentValuesFromUnprivilegedUsers) {
    CtlOptions nobody{.as_nobody = true};
    auto text = ctl({"show", "llama"}, nobody);
    EXPECT_EQ(text.exit_code, 0) << text.err;
    EXPECT_THAT(text.out, HasSubstr("HF_TOKEN"));
    EXPECT_THAT(text.out, Not(HasSubstr("hf_secret_of_llama")));
    EXPECT_THAT(text.out, HasSubstr("environment values are hidden"));
    auto as_json = ctl({"show", "--json", "llama"}, nobody);
    EXPECT_THAT(as_json.out, Not(HasSubstr("hf_secret_of_llama")));
    EXPECT_TRUE(json::parse(as_json.out)["spec"]["environment"]["HF_TOKEN"].is_null());
    auto root = ctl({"show", "llama"});
    EXPECT_THAT(root.out, HasSubstr("hf_secret_of_llama"));
    EXPECT_THAT(root.out, Not(HasSubstr("hidden")));
}

TEST_F(InfervisorctlTest, ACheckTheDaemonCannotRunNowSaysWhy) {
    server.on_loop([](FakeSupervisor& fake) { fake.refuse_validation = "too many checks"; });
    auto r = ctl({"config", "check", "-"}, {.stdin_text = "ok\n"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("could not check the configuration: too many checks"));
}

TEST_F(InfervisorctlTest, AConfigTooLargeToSendIsRefusedByTheClient) {
    auto r = ctl({"config", "check", "-"}, {.stdin_text = std::string(2 << 20, '#')});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("too large to check over the control socket"));
    // Nothing was sent: the daemon saw a connection open and close, no call.
    // (It sees the close when its loop gets to it: no count right away.)
    EXPECT_TRUE(server.eventually(
        [](FakeSupervisor&, ControlServer& s) { return s.connection_count() == 0; }));
    server.on_loop([](FakeSupervisor& fake) { EXPECT_EQ(fake.last_validation_caller.pid, 0); });
}

// Issue 27, point 4: an action may wait long (a checkpoint up to 2 min);
// --timeout bounds the wait and says that the daemon goes on.
TEST_F(InfervisorctlTest, AnActionsWaitIsBoundedByTimeout) {
    server.on_loop([](FakeSupervisor& fake) { fake.hold_actions = true; });
    auto r = ctl({"restart", "--timeout", "200ms", "llama"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("infervisorctl: no answer within 200ms; the restart goes on in "
                                 "the daemon"));
    auto bad = ctl({"start", "--timeout", "soon", "llama"});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_THAT(bad.err, HasSubstr("--timeout: expected a duration such as 30s or 5m, not 'soon'"));
    server.on_loop([](FakeSupervisor& fake) {
        fake.hold_actions = false;
        fake.complete_pending();
    });
}

TEST_F(InfervisorctlTest, UnprivilegedUsersMayReadButNotChange) {
    CtlOptions nobody{.as_nobody = true};
    EXPECT_EQ(ctl({"status"}, nobody).exit_code, 0);
    auto stop = ctl({"stop", "llama"}, nobody);
    EXPECT_EQ(stop.exit_code, 5);
    EXPECT_THAT(stop.err, HasSubstr("permission denied"));
    EXPECT_EQ(ctl({"reload"}, nobody).exit_code, 5);
    EXPECT_EQ(ctl({"kill", "llama"}, nobody).exit_code, 5);
    server.on_loop([](FakeSupervisor& fake) { EXPECT_TRUE(fake.actions.empty()); });
}

// Issue 32: drain brings the workers down and says how each went; status
// says the host is drained; undrain names the workers it starts again.
TEST_F(InfervisorctlTest, DrainSaysHowEachWorkerCameDownAndUndrainWhatItStarts) {
    auto drained = ctl({"drain"});
    EXPECT_EQ(drained.exit_code, 0) << drained.err;
    EXPECT_EQ(drained.out,
              "llama: stopped\nThe host is drained: no worker starts until 'infervisorctl "
              "undrain'.\n");
    auto status = ctl({"status"});
    EXPECT_THAT(status.out, ::testing::StartsWith("The host is drained (infervisorctl drain)"));
    auto json_status = ctl({"--json", "status"});
    EXPECT_EQ(nlohmann::json::parse(json_status.out).value("drained", false), true);
    auto again = ctl({"--json", "drain"});
    EXPECT_EQ(nlohmann::json::parse(again.out), nlohmann::json::parse(R"({"steps": []})"));
    auto undrained = ctl({"undrain"});
    EXPECT_EQ(undrained.exit_code, 0) << undrained.err;
    EXPECT_EQ(undrained.out, "starting llama\n");
    EXPECT_EQ(ctl({"undrain"}).out,
              "no worker to start (the host was not drained, or none was up)\n");
    EXPECT_EQ(nlohmann::json::parse(ctl({"--json", "status"}).out).value("drained", true), false);
    server.on_loop([](FakeSupervisor& fake) {
        EXPECT_THAT(fake.actions, ::testing::ElementsAre("drain", "drain", "undrain", "undrain"));
    });
    EXPECT_EQ(ctl({"drain"}, CtlOptions{.as_nobody = true}).exit_code, 5);
    EXPECT_EQ(ctl({"drain", "--timeout", "soon"}).exit_code, 2);
}

TEST_F(InfervisorctlTest, ReloadPrintsChangesOrErrors) {
    server.on_loop([](FakeSupervisor& fake) {
        fake.next_reload = {true,
                            true,
                            {},
                            {"new"},
                            {},
                            {},
                            {"worker 'new': memory.reserve 800G can "
                             "never fit on this host (RAM 22G)"}};
    });
    auto ok = ctl({"reload"});
    EXPECT_EQ(ok.exit_code, 0);
    EXPECT_THAT(ok.out, HasSubstr("added new"));
    EXPECT_THAT(ok.err, HasSubstr("warning: worker 'new': memory.reserve 800G can never fit"));
    server.on_loop([](FakeSupervisor& fake) {
        fake.next_reload = {false, false, {"/etc/infervisor/infervisor.yaml:3:5: unknown key"},
                            {},    {},    {}};
    });
    auto bad = ctl({"reload"});
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_THAT(bad.err, HasSubstr("infervisor.yaml:3:5: unknown key"));
}

TEST_F(InfervisorctlTest, ReloadDryRunSaysWhatWouldChangeAndAppliesNothing) {
    server.on_loop([](FakeSupervisor& fake) {
        fake.next_reload = {true, true, {}, {"new"}, {"old"}, {"llama"}, {}};
    });
    auto r = ctl({"reload", "--dry-run"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "would add new\nwould remove old\nwould change llama\n");
    EXPECT_THAT(r.err, HasSubstr("dry run: nothing was applied"));
    auto json_out = ctl({"reload", "--dry-run", "--json"});
    EXPECT_EQ(json_out.exit_code, 0) << json_out.err;
    auto parsed = nlohmann::json::parse(json_out.out);
    EXPECT_EQ(parsed["applied"], false);
    EXPECT_EQ(parsed["added"], nlohmann::json({"new"}));
    server.on_loop([](FakeSupervisor& fake) {
        EXPECT_EQ(fake.actions, (std::vector<std::string>{"reload --dry-run", "reload --dry-run"}));
        fake.next_reload = {false, false, {"/etc/infervisor/infervisor.yaml:3:5: bad"}, {}, {},
                            {},    {}};
    });
    auto bad = ctl({"reload", "--dry-run"});
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_THAT(bad.err, HasSubstr("infervisor.yaml:3:5: bad"));
    server.on_loop(
        [](FakeSupervisor& fake) { fake.next_reload = {true, true, {}, {}, {}, {}, {}}; });
    EXPECT_THAT(ctl({"reload", "--dry-run"}).out, HasSubstr("no worker would change"));
}

TEST_F(InfervisorctlTest, ConfigCheckGoesThroughTheDaemon) {
    testing::TempDir dir;
    auto good = dir.write("good.yaml", "workers: []\n");
    auto bad = dir.write("bad.yaml", "ok\nbad\n");
    auto r = ctl({"config", "check", good.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, good.string() + ": OK\n");  // no workers.d next to it: no drop-ins
    auto b = ctl({"config", "check", bad.string()});
    EXPECT_EQ(b.exit_code, 1);
    EXPECT_THAT(b.out, HasSubstr(bad.string() + ":2:1: bad line"));
    auto in = ctl({"config", "check", "-"}, {.stdin_text = "bad\n"});
    EXPECT_EQ(in.exit_code, 1);
    EXPECT_THAT(in.out, HasSubstr("<stdin>:1:1: bad line"));
    // A file it cannot read: the reason, not only "cannot read" (and a
    // directory once ended the client with an uncaught exception).
    auto missing = ctl({"config", "check", (dir.path() / "missing.yaml").string()});
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_THAT(missing.err, HasSubstr("missing.yaml: No such file or directory"));
    auto a_dir = ctl({"config", "check", dir.path().string()});
    EXPECT_EQ(a_dir.exit_code, 1);
    EXPECT_THAT(a_dir.err, HasSubstr("is not a regular file"));
}

// Issue 27, point 2: `config check MAIN` said OK while a drop-in next to it
// was broken. The drop-ins the daemon would read are checked with it.
TEST_F(InfervisorctlTest, ConfigCheckChecksTheDropinsTheDaemonWouldRead) {
    testing::TempDir dir;
    auto main = dir.write("main.yaml", "ok\n");
    dir.write("workers.d/10-a.yaml", "ok\n");
    dir.write("workers.d/20-b.yaml", "ok\nbad\n");
    auto r = ctl({"config", "check", main.string()});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.out, HasSubstr((dir.path() / "workers.d/20-b.yaml").string() + ":2:1: bad line"));
    dir.write("workers.d/20-b.yaml", "ok\n");
    auto ok = ctl({"config", "check", main.string()});
    EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
    EXPECT_THAT(ok.out, HasSubstr(main.string() + " with 2 drop-in(s) from " +
                                  (dir.path() / "workers.d").string() + ": OK"));
    // Others with --workers-dir; from standard input only with it.
    dir.write("next/a.yaml", "bad\n");
    auto next =
        ctl({"config", "check", "--workers-dir", (dir.path() / "next").string(), main.string()});
    EXPECT_EQ(next.exit_code, 1);
    EXPECT_THAT(next.out, HasSubstr("next/a.yaml:1:1: bad line"));
    auto alone = ctl({"config", "check", "-"}, {.stdin_text = "ok\n"});
    EXPECT_EQ(alone.out, "<stdin>: OK\n");
    auto typo = ctl({"config", "check", "--workers-dir", (dir.path() / "nxt").string(), "-"},
                    {.stdin_text = "ok\n"});
    EXPECT_EQ(typo.exit_code, 1);
    EXPECT_THAT(typo.err, HasSubstr("nxt: No such file or directory"));
    // A drop-in it cannot read is an error, with the reason.
    std::filesystem::create_directories(dir.path() / "workers.d/30-c.yaml");
    auto unreadable = ctl({"config", "check", "--json", main.string()});
    EXPECT_EQ(unreadable.exit_code, 1);
    auto verdict = json::parse(unreadable.out);
    EXPECT_EQ(verdict["valid"], false);
    EXPECT_THAT(verdict["errors"][0].get<std::string>(), HasSubstr("30-c.yaml: cannot read: "));
}

TEST_F(InfervisorctlTest, ConfigCheckWithoutADaemonChecksLocally) {
    testing::TempDir dir;
    auto good = dir.write("good.yaml", "workers: []\n");
    auto bad = dir.write("bad.yaml", "workers: 5\n");
    std::vector<std::string> no_daemon = {"--socket", (dir.path() / "none").string()};
    auto ok = run_ctl({no_daemon[0], no_daemon[1], "config", "check", good.string()});
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
    EXPECT_THAT(ok.out, HasSubstr("OK"));
    EXPECT_THAT(ok.err, HasSubstr("not running"));
    auto b = run_ctl({no_daemon[0], no_daemon[1], "config", "check", "--json", bad.string()});
    EXPECT_EQ(b.exit_code, 1);
    auto verdict = json::parse(b.out);
    EXPECT_EQ(verdict["valid"], false);
    ASSERT_FALSE(verdict["errors"].empty());
    EXPECT_THAT(verdict["errors"][0].get<std::string>(), HasSubstr(bad.string() + ":1:"));
    // The drop-ins too: this one may only define workers.
    auto dropin = dir.write("workers.d/a.yaml", "log_level: debug\n");
    auto d = run_ctl({no_daemon[0], no_daemon[1], "config", "check", good.string()});
    EXPECT_EQ(d.exit_code, 1);
    EXPECT_THAT(d.out, HasSubstr(dropin.string() + ":1:1: unknown key 'log_level'"));
}

// Issue 27, point 12: as a person reads them: in file and line order, each
// mistake once, and the metric meant named.
TEST_F(InfervisorctlTest, ConfigCheckErrorsReadInOrderEachMistakeOnce) {
    testing::TempDir dir;
    auto file = dir.write("w.yaml",
                          "workers:\n"
                          "  - name: llama\n"
                          "    command: [/bin/true]\n"
                          "    memory: {max: 12GG}\n"
                          "    rules:\n"
                          "      - {name: leak, when: memory.grwoth > 10%/min, action: kill}\n"
                          "    colour: red\n");
    std::vector<std::string> no_daemon = {"--socket", (dir.path() / "none").string()};
    auto r = run_ctl({no_daemon[0], no_daemon[1], "config", "check", file.string()});
    EXPECT_EQ(r.exit_code, 1);
    std::string f = file.string();
    EXPECT_EQ(r.out,
              f + ":4:19: 'max': invalid size '12GG': unknown unit 'GG' (use K, M, G or T)\n" + f +
                  ":6:28: 'when' in rule 'leak': unknown metric 'memory.grwoth' (did "
                  "you mean 'memory.growth'?)\n" +
                  f + ":7:5: unknown key 'colour' in worker 'llama'\n");
}

// Issue 27, point 12: valid, but the worker will not start; said, not failed.
TEST_F(InfervisorctlTest, ConfigCheckWarnsOfACommandThatDoesNotExist) {
    testing::TempDir dir;
    auto file = dir.write("w.yaml",
                          "workers:\n"
                          "  - name: llama\n"
                          "    command: [/opt/llama/bin/llama-server]\n"
                          "    memory: {max: 1G}\n");
    std::vector<std::string> no_daemon = {"--socket", (dir.path() / "none").string()};
    auto r = run_ctl({no_daemon[0], no_daemon[1], "config", "check", file.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, file.string() + ": OK\n");
    EXPECT_THAT(r.err, HasSubstr("warning: " + file.string() +
                                 ":3:5: worker 'llama': command[0] "
                                 "'/opt/llama/bin/llama-server' does not exist: starting the "
                                 "worker will fail\n"));
    auto j = run_ctl({no_daemon[0], no_daemon[1], "config", "check", "--json", file.string()});
    auto verdict = json::parse(j.out);
    EXPECT_EQ(verdict["valid"], true);
    ASSERT_EQ(verdict["warnings"].size(), 1u);
    EXPECT_THAT(verdict["warnings"][0].get<std::string>(), HasSubstr("does not exist"));
    EXPECT_THAT(j.err, Not(HasSubstr("warning:")));  // in the JSON, not twice
}

TEST_F(InfervisorctlTest, EventsPastAndFollowed) {
    server.on_loop([](FakeSupervisor& fake) {
        fake.emit({1700000000000000, "llama", "started", "started pid 4242", {}});
        fake.emit({1700000001000000, "llama", "killed", "memory.max", {{"memory_current", "8G"}}});
    });
    auto r = ctl({"events"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_THAT(r.out, HasSubstr("2023-11-14 22:13:20 llama started: started pid 4242\n"));
    EXPECT_THAT(r.out, HasSubstr("llama killed: memory.max (memory_current=8G)"));
    auto j = ctl({"events", "--json", "-n", "1"});
    EXPECT_EQ(json::parse(j.out)["kind"], "killed");

    auto follower = testing::start_ctl(
        {"--socket", server.socket_path().string(), "events", "--follow", "-n", "0"});
    ASSERT_TRUE(server.eventually(
        [](FakeSupervisor& f, ControlServer&) { return f.subscriber_count() == 1; }));
    server.on_loop([](FakeSupervisor& fake) {
        fake.emit({1700000002000000, "whisper", "exited", "exited 1", {}});
    });
    EXPECT_EQ(follower.read_line(), "2023-11-14 22:13:22 whisper exited: exited 1");
    follower.stop();
}

TEST_F(InfervisorctlTest, EventsOfOneWorkerSinceATimeAndNamedAsInTheText) {
    server.on_loop([](FakeSupervisor& fake) {
        fake.emit({1700000000000000, "llama", "started", "started pid 4242", {}});
        fake.emit({1700000001000000, "web", "oom-killed", "over memory.max", {}});
        fake.emit({1700000002000000, "llama", "ready", "ready", {}});
    });
    auto web = ctl({"events", "web"});
    EXPECT_EQ(web.exit_code, 0) << web.err;
    EXPECT_THAT(web.out, HasSubstr("web oom-killed: over memory.max"));
    EXPECT_THAT(web.out, Not(HasSubstr("llama")));
    auto since = ctl({"events", "llama", "--since", "@1700000001"});
    EXPECT_THAT(since.out, HasSubstr("llama ready"));
    EXPECT_THAT(since.out, Not(HasSubstr("started pid")));
    // JSON names the kind as the text does, not as the Varlink enum.
    auto j = ctl({"events", "web", "--json"});
    EXPECT_EQ(json::parse(j.out)["kind"], "oom-killed");
    auto none = ctl({"events", "nobody-here"});
    EXPECT_EQ(none.exit_code, 0);
    EXPECT_EQ(none.out, "-- No entries --\n");
    auto bad = ctl({"events", "--since", "1x"});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_THAT(bad.err, HasSubstr("infervisorctl: --since: expected e.g. 10m"));
}

TEST_F(InfervisorctlTest, EventsFollowSaysSoWhenTheDaemonGoes) {
    auto follower = testing::start_ctl(
        {"--socket", server.socket_path().string(), "events", "--follow", "-n", "0"});
    ASSERT_TRUE(server.eventually(
        [](FakeSupervisor& f, ControlServer&) { return f.subscriber_count() == 1; }));
    server.stop();
    auto ended = follower.wait();
    EXPECT_EQ(ended.exit_code, 0) << ended.err;
    EXPECT_THAT(ended.err, HasSubstr("infervisord closed the connection"));
}

TEST_F(InfervisorctlTest, OptionErrorsSayWhatIsExpected) {
    auto top = ctl({"top", "-i", "-1"});
    EXPECT_EQ(top.exit_code, 2);
    EXPECT_THAT(top.err, HasSubstr("infervisorctl: --iterations: expected a whole number from 0 "
                                   "to 1000000, not '-1'\n(see 'infervisorctl top --help')"));
    auto lines = ctl({"events", "-n", "abc"});
    EXPECT_EQ(lines.exit_code, 2);
    EXPECT_THAT(lines.err,
                HasSubstr("--lines: expected a whole number from 0 to 10000, not 'abc'"));
    auto unknown = ctl({"status", "--bogus"});
    EXPECT_EQ(unknown.exit_code, 2);
    EXPECT_THAT(unknown.err, HasSubstr("infervisorctl: the following argument was not expected"));
}

TEST_F(InfervisorctlTest, JsonIsRefusedWhereThereIsNoneAndGivenByReload) {
    for (auto args : std::vector<std::vector<std::string>>{
             {"--json", "restart", "llama"}, {"kill", "--json", "llama"}, {"--json", "top"}}) {
        auto r = ctl(args);
        EXPECT_EQ(r.exit_code, 2) << args[1];
        EXPECT_THAT(r.err, HasSubstr("has no JSON output")) << args[1];
    }
    server.on_loop([](FakeSupervisor& fake) { EXPECT_TRUE(fake.actions.empty()); });
    auto reload = ctl({"reload", "--json"});
    EXPECT_EQ(reload.exit_code, 0) << reload.err;
    auto changes = json::parse(reload.out);
    EXPECT_TRUE(changes.contains("added") && changes.contains("warnings")) << reload.out;
}

TEST_F(InfervisorctlTest, KillTakesSeveralNamesAllOrNothing) {
    auto typo = ctl({"kill", "llama", "lama"});
    EXPECT_EQ(typo.exit_code, 3);
    EXPECT_THAT(typo.err, HasSubstr("no worker named 'lama'"));
    server.on_loop([](FakeSupervisor& fake) { EXPECT_TRUE(fake.actions.empty()); });
    auto both = ctl({"kill", "-s", "HUP", "llama", "whisper"});
    EXPECT_EQ(both.exit_code, 0) << both.err;
    server.on_loop([](FakeSupervisor& fake) { EXPECT_EQ(fake.actions.size(), 2u); });
}

TEST_F(InfervisorctlTest, TopDrawsTheTable) {
    auto r = ctl({"top", "--iterations", "1"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("infervisor: 2 workers"));
    EXPECT_THAT(r.out, HasSubstr("llama"));
}

TEST_F(InfervisorctlTest, ColourOnlyOnATerminalAndNotWithNoColor) {
    auto tty = ctl({"status", "--no-pager"}, {.stdout_on_pty = true});
    EXPECT_EQ(tty.exit_code, 0);
    EXPECT_THAT(tty.out, HasSubstr("\x1b[32mrunning"));
    auto no_colour =
        ctl({"status", "--no-pager"}, {.stdout_on_pty = true, .env = {{"NO_COLOR", "1"}}});
    EXPECT_THAT(no_colour.out, HasSubstr("running"));
    EXPECT_THAT(no_colour.out, Not(HasSubstr("\x1b[")));
}

// `logs` reads journal files; systemd-journal-remote makes one from export format.
TEST(InfervisorctlLogs, ReadsAWorkersEntriesFromTheJournal) {
    const char* remote = "/lib/systemd/systemd-journal-remote";
    if (::access(remote, X_OK) != 0) GTEST_SKIP() << "needs systemd-journal-remote";
    testing::TempDir dir;
    std::string entries;
    auto entry = [&](int i, const std::string& fields) {
        entries += "__REALTIME_TIMESTAMP=" + std::to_string(1700000000000000 + i * 1000000) +
                   "\n__MONOTONIC_TIMESTAMP=" + std::to_string(1000 + i) +
                   "\n_BOOT_ID=0123456789abcdef0123456789abcdef\n" + fields + "\n";
    };
    entry(0, "MESSAGE=loading model\nSYSLOG_IDENTIFIER=infervisor-worker-llama\n_PID=42\n");
    entry(1, "MESSAGE=unrelated\nSYSLOG_IDENTIFIER=cron\n");
    entry(2, "MESSAGE=llama killed\nSYSLOG_IDENTIFIER=infervisord\nINFERVISOR_WORKER=llama\n");
    entry(3, "MESSAGE=whisper says hi\nSYSLOG_IDENTIFIER=infervisor-worker-whisper\n");
    entry(4, "MESSAGE=ready\nSYSLOG_IDENTIFIER=infervisor-worker-llama\n_PID=42\n");
    auto input = dir.write("entries.export", entries);
    auto journal_dir = dir.mkdir("journal");
    std::string make = std::string(remote) + " -o " + (journal_dir / "w.journal").string() +
                       " - < " + input.string() + " 2>/dev/null";
    ASSERT_EQ(std::system(make.c_str()), 0);

    auto all = run_ctl({"logs", "-D", journal_dir.string(), "llama"});
    EXPECT_EQ(all.exit_code, 0) << all.err;
    EXPECT_EQ(all.out,
              "2023-11-14 22:13:20 infervisor-worker-llama[42]: loading model\n"
              "2023-11-14 22:13:22 infervisord: llama killed\n"
              "2023-11-14 22:13:24 infervisor-worker-llama[42]: ready\n");
    auto last = run_ctl({"logs", "-D", journal_dir.string(), "-n", "1", "llama"});
    EXPECT_EQ(last.out, "2023-11-14 22:13:24 infervisor-worker-llama[42]: ready\n");
    auto more_than_there = run_ctl({"logs", "-D", journal_dir.string(), "-n", "9", "llama"});
    EXPECT_EQ(more_than_there.out, all.out);
    auto json_lines = run_ctl({"logs", "--json", "-D", journal_dir.string(), "whisper"});
    EXPECT_EQ(json::parse(json_lines.out)["message"], "whisper says hi");
}

}  // namespace
}  // namespace infervisor
