// The record beside a checkpoint of llama-server's slots
// (engine/llama_record.h): written and read back whole or not at all, and
// the differences that refuse a restore, in words.
#include "engine/llama_record.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/unique_fd.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

LlamaRecord sample_record() {
    LlamaRecord r;
    r.server = {"/srv/models/q.gguf", LlamaModelFile{4683074240, 1733312345123456789},
                "b6800-1f5accb8", 4096};
    r.slots = {{0, "slot-0.bin", 1745, 14309796}, {1, "slot-1.bin", 0, 8}};
    return r;
}

TEST(LlamaRecord, RoundTrips) {
    LlamaRecord r = sample_record();
    auto back = parse_llama_record(format_llama_record(r));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, r);
    EXPECT_EQ(back->tokens(), 1745u);
    // Any path the server names survives, newlines and quotes included.
    r.server.model_path = "/m/a \"b\"\nc.gguf";
    r.server.model.reset();
    EXPECT_EQ(parse_llama_record(format_llama_record(r)), r);
}

TEST(LlamaRecord, AnythingButAWholeRecordIsNone) {
    std::string text = format_llama_record(sample_record());
    EXPECT_FALSE(parse_llama_record(text.substr(0, text.size() / 2)));
    EXPECT_FALSE(parse_llama_record(""));
    EXPECT_FALSE(parse_llama_record(R"({"version":2,"server":{},"slots":[]})"));
    const char* server = R"("server":{"model_path":"/m","build_info":"b1","n_ctx":512})";
    EXPECT_TRUE(parse_llama_record(std::string("{\"version\":1,") + server + ",\"slots\":[]}"));
    // A file name that is not the one its id gives: not ours.
    EXPECT_FALSE(parse_llama_record(std::string("{\"version\":1,") + server +
                                    R"(,"slots":[{"id":0,"file":"../x","tokens":1,"bytes":1}]})"));
    EXPECT_FALSE(
        parse_llama_record(std::string("{\"version\":1,") + server +
                           R"(,"slots":[{"id":0,"file":"slot-0.bin","tokens":-1,"bytes":1}]})"));
    EXPECT_FALSE(parse_llama_record(
        std::string("{\"version\":1,") + server +
        R"(,"slots":[{"id":0,"file":"slot-0.bin","tokens":1,"bytes":1},{"id":0,"file":"slot-0.bin","tokens":1,"bytes":1}]})"));
    EXPECT_FALSE(
        parse_llama_record(R"({"version":1,"server":{"model_path":"/m","n_ctx":512},"slots":[]})"));
}

TEST(LlamaRecord, DifferencesInWords) {
    LlamaServerIdentity saved = sample_record().server;
    EXPECT_TRUE(llama_record_differences(saved, saved).empty());

    LlamaServerIdentity other = saved;
    other.model_path = "/srv/models/r.gguf";
    other.build_info = "b7000-aaaa";
    other.n_ctx = 8192;
    EXPECT_THAT(llama_record_differences(saved, other),
                ElementsAre("the model is now /srv/models/r.gguf (was /srv/models/q.gguf)",
                            "the server is build b7000-aaaa (was b6800-1f5accb8)",
                            "n_ctx per slot is 8192 (was 4096)"));

    LlamaServerIdentity replaced = saved;
    replaced.model = LlamaModelFile{4683074241, 1733400000000000000};
    EXPECT_THAT(llama_record_differences(saved, replaced),
                ElementsAre("the model file /srv/models/q.gguf changed (4683074241 bytes, mtime "
                            "1733400000.000000000; was 4683074240 bytes, mtime "
                            "1733312345.123456789)"));

    LlamaServerIdentity unseen = saved;
    unseen.model.reset();
    EXPECT_THAT(llama_record_differences(saved, unseen),
                ElementsAre("the model file /srv/models/q.gguf could not be examined now"));
}

class LlamaRecordFile : public ::testing::Test {
  protected:
    void SetUp() override {
        fd_ = UniqueFd(::open(dir_.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        ASSERT_TRUE(fd_);
    }
    std::filesystem::path file() const { return dir_.path() / kLlamaRecordName; }
    testing::TempDir dir_;
    UniqueFd fd_;
};

TEST_F(LlamaRecordFile, WrittenRootsAndReadBack) {
    ASSERT_TRUE(write_llama_record(fd_.get(), sample_record()));
    struct stat st;
    ASSERT_EQ(::lstat(file().c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    EXPECT_EQ(read_llama_record(fd_.get()), sample_record());
    // Never over one that is there.
    auto again = write_llama_record(fd_.get(), sample_record());
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().code, EEXIST);
}

TEST_F(LlamaRecordFile, OnlyARootOwnedRegularFileIsRead) {
    ASSERT_TRUE(write_llama_record(fd_.get(), sample_record()));
    ASSERT_EQ(::chmod(file().c_str(), 0620), 0);
    EXPECT_FALSE(read_llama_record(fd_.get()));  // group-writable
    ASSERT_EQ(::chmod(file().c_str(), 0600), 0);
    ASSERT_EQ(::chown(file().c_str(), 1234, 1234), 0);
    EXPECT_FALSE(read_llama_record(fd_.get()));  // someone else's
    ASSERT_EQ(::unlink(file().c_str()), 0);
    dir_.write("elsewhere", format_llama_record(sample_record()));
    ASSERT_EQ(::symlink("elsewhere", file().c_str()), 0);
    EXPECT_FALSE(read_llama_record(fd_.get()));  // not followed
    ASSERT_EQ(::unlink(file().c_str()), 0);
    EXPECT_FALSE(read_llama_record(fd_.get()));  // none
}

TEST_F(LlamaRecordFile, TheModelFileIsExaminedThroughTheServersRoot) {
    dir_.mkdir("root/srv");
    dir_.write("root/srv/m.gguf", "GGUF0123");
    auto file = examine_model_file(dir_.path() / "root", "/srv/m.gguf");
    ASSERT_TRUE(file) << file.error().message();
    EXPECT_EQ(file->size, 8u);
    struct stat st;
    ASSERT_EQ(::stat((dir_.path() / "root/srv/m.gguf").c_str(), &st), 0);
    EXPECT_EQ(file->mtime_ns, int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec);

    EXPECT_THAT(examine_model_file(dir_.path() / "root", "srv/m.gguf").error().message(),
                HasSubstr("not an absolute path"));
    EXPECT_THAT(examine_model_file(dir_.path() / "root", "/srv").error().message(),
                HasSubstr("not a regular file"));
    EXPECT_EQ(examine_model_file(dir_.path() / "root", "/srv/gone.gguf").error().code, ENOENT);
}

}  // namespace
}  // namespace infervisor
