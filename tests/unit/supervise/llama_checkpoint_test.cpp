// `checkpoint: {method: llama-server}` (WorkerCheckpoints with
// WorkerLlamaSlots): the daemon's requests to a real HTTP server in this
// process that answers as llama-server does (its paths, bodies and error
// answers: engine/llama_slots.h) and writes the slot files into the staging
// dir as the server would, as the worker's uid. Asserted: the requests made
// (paths, bodies, order) and the outcome (the journal, the published
// checkpoint and its record, the staging dir). Real checkpoint stores on a
// real file system; fake time for checkpoint.timeout.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <fstream>

#include "engine/llama_slots.h"
#include "supervise/worker_checkpoints.h"
#include "support/fake_clock.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using boost::system::error_code;
using tcp = asio::ip::tcp;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr uid_t kWorkerUid = 61234;

// One request as the server read it: "POST /slots/0?action=save" and its body.
struct Seen {
    std::string line;
    std::string body;
};

// A llama-server stand-in: one request per connection (as the daemon's
// client sends them), answered by `answer` with a whole HTTP response, or
// held without an answer when it returns "".
class FakeLlamaServer {
  public:
    using Answer = std::function<std::string(const Seen&)>;

    FakeLlamaServer(asio::io_context& io, Answer answer)
        : acceptor_(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
          answer_(std::move(answer)) {
        accept();
    }
    int port() const { return acceptor_.local_endpoint().port(); }
    const std::vector<Seen>& seen() const { return seen_; }
    std::vector<std::string> lines() const {
        std::vector<std::string> out;
        for (const auto& s : seen_) out.push_back(s.line);
        return out;
    }

    static std::string json(int status, const std::string& body) {
        return "HTTP/1.1 " + std::to_string(status) +
               " X\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    }

  private:
    void accept() {
        acceptor_.async_accept([this](const error_code& ec, tcp::socket socket) {
            if (ec) return;
            auto s = std::make_shared<tcp::socket>(std::move(socket));
            held_.push_back(s);
            read(s, std::make_shared<std::string>());
            accept();
        });
    }
    void read(std::shared_ptr<tcp::socket> s, std::shared_ptr<std::string> request) {
        auto buffer = std::make_shared<std::array<char, 4096>>();
        s->async_read_some(asio::buffer(*buffer), [this, s, request, buffer](const error_code& ec,
                                                                             size_t n) {
            if (ec) return;
            request->append(buffer->data(), n);
            size_t end = request->find("\r\n\r\n");
            if (end == std::string::npos) return read(s, request);
            size_t length = 0;
            if (size_t at = request->find("Content-Length: "); at != std::string::npos && at < end)
                length = std::stoul(request->substr(at + 16));
            if (request->size() < end + 4 + length) return read(s, request);
            std::string line = request->substr(0, request->find("\r\n"));
            line = line.substr(0, line.rfind(' '));  // without " HTTP/1.1"
            seen_.push_back({line, request->substr(end + 4, length)});
            if (request->find("Authorization: Bearer sekret\r\n") != std::string::npos)
                authorized_ = true;
            std::string response = answer_(seen_.back());
            if (response.empty()) return;  // silent
            asio::async_write(
                *s, asio::buffer(*std::make_shared<std::string>(response)),
                [s, keep = std::make_shared<std::string>(response)](const error_code&, size_t) {
                    error_code ignored;
                    s->close(ignored);
                });
        });
    }

  public:
    bool authorized_ = false;

  private:
    tcp::acceptor acceptor_;
    Answer answer_;
    std::vector<std::shared_ptr<tcp::socket>> held_;
    std::vector<Seen> seen_;
};

struct Emitted {
    EventKind kind;
    std::string message;
    WorkerCheckpoints::Fields fields;

    std::string field(const std::string& name) const {
        for (const auto& [k, v] : fields)
            if (k == name) return v;
        return {};
    }
};

class LlamaCheckpoints : public ::testing::Test {
  protected:
    void SetUp() override {
        paths_.state_dir = dir_.path() / "state";
        dir_.mkdir("models");
        model_ = dir_.write("models/q.gguf", "GGUF weights");
        dir_.write("api-key", "sekret\n");
    }

    // The answers of a llama-server with two slots that saves and restores.
    std::string llama(const Seen& seen) {
        using S = FakeLlamaServer;
        if (seen.line == "GET /props")
            return S::json(200, R"({"default_generation_settings":{"params":{},"n_ctx":4096},)"
                                R"("total_slots":2,"model_path":")" +
                                    model_.string() + R"(","build_info":")" + build_ + R"("})");
        if (seen.line == "GET /slots")
            return S::json(200,
                           R"([{"id":0,"n_ctx":4096,"speculative":false,)"
                           R"("is_processing":false,"id_task":3},)"
                           R"({"id":1,"n_ctx":4096,"speculative":false,"is_processing":false}])");
        for (int id : {0, 1}) {
            std::string file = "slot-" + std::to_string(id) + ".bin";
            uint64_t tokens = id == 0 ? 1745 : tokens1_;
            if (seen.line == "POST /slots/" + std::to_string(id) + "?action=save") {
                if (!save_answer_.empty()) return save_answer_;
                // As the server: into its --slot-save-path, as the worker.
                fs::path path = staging() / file;
                std::ofstream(path) << "GGSQ" << std::string(tokens, 't');
                EXPECT_EQ(::chown(path.c_str(), kWorkerUid, kWorkerUid), 0);
                return S::json(200, R"({"id_slot":)" + std::to_string(id) + R"(,"filename":")" +
                                        file + R"(","n_saved":)" + std::to_string(tokens) +
                                        R"(,"n_written":)" + std::to_string(tokens + 4) +
                                        R"(,"timings":{"save_ms":1.5}})");
            }
            if (seen.line == "POST /slots/" + std::to_string(id) + "?action=restore" &&
                restore_fails_for_ == id)
                // tools/server/server.cpp, handle_slots_action restore: a
                // file llama_state_seq_load_file read nothing from.
                return S::json(400, R"({"error":{"code":400,"message":"Unable to restore slot, )"
                                    R"(no available space in KV cache or invalid slot save )"
                                    R"(file","type":"invalid_request_error"}})");
            if (seen.line == "POST /slots/" + std::to_string(id) + "?action=restore") {
                // The server reads its --slot-save-path + filename: the
                // daemon's link to the sealed file.
                struct stat linked {
                }, sealed{};
                restore_saw_link_ = ::lstat((staging() / file).c_str(), &linked) == 0 &&
                                    ::lstat((published(1) / file).c_str(), &sealed) == 0 &&
                                    linked.st_ino == sealed.st_ino &&
                                    linked.st_dev == sealed.st_dev;
                return S::json(200, R"({"id_slot":)" + std::to_string(id) + R"(,"filename":")" +
                                        file + R"(","n_restored":)" + std::to_string(tokens) +
                                        R"(,"n_read":)" + std::to_string(tokens + 4) +
                                        R"(,"timings":{"restore_ms":0.5}})");
            }
        }
        return S::json(
            404, R"({"error":{"message":"File Not Found","type":"not_found_error","code":404}})");
    }

    fs::path store() const { return paths_.state_dir / "checkpoints/llama"; }
    fs::path staging() const { return store() / "staging"; }
    fs::path published(uint64_t sequence) const {
        return store() / CheckpointStore::sequence_name(sequence);
    }

    std::unique_ptr<WorkerCheckpoints> checkpoints(FakeLlamaServer& server) {
        auto wc = std::make_unique<WorkerCheckpoints>(
            io_, clock_, paths_, "llama", [this](EventKind kind, std::string message, auto fields) {
                events_.push_back({kind, std::move(message), std::move(fields)});
            });
        CheckpointSpec spec;
        spec.method = CheckpointMethod::llama_server;
        spec.timeout = 30s;
        wc->set_spec(spec);
        EngineSpec engine;
        engine.kind = EngineKind::llama_server;
        engine.port = server.port();
        wc->set_engine(engine, dir_.path() / "api-key");
        return wc;
    }
    // A run of the worker, up to running.
    WorkerCheckpoints::RunDirs start_run(WorkerCheckpoints& wc) {
        auto dirs = wc.prepare_run(ProcessIdentity::of(kWorkerUid, kWorkerUid, {}));
        EXPECT_TRUE(dirs) << dirs.error().message();
        wc.run_started([](int, bool) -> Result<void> { return {}; });
        wc.run_ready(clock_.now(), true);
        return dirs ? *dirs : WorkerCheckpoints::RunDirs{};
    }
    void run_until(const std::function<bool()>& done) {
        io_.restart();
        auto guard = asio::make_work_guard(io_);
        while (!done()) io_.run_one();
    }
    const Emitted* last(EventKind kind) const {
        for (auto it = events_.rbegin(); it != events_.rend(); ++it)
            if (it->kind == kind) return &*it;
        return nullptr;
    }
    // A first checkpoint, published.
    void checkpoint_once(WorkerCheckpoints& wc) {
        std::optional<WorkerCheckpoints::Outcome> outcome;
        ASSERT_TRUE(wc.request("infervisorctl", "the worker keeps running",
                               [&](const auto& o) { outcome = o; }));
        run_until([&] { return outcome.has_value(); });
        ASSERT_TRUE(outcome->published) << outcome->detail;
    }

    testing::TempDir dir_;
    Paths paths_;
    fs::path model_;
    std::string build_ = "b6800-1f5accb8";
    std::string save_answer_;     // non-empty: every save is answered so
    uint64_t tokens1_ = 0;        // slot 1's tokens (slot 0 holds 1745)
    int restore_fails_for_ = -1;  // the slot whose restore the server refuses
    bool restore_saw_link_ = false;
    asio::io_context io_;
    FakeClock clock_;
    std::vector<Emitted> events_;
};

TEST_F(LlamaCheckpoints, EverySlotIsSavedThenPublishedWithItsRecord) {
    FakeLlamaServer server(io_, [this](const Seen& s) { return llama(s); });
    auto wc = checkpoints(server);
    start_run(*wc);
    std::optional<WorkerCheckpoints::Outcome> outcome;
    ASSERT_TRUE(wc->request("rule 'growth'", "the worker keeps running",
                            [&](const auto& o) { outcome = o; }));
    run_until([&] { return outcome.has_value(); });

    EXPECT_THAT(server.lines(), ElementsAre("GET /props", "GET /slots", "POST /slots/0?action=save",
                                            "POST /slots/1?action=save"));
    EXPECT_EQ(server.seen()[2].body, R"({"filename":"slot-0.bin"})");
    EXPECT_EQ(server.seen()[3].body, R"({"filename":"slot-1.bin"})");
    EXPECT_TRUE(server.authorized_);  // the api_key credential, as a bearer token

    ASSERT_TRUE(outcome->published) << outcome->detail;
    EXPECT_EQ(outcome->detail, published(1).string());
    const Emitted* written = last(EventKind::checkpoint_written);
    ASSERT_NE(written, nullptr);
    EXPECT_EQ(written->field("METHOD"), "llama-server");
    EXPECT_EQ(written->field("SLOTS_SAVED"), "2");
    EXPECT_EQ(written->field("TOKENS_SAVED"), "1745");
    EXPECT_EQ(written->field("TRIGGER"), "rule 'growth'");
    EXPECT_THAT(written->message, HasSubstr("2 slots with 1745 tokens"));

    // The slot files, sealed (root's), and the daemon's record beside them.
    struct stat st;
    ASSERT_EQ(::lstat((published(1) / "slot-0.bin").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u);
    UniqueFd fd(::open(published(1).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    auto record = read_llama_record(fd.get());
    ASSERT_TRUE(record);
    EXPECT_EQ(record->server.model_path, model_.string());
    EXPECT_EQ(record->server.build_info, "b6800-1f5accb8");
    EXPECT_EQ(record->server.n_ctx, 4096);
    ASSERT_TRUE(record->server.model);
    EXPECT_EQ(record->server.model->size, fs::file_size(model_));
    EXPECT_THAT(record->slots, ElementsAre(LlamaSavedSlot{0, "slot-0.bin", 1745, 1749},
                                           LlamaSavedSlot{1, "slot-1.bin", 0, 4}));
    // Listed as llama-server's (infervisorctl checkpoints), the next restore.
    auto listed = wc->list();
    ASSERT_TRUE(listed);
    ASSERT_EQ(listed->size(), 1u);
    EXPECT_TRUE(listed->back().llama_server);
    EXPECT_FALSE(listed->back().criu);
    EXPECT_TRUE(listed->back().next_restore);
    // The next checkpoint goes into a fresh staging dir, the worker's.
    ASSERT_EQ(::lstat(staging().c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, kWorkerUid);
    EXPECT_TRUE(fs::is_empty(staging()));
}

TEST_F(LlamaCheckpoints, AMultimodalServersRefusalFailsTheCheckpointAndKeepsTheLastOne) {
    FakeLlamaServer server(io_, [this](const Seen& s) { return llama(s); });
    auto wc = checkpoints(server);
    start_run(*wc);
    checkpoint_once(*wc);

    // check_no_mtmd: every slot action of a server started with --mmproj.
    save_answer_ = FakeLlamaServer::json(
        501, R"({"error":{"code":501,"message":"This feature is not supported by multimodal",)"
             R"("type":"not_supported_error"}})");
    std::optional<WorkerCheckpoints::Outcome> outcome;
    ASSERT_TRUE(wc->request(
        "rule 'growth'", "killing the worker", [&](const auto& o) { outcome = o; }, true, true));
    run_until([&] { return outcome.has_value(); });

    EXPECT_FALSE(outcome->published);
    EXPECT_FALSE(outcome->timed_out);  // an answer: the worker is stopped, not killed
    const Emitted* failed = last(EventKind::checkpoint_failed);
    ASSERT_NE(failed, nullptr);
    EXPECT_EQ(failed->field("REASON"), "engine-error");
    EXPECT_EQ(failed->field("OPERATION"), "save");
    EXPECT_EQ(failed->field("METHOD"), "llama-server");
    EXPECT_EQ(failed->field("LAST_CHECKPOINT"), published(1).string());
    EXPECT_THAT(failed->message,
                HasSubstr("slot 0: POST /slots save: HTTP 501 (not_supported_error): This "
                          "feature is not supported by multimodal"));
    EXPECT_THAT(failed->message, HasSubstr("killing the worker"));
    // The saves stopped at the refusal; the first checkpoint is the newest.
    EXPECT_EQ(server.lines().back(), "POST /slots/0?action=save");
    EXPECT_TRUE(fs::is_directory(published(1)));
    EXPECT_FALSE(fs::exists(published(2)));
    EXPECT_TRUE(fs::is_empty(staging()));
}

// llama_state_seq_save_file returns 0 when it cannot write the file (a full
// disk, a --slot-save-path it may not write), and the server answers 200.
TEST_F(LlamaCheckpoints, ASaveThatWroteNothingFailsTheCheckpoint) {
    FakeLlamaServer server(io_, [this](const Seen& s) { return llama(s); });
    auto wc = checkpoints(server);
    start_run(*wc);
    save_answer_ = FakeLlamaServer::json(
        200, R"({"id_slot":0,"filename":"slot-0.bin","n_saved":1745,"n_written":0,)"
             R"("timings":{"save_ms":0.1}})");
    std::optional<WorkerCheckpoints::Outcome> outcome;
    ASSERT_TRUE(
        wc->request("periodic", "the worker keeps running", [&](const auto& o) { outcome = o; }));
    run_until([&] { return outcome.has_value(); });
    EXPECT_FALSE(outcome->published);
    const Emitted* failed = last(EventKind::checkpoint_failed);
    ASSERT_NE(failed, nullptr);
    EXPECT_EQ(failed->field("REASON"), "engine-error");
    EXPECT_THAT(failed->message, HasSubstr("slot 0: the server wrote nothing (n_written 0"));
    EXPECT_FALSE(fs::exists(published(1)));
}

TEST_F(LlamaCheckpoints, NoAnswerWithinTheTimeoutFailsTheCheckpointAndTheWorkerIsKilled) {
    bool hold = false;
    FakeLlamaServer server(io_, [&](const Seen& s) { return hold ? std::string() : llama(s); });
    auto wc = checkpoints(server);
    start_run(*wc);
    // A slot that never finishes its request: the save waits, silent.
    std::optional<WorkerCheckpoints::Outcome> outcome;
    ASSERT_TRUE(wc->request(
        "rule 'growth'", "killing the worker", [&](const auto& o) { outcome = o; }, true, true));
    run_until([&] { return server.seen().size() == 2; });  // /props, /slots answered
    hold = true;
    run_until([&] { return server.seen().size() == 3; });  // the first save: no answer
    EXPECT_FALSE(outcome.has_value());
    clock_.advance(29s);
    EXPECT_FALSE(outcome.has_value());
    clock_.advance(1s);
    ASSERT_TRUE(outcome.has_value());
    EXPECT_TRUE(outcome->timed_out);
    EXPECT_FALSE(outcome->published);
    const Emitted* failed = last(EventKind::checkpoint_failed);
    ASSERT_NE(failed, nullptr);
    EXPECT_EQ(failed->field("REASON"), "timeout");
    EXPECT_EQ(failed->field("METHOD"), "llama-server");
    EXPECT_EQ(failed->field("TIMEOUT_MS"), "30000");
    EXPECT_THAT(failed->message, HasSubstr("llama-server did not save its slots within 30s"));
    EXPECT_EQ(failed->field("LAST_CHECKPOINT"), "none");
    EXPECT_EQ(server.lines().back(), "POST /slots/0?action=save");
    EXPECT_TRUE(fs::is_empty(staging()));
    EXPECT_FALSE(fs::exists(published(1)));
}

TEST_F(LlamaCheckpoints, TheNextRunRestoresTheSlotsThatHeldTokensOnceReady) {
    FakeLlamaServer server(io_, [this](const Seen& s) { return llama(s); });
    auto wc = checkpoints(server);
    start_run(*wc);
    checkpoint_once(*wc);
    wc->run_ended();
    size_t before = server.seen().size();

    auto dirs = wc->prepare_run(ProcessIdentity::of(kWorkerUid, kWorkerUid, {}));
    ASSERT_TRUE(dirs);
    EXPECT_EQ(dirs->restore_from, published(1));  // INFERVISOR_RESTORE_FROM as for any
    wc->run_started([](int, bool) -> Result<void> { return {}; });
    // While the server loads nothing is asked of it.
    run_until([&] { return true; });
    EXPECT_EQ(server.seen().size(), before);
    clock_.advance(2s);
    wc->run_ready(clock_.now() - 2s, true);
    // A checkpoint meanwhile would meet the restore's links: refused.
    auto refused = wc->request("infervisorctl", "the worker keeps running", {});
    ASSERT_FALSE(refused);
    EXPECT_THAT(refused.error().message(), HasSubstr("being restored"));
    run_until([&] { return last(EventKind::checkpoint_restored) != nullptr; });

    std::vector<std::string> all = server.lines();
    std::vector<std::string> lines(all.begin() + long(before), all.end());
    EXPECT_THAT(lines, ElementsAre("GET /props", "POST /slots/0?action=restore"));
    EXPECT_EQ(server.seen().back().body, R"({"filename":"slot-0.bin"})");
    EXPECT_TRUE(restore_saw_link_);
    const Emitted* restored = last(EventKind::checkpoint_restored);
    EXPECT_EQ(restored->field("METHOD"), "llama-server");
    EXPECT_EQ(restored->field("SLOTS_RESTORED"), "1");
    EXPECT_EQ(restored->field("TOKENS_RESTORED"), "1745");
    EXPECT_EQ(restored->field("CHECKPOINT"), published(1).string());
    EXPECT_EQ(restored->field("RESTORE_SECONDS"), "2.000");
    // The driven clock stands still while the server answers.
    EXPECT_EQ(restored->field("SLOTS_RESTORE_SECONDS"), "0.000");
    EXPECT_THAT(restored->message, HasSubstr("restored 1 of 1 slots (1745 tokens)"));
    EXPECT_EQ(last(EventKind::checkpoint_failed), nullptr);
    // The link is gone; the sealed file stays.
    EXPECT_TRUE(fs::is_empty(staging()));
    EXPECT_TRUE(fs::exists(published(1) / "slot-0.bin"));
    // And checkpoints can be taken again.
    checkpoint_once(*wc);
}

// A slot the server refuses to restore does not cost the next one: both
// are asked for, the one it took is counted, and the refusal is journaled.
TEST_F(LlamaCheckpoints, ASlotTheServerRefusesDoesNotStopTheRestoreOfTheOthers) {
    FakeLlamaServer server(io_, [this](const Seen& s) { return llama(s); });
    tokens1_ = 310;
    auto wc = checkpoints(server);
    start_run(*wc);
    checkpoint_once(*wc);
    wc->run_ended();
    restore_fails_for_ = 0;
    size_t before = server.seen().size();
    start_run(*wc);
    run_until([&] { return last(EventKind::checkpoint_failed) != nullptr; });

    std::vector<std::string> all = server.lines();
    std::vector<std::string> lines(all.begin() + long(before), all.end());
    EXPECT_THAT(lines, ElementsAre("GET /props", "POST /slots/0?action=restore",
                                   "POST /slots/1?action=restore"));
    const Emitted* failed = last(EventKind::checkpoint_failed);
    EXPECT_EQ(failed->field("REASON"), "engine-error");
    EXPECT_EQ(failed->field("SLOTS_RESTORED"), "1");
    EXPECT_EQ(failed->field("TOKENS_RESTORED"), "310");
    EXPECT_THAT(failed->message,
                HasSubstr("could not restore every slot of checkpoint 1 (slot 0: "));
    EXPECT_THAT(failed->message, HasSubstr("Unable to restore slot"));
    EXPECT_THAT(failed->message, HasSubstr("restored 1 of 2 slots (310 tokens)"));
    EXPECT_TRUE(fs::is_empty(staging())) << "no restore link is left";
}

TEST_F(LlamaCheckpoints, AServerOfAnotherBuildIsNotRestoredInto) {
    FakeLlamaServer server(io_, [this](const Seen& s) { return llama(s); });
    auto wc = checkpoints(server);
    start_run(*wc);
    checkpoint_once(*wc);
    wc->run_ended();
    size_t before = server.seen().size();

    build_ = "b7001-0badc0de";  // llama.cpp was upgraded: its slot files may not load
    start_run(*wc);
    run_until([&] { return last(EventKind::checkpoint_failed) != nullptr; });

    std::vector<std::string> all = server.lines();
    std::vector<std::string> lines(all.begin() + long(before), all.end());
    EXPECT_THAT(lines, ElementsAre("GET /props"));  // nothing restored
    const Emitted* failed = last(EventKind::checkpoint_failed);
    EXPECT_EQ(failed->field("REASON"), "engine-mismatch");
    EXPECT_EQ(failed->field("METHOD"), "llama-server");
    EXPECT_EQ(failed->field("DIFFERENCES"),
              "the server is build b7001-0badc0de (was b6800-1f5accb8)");
    EXPECT_THAT(failed->message, HasSubstr("it goes on without them"));
    EXPECT_EQ(last(EventKind::checkpoint_restored), nullptr);
    EXPECT_TRUE(fs::is_empty(staging()));
}

TEST_F(LlamaCheckpoints, AChangedModelFileIsNotRestoredInto) {
    FakeLlamaServer server(io_, [this](const Seen& s) { return llama(s); });
    auto wc = checkpoints(server);
    start_run(*wc);
    checkpoint_once(*wc);
    wc->run_ended();

    dir_.write("models/q.gguf", "GGUF other weights, longer");
    start_run(*wc);
    run_until([&] { return last(EventKind::checkpoint_failed) != nullptr; });
    const Emitted* failed = last(EventKind::checkpoint_failed);
    EXPECT_EQ(failed->field("REASON"), "engine-mismatch");
    EXPECT_THAT(failed->field("DIFFERENCES"),
                HasSubstr("the model file " + model_.string() + " changed (26 bytes"));
}

// The model file replaced under the running server (a new download at the
// same path): a save records it no more, since the slots hold the old
// weights' cells and the file recorded is what a restore is compared with.
// The next run, which loads the new file, saves again.
TEST_F(LlamaCheckpoints, AModelFileReplacedUnderTheRunningServerFailsItsSave) {
    FakeLlamaServer server(io_, [this](const Seen& s) { return llama(s); });
    auto wc = checkpoints(server);
    start_run(*wc);
    checkpoint_once(*wc);

    dir_.write("models/q.gguf", "GGUF other weights, longer");
    std::optional<WorkerCheckpoints::Outcome> outcome;
    ASSERT_TRUE(wc->request("the daemon's stop", "stopping the worker",
                            [&](const auto& o) { outcome = o; }));
    run_until([&] { return outcome.has_value(); });
    EXPECT_FALSE(outcome->published);
    const Emitted* failed = last(EventKind::checkpoint_failed);
    ASSERT_NE(failed, nullptr);
    EXPECT_EQ(failed->field("REASON"), "engine-error");
    EXPECT_EQ(failed->field("TRIGGER"), "the daemon's stop");
    EXPECT_THAT(failed->message, HasSubstr("not the one this run started with: the model file " +
                                           model_.string() + " changed"));
    EXPECT_FALSE(fs::exists(published(2)));

    wc->run_ended();
    start_run(*wc);  // checkpoint 1 is refused (engine-mismatch): this run is the new file's
    run_until([&] {
        const Emitted* e = last(EventKind::checkpoint_failed);
        return e && e->field("REASON") == "engine-mismatch";
    });
    checkpoint_once(*wc);
    EXPECT_TRUE(fs::exists(published(2)));
}

TEST_F(LlamaCheckpoints, ACheckpointIsRefusedUntilTheServerIsReady) {
    FakeLlamaServer server(io_, [this](const Seen& s) { return llama(s); });
    auto wc = checkpoints(server);
    ASSERT_TRUE(wc->prepare_run(ProcessIdentity::of(kWorkerUid, kWorkerUid, {})));
    wc->run_started([](int, bool) -> Result<void> { return {}; });
    auto refused = wc->request("periodic", "the worker keeps running", {});
    ASSERT_FALSE(refused);
    EXPECT_THAT(refused.error().message(), HasSubstr("not ready yet"));
    EXPECT_TRUE(server.seen().empty());
}

}  // namespace
}  // namespace infervisor
