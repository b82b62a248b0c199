// The worker state file: round trip, and a corrupt or missing file is an
// error, never a crash or a half-read state.
#include "supervise/persisted_worker.h"

#include <gmock/gmock.h>
#include <sys/stat.h>

#include <filesystem>

#include "support/temp_dir.h"

namespace infervisor {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

PersistedWorker full() {
    TimePoint t0{std::chrono::hours(1000)};
    PersistedWorker w;
    w.name = "llama-7b";
    w.config_snapshot = "0123456789abcdef";
    w.state = WorkerState::stopping;
    w.pid = 4242;
    w.pid_start_time = 987654321;
    w.started_at = t0 + 5s;
    w.stop_requested = true;
    w.restart_requested = true;
    w.policy_then = Then::park;
    w.policy_rule = "runaway-growth";
    w.restarts.starts = {t0, t0 + 1s, t0 + 5s};
    w.restarts.last_start = t0 + 5s;
    w.restarts.consecutive_failures = 2;
    w.restarts.total_restarts = 7;
    w.host_kills = {t0 + 2s, t0 + 4s};
    w.last_exit = "exited with code 3";
    w.status_text = "serving = 12 req/s";
    w.suspended_by = "rule 'host-thrash'";
    w.suspended_since = t0 + 7s;
    w.suspended_memory = 123456789;
    w.suspended_starting = true;
    w.suspended_engine_slept = false;
    w.suspended_step = "cuda-checkpoint";
    w.checkpoint =
        ParkedCheckpoint{"/var/lib/infervisor/checkpoints/llama-7b/0000000004", 4096, t0 + 3s};
    return w;
}

// A state file as an older daemon wrote it: without the lines that start
// with `prefix`.
std::string without_lines_starting(const std::string& text, const std::string& prefix) {
    std::string out;
    for (size_t pos = 0; pos < text.size();) {
        size_t end = text.find('\n', pos) + 1;
        std::string line = text.substr(pos, end - pos);
        if (line.rfind(prefix, 0) != 0) out += line;
        pos = end;
    }
    return out;
}

TEST(PersistedWorker, RoundTripsEveryField) {
    PersistedWorker w = full();
    auto back = parse_persisted_worker(format_persisted_worker(w));
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_EQ(*back, w);

    PersistedWorker bare;
    bare.name = "b";
    auto bare_back = parse_persisted_worker(format_persisted_worker(bare));
    ASSERT_TRUE(bare_back.ok()) << bare_back.error().message();
    EXPECT_EQ(*bare_back, bare);
}

// The schema's promise to later daemons: a version 1 file exactly as this
// release writes it (a running worker that a rule had asked to restart)
// stays readable. A later release that changes the format keeps this test
// passing; an older release that cannot read a later file adopts the run
// from its cgroup instead (adoption.h).
TEST(PersistedWorker, AVersion1FileAsWrittenTodayStaysReadable) {
    std::string v1 =
        "infervisor-worker-state 1\n"
        "name=llama\n"
        "config_snapshot=3f2a\n"
        "state=running\n"
        "pid=4242\n"
        "pid_start_time=987654\n"
        "started_at_ms=120000\n"
        "stop_requested=0\n"
        "restart_requested=1\n"
        "policy_then=restart\n"
        "policy_rule=runaway-growth\n"
        "starts_ms=100000,120000\n"
        "last_start_ms=120000\n"
        "consecutive_failures=1\n"
        "total_restarts=1\n"
        "last_exit=killed by rule 'runaway-growth'\n"
        "status_text=serving\n"
        "suspended_by=\n"
        "suspended_since_ms=-\n"
        "suspended_memory=-\n"
        "suspended_starting=0\n"
        "checkpoint_path=\n"
        "checkpoint_bytes=-\n"
        "checkpoint_at_ms=-\n";
    auto w = parse_persisted_worker(v1);
    ASSERT_TRUE(w.ok()) << w.error().message();
    EXPECT_EQ(w->name, "llama");
    EXPECT_EQ(w->state, WorkerState::running);
    EXPECT_EQ(w->pid, 4242);
    EXPECT_EQ(w->pid_start_time, 987654u);
    EXPECT_TRUE(w->restart_requested);
    EXPECT_EQ(w->policy_rule, "runaway-growth");
    EXPECT_EQ(w->restarts.total_restarts, 1u);
    EXPECT_EQ(format_persisted_worker(*w), v1);  // and this release writes it the same
    // A later version's file is not taken for this one.
    std::string v2 = "infervisor-worker-state 2" + v1.substr(v1.find('\n'));
    EXPECT_FALSE(parse_persisted_worker(v2).ok());
}

// An older daemon wrote no suspension fields: its file still reads (who
// suspended the worker is then unknown), and a garbled one is refused.
TEST(PersistedWorker, SuspensionFieldsAreOptionalButNeverGarbled) {
    std::string older = without_lines_starting(format_persisted_worker(full()), "suspended_");
    auto back = parse_persisted_worker(older);
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_EQ(back->suspended_by, "");
    EXPECT_FALSE(back->suspended_since.has_value());
    EXPECT_FALSE(back->suspended_memory.has_value());
    EXPECT_FALSE(back->suspended_starting);
    EXPECT_FALSE(back->suspended_engine_slept.has_value()) << "not said: a wake is asked for";
    EXPECT_EQ(back->suspended_step, "");
    for (const char* bad :
         {"suspended_since_ms=soon\n", "suspended_memory=-5\n", "suspended_starting=yes\n",
          "suspended_engine_slept=2\n", "suspended_step=criu\n"}) {
        auto garbled = parse_persisted_worker(older + bad);
        EXPECT_FALSE(garbled.ok()) << bad;
    }
}

// The host kills (host_kill_guard.h) are new in this release: a file
// without them reads as none; a garbled list is an error.
TEST(PersistedWorker, HostKillsAreOptionalButNeverGarbled) {
    std::string text = format_persisted_worker(full());
    EXPECT_THAT(text, HasSubstr("host_kills_ms=3600002000,3600004000\n"));
    std::string older = without_lines_starting(text, "host_kills_ms=");
    auto back = parse_persisted_worker(older);
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_TRUE(back->host_kills.empty());
    for (const char* bad : {"host_kills_ms=12,soon\n", "host_kills_ms=,\n", "host_kills_ms=-\n"})
        EXPECT_FALSE(parse_persisted_worker(older + bad).ok()) << bad;
}

TEST(PersistedWorker, ANewlineInAStatusTextCannotForgeAField) {
    PersistedWorker w = full();
    w.status_text = "ok\nstate=parked\npid=1";
    auto back = parse_persisted_worker(format_persisted_worker(w));
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_EQ(back->state, WorkerState::stopping);
    EXPECT_EQ(back->pid, 4242);
    EXPECT_EQ(back->status_text, "ok state=parked pid=1");
}

TEST(PersistedWorker, CorruptFilesAreErrors) {
    std::string good = format_persisted_worker(full());
    auto without = [&](const std::string& key) {
        std::string text = good;
        size_t at = text.find("\n" + key + "=");
        size_t end = text.find('\n', at + 1);
        return text.erase(at, end - at);
    };
    auto replaced = [&](const std::string& key, const std::string& value) {
        std::string text = good;
        size_t at = text.find("\n" + key + "=") + key.size() + 2;
        size_t end = text.find('\n', at);
        return text.replace(at, end - at, value);
    };
    for (const std::string& text : {
             std::string(),
             std::string("garbage"),
             "infervisor-worker-state 2\n" + good.substr(good.find('\n') + 1),
             good.substr(0, good.size() - 1),  // no final newline
             good + "no equals sign\n",
             without("name"),
             without("state"),
             without("pid"),
             without("started_at_ms"),
             without("total_restarts"),
             replaced("name", "../etc"),
             replaced("state", "sleeping"),
             replaced("pid", "-3"),
             replaced("pid", "12x"),
             replaced("pid_start_time", ""),
             replaced("started_at_ms", "soon"),
             replaced("stop_requested", "yes"),
             replaced("policy_then", "explode"),
             replaced("starts_ms", "1,,2"),
             replaced("consecutive_failures", "-1"),
             std::string(kMaxStateFileSize + 1, 'x'),
         })
        EXPECT_FALSE(parse_persisted_worker(text).ok()) << text;
}

TEST(PersistedWorker, UnknownKeysAreIgnored) {
    std::string text = format_persisted_worker(full()) + "added_by_a_newer_daemon=1\n";
    auto back = parse_persisted_worker(text);
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_EQ(*back, full());
}

TEST(PersistedWorker, IsWrittenAtomicallyAndReadBack) {
    testing::TempDir tmp;
    auto dir = tmp.path() / "state";
    ASSERT_TRUE(write_persisted_worker(dir, full()).ok());
    struct stat st {};
    ASSERT_EQ(::stat(dir.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    auto back = read_persisted_worker(dir, "llama-7b");
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_EQ(*back, full());
    EXPECT_FALSE(std::filesystem::exists(dir / ".llama-7b.tmp"));
    EXPECT_EQ(persisted_worker_names(dir), std::vector<std::string>{"llama-7b"});

    PersistedWorker changed = full();
    changed.state = WorkerState::parked;
    ASSERT_TRUE(write_persisted_worker(dir, changed).ok());
    EXPECT_EQ(read_persisted_worker(dir, "llama-7b")->state, WorkerState::parked);

    remove_persisted_worker(dir, "llama-7b");
    auto gone = read_persisted_worker(dir, "llama-7b");
    ASSERT_FALSE(gone.ok());
    EXPECT_EQ(gone.error().code, ENOENT);
    EXPECT_TRUE(persisted_worker_names(dir).empty());
}

TEST(PersistedWorker, AFileForAnotherNameOrCorruptOnDiskIsRefused) {
    testing::TempDir tmp;
    auto dir = tmp.mkdir("state");
    tmp.write("state/a", format_persisted_worker(full()));  // says llama-7b
    auto other = read_persisted_worker(dir, "a");
    ASSERT_FALSE(other.ok());
    EXPECT_THAT(other.error().message(), HasSubstr("names worker 'llama-7b'"));
    tmp.write("state/b", std::string(64 * 1024, 'x'));
    auto big = read_persisted_worker(dir, "b");
    ASSERT_FALSE(big.ok());
    EXPECT_NE(big.error().code, ENOENT);
    tmp.write("state/.hidden", "x");
    tmp.write("state/-bad", "x");
    EXPECT_EQ(persisted_worker_names(dir), (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace infervisor
