// `infervisorctl events -D DIR [--hostname H]`: infervisord's events read
// back from journal files, as a systemd-journal-remote collector holds
// them for several hosts; the real binary on real journal files (made by
// systemd-journal-remote from export format), and the matches it adds.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>

#include "ctl_process.h"
#include "journal/event.h"
#include "journal_events.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::run_ctl;

std::string export_entry(int second, const std::string& fields) {
    return "__REALTIME_TIMESTAMP=" + std::to_string(1700000000000000 + second * 1000000) +
           "\n__MONOTONIC_TIMESTAMP=" + std::to_string(1000 + second) +
           "\n_BOOT_ID=0123456789abcdef0123456789abcdef\n" + fields + "\n";
}

// An event entry as JournalWriter writes it, from `host`.
std::string event_entry(int second, const std::string& host, EventKind kind,
                        const std::string& worker, const std::string& message,
                        const std::string& extra = "") {
    std::string fields =
        "MESSAGE=" + (worker.empty() ? "" : worker + ": ") + message +
        "\nMESSAGE_ID=" + std::string(event_message_id(kind)) +
        "\nSYSLOG_IDENTIFIER=infervisord\nINFERVISOR_EVENT=" + std::string(event_name(kind)) +
        "\n_HOSTNAME=" + host + "\n" + extra;
    if (!worker.empty()) fields += "INFERVISOR_WORKER=" + worker + "\n";
    return export_entry(second, fields);
}

class EventsFromJournalFiles : public ::testing::Test {
  protected:
    void SetUp() override {
        const char* remote = "/lib/systemd/systemd-journal-remote";
        ASSERT_EQ(::access(remote, X_OK), 0)
            << "needs systemd-journal-remote (Debian package systemd-journal-remote)";
        std::string entries =
            event_entry(0, "gpu-a", EventKind::started, "llama", "started (pid 42)",
                        "INFERVISOR_PID=42\n") +
            export_entry(1,
                         "MESSAGE=a log line, not an event\nSYSLOG_IDENTIFIER=infervisord\n"
                         "_HOSTNAME=gpu-a\n") +
            event_entry(2, "gpu-b", EventKind::oom_killed, "llama", "OOM-killed") +
            event_entry(3, "gpu-b", EventKind::daemon_started, "", "daemon up") +
            export_entry(4,
                         "MESSAGE=worker output\nSYSLOG_IDENTIFIER=infervisor-worker-llama\n"
                         "INFERVISOR_WORKER=llama\n_HOSTNAME=gpu-a\n") +
            event_entry(5, "gpu-a", EventKind::stopped, "whisper", "stopped");
        auto input = dir.write("entries.export", entries);
        journal_dir = dir.mkdir("remote").string();
        std::string make = std::string(remote) + " -o " + journal_dir +
                           "/remote-hosts.journal - < " + input.string() + " 2>/dev/null";
        ASSERT_EQ(std::system(make.c_str()), 0);
    }

    testing::TempDir dir;
    std::string journal_dir;
};

TEST_F(EventsFromJournalFiles, ShowsEveryHostsEventsWithTheHostAndNothingElse) {
    auto all = run_ctl({"events", "-D", journal_dir});
    EXPECT_EQ(all.exit_code, 0) << all.err;
    EXPECT_EQ(all.out,
              "2023-11-14 22:13:20 gpu-a llama started: started (pid 42) (PID=42)\n"
              "2023-11-14 22:13:22 gpu-b llama oom-killed: OOM-killed\n"
              "2023-11-14 22:13:23 gpu-b - daemon-started: daemon up\n"
              "2023-11-14 22:13:25 gpu-a whisper stopped: stopped\n");
}

TEST_F(EventsFromJournalFiles, HostnameKeepsThatHostsEventsOnly) {
    auto b = run_ctl({"events", "-D", journal_dir, "--hostname", "gpu-b"});
    EXPECT_EQ(b.exit_code, 0) << b.err;
    EXPECT_EQ(b.out,
              "2023-11-14 22:13:22 gpu-b llama oom-killed: OOM-killed\n"
              "2023-11-14 22:13:23 gpu-b - daemon-started: daemon up\n");
    // Repeated: either host; a worker name after it is a worker, not a host.
    auto llama = run_ctl(
        {"events", "-D", journal_dir, "--hostname", "gpu-a", "--hostname", "gpu-b", "llama"});
    EXPECT_EQ(llama.out,
              "2023-11-14 22:13:20 gpu-a llama started: started (pid 42) (PID=42)\n"
              "2023-11-14 22:13:22 gpu-b llama oom-killed: OOM-killed\n");
    auto none = run_ctl({"events", "-D", journal_dir, "--hostname", "gpu-c"});
    EXPECT_EQ(none.exit_code, 0) << none.err;
    EXPECT_EQ(none.out, "-- No entries --\n");
}

TEST_F(EventsFromJournalFiles, JsonNamesTheHostAndLinesAndSinceNarrow) {
    auto last = run_ctl({"events", "-D", journal_dir, "-n", "1", "--json"});
    EXPECT_EQ(last.exit_code, 0) << last.err;
    auto value = nlohmann::json::parse(last.out);
    EXPECT_EQ(value["host"], "gpu-a");
    EXPECT_EQ(value["worker"], "whisper");
    EXPECT_EQ(value["kind"], "stopped");
    EXPECT_EQ(value["message"], "stopped");
    auto since = run_ctl({"events", "-D", journal_dir, "--since", "@1700000003"});
    EXPECT_EQ(since.out,
              "2023-11-14 22:13:23 gpu-b - daemon-started: daemon up\n"
              "2023-11-14 22:13:25 gpu-a whisper stopped: stopped\n");
}

TEST_F(EventsFromJournalFiles, HostnameWithoutADirectoryAndAMissingDirectoryAreErrors) {
    auto no_dir = run_ctl({"events", "--hostname", "gpu-a"});
    EXPECT_EQ(no_dir.exit_code, 2);
    EXPECT_THAT(no_dir.err, HasSubstr("--hostname requires --directory"));
    auto missing = run_ctl({"events", "-D", journal_dir + "/nonexistent"});
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_THAT(missing.err, HasSubstr("cannot open the journal in " + journal_dir));
    EXPECT_EQ(missing.out, "");
}

TEST(EventJournalMatches, EveryEventKindThenTheWorkersAndHosts) {
    auto matches = cli::event_journal_matches({"llama"}, {"gpu-a", "gpu-b"});
    ASSERT_EQ(matches.size(), static_cast<size_t>(kLastEventKind) + 1 + 3);
    EXPECT_EQ(matches.front(), "MESSAGE_ID=" + std::string(event_message_id(EventKind::started)));
    EXPECT_THAT(matches, Contains("MESSAGE_ID=" + std::string(event_message_id(kLastEventKind))));
    EXPECT_THAT(std::vector<std::string>(matches.end() - 3, matches.end()),
                ElementsAre("INFERVISOR_WORKER=llama", "_HOSTNAME=gpu-a", "_HOSTNAME=gpu-b"));
    EXPECT_EQ(cli::event_journal_matches({}, {}).size(), static_cast<size_t>(kLastEventKind) + 1);
}

}  // namespace
}  // namespace infervisor
