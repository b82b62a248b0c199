#include "engine/llama_record.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "base/unique_fd.h"
#include "engine/json_answer.h"
#include "engine/llama_slots.h"

namespace infervisor {

using nlohmann::json;

uint64_t LlamaRecord::tokens() const {
    uint64_t n = 0;
    for (const auto& slot : slots) n += slot.tokens;
    return n;
}

std::string format_llama_record(const LlamaRecord& record) {
    json server = {{"model_path", record.server.model_path},
                   {"build_info", record.server.build_info},
                   {"n_ctx", record.server.n_ctx}};
    if (record.server.model)
        server["model_file"] = {{"size", record.server.model->size},
                                {"mtime_ns", record.server.model->mtime_ns}};
    json slots = json::array();
    for (const auto& slot : record.slots)
        slots.push_back(
            {{"id", slot.id}, {"file", slot.file}, {"tokens", slot.tokens}, {"bytes", slot.bytes}});
    return json{{"version", 1}, {"server", server}, {"slots", slots}}.dump(2) + "\n";
}

namespace {

std::optional<uint64_t> count_field(const json& object, const char* key) {
    auto v = int_field(object, key);
    if (!v || *v < 0) return std::nullopt;
    return uint64_t(*v);
}

std::optional<LlamaServerIdentity> parse_identity(const json& j) {
    LlamaServerIdentity server;
    auto path = string_field(j, "model_path");
    auto build = string_field(j, "build_info");
    auto n_ctx = int_field(j, "n_ctx");
    if (!path || !build || !n_ctx) return std::nullopt;
    server.model_path = *path;
    server.build_info = *build;
    server.n_ctx = *n_ctx;
    if (j.contains("model_file")) {
        const json* file = object_field(j, "model_file");
        auto size = file ? count_field(*file, "size") : std::nullopt;
        auto mtime = file ? int_field(*file, "mtime_ns") : std::nullopt;
        if (!size || !mtime) return std::nullopt;
        server.model = LlamaModelFile{*size, *mtime};
    }
    return server;
}

}  // namespace

std::optional<LlamaRecord> parse_llama_record(const std::string& text) {
    auto j = parse_json_answer(text);
    if (!j || !j->is_object() || int_field(*j, "version") != 1) return std::nullopt;
    const json* server = object_field(*j, "server");
    auto identity = server ? parse_identity(*server) : std::nullopt;
    auto slots = j->find("slots");
    if (!identity || slots == j->end() || !slots->is_array() || slots->size() > kMaxLlamaSlots)
        return std::nullopt;
    LlamaRecord record{*identity, {}};
    for (const json& s : *slots) {
        auto id = int_field(s, "id");
        auto file = string_field(s, "file");
        auto tokens = count_field(s, "tokens");
        auto bytes = count_field(s, "bytes");
        if (!id || *id < 0 || !file || *file != llama_slot_file_name(*id) || !tokens || !bytes)
            return std::nullopt;
        for (const auto& seen : record.slots)
            if (seen.id == *id) return std::nullopt;
        record.slots.push_back({*id, *file, *tokens, *bytes});
    }
    return record;
}

namespace {

std::string describe_file(const std::optional<LlamaModelFile>& file) {
    if (!file) return "not examined";
    return std::to_string(file->size) + " bytes, mtime " +
           std::to_string(file->mtime_ns / 1000000000) + "." +
           std::to_string(1000000000 + file->mtime_ns % 1000000000).substr(1);
}

}  // namespace

std::vector<std::string> llama_record_differences(const LlamaServerIdentity& saved,
                                                  const LlamaServerIdentity& now) {
    std::vector<std::string> out;
    if (saved.model_path != now.model_path)
        out.push_back("the model is now " + shown_text(now.model_path) + " (was " +
                      shown_text(saved.model_path) + ")");
    else if (!saved.model || !now.model)
        out.push_back("the model file " + shown_text(now.model_path) + " could not be examined " +
                      (saved.model ? "now" : "when the checkpoint was saved"));
    else if (saved.model != now.model)
        out.push_back("the model file " + shown_text(now.model_path) + " changed (" +
                      describe_file(now.model) + "; was " + describe_file(saved.model) + ")");
    if (saved.build_info != now.build_info)
        out.push_back("the server is build " + shown_text(now.build_info) + " (was " +
                      shown_text(saved.build_info) + ")");
    if (saved.n_ctx != now.n_ctx)
        out.push_back("n_ctx per slot is " + std::to_string(now.n_ctx) + " (was " +
                      std::to_string(saved.n_ctx) + ")");
    return out;
}

Result<LlamaModelFile> examine_model_file(const std::filesystem::path& root,
                                          const std::string& model_path) {
    if (model_path.empty() || model_path.front() != '/' ||
        model_path.find('\0') != std::string::npos || model_path.size() > 4096)
        return plain_error("the model path '" + shown_text(model_path) +
                           "' is not an absolute path");
    std::filesystem::path full = root / std::filesystem::path(model_path).relative_path();
    struct stat st;
    if (::stat(full.c_str(), &st) < 0) return errno_error("stat " + shown_text(model_path));
    if (!S_ISREG(st.st_mode))
        return plain_error("the model path " + shown_text(model_path) + " is not a regular file");
    return LlamaModelFile{uint64_t(st.st_size),
                          int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

Result<void> write_llama_record(int dir_fd, const LlamaRecord& record) {
    std::string text = format_llama_record(record);
    UniqueFd fd(::openat(dir_fd, kLlamaRecordName,
                         O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) return errno_error(std::string("create ") + kLlamaRecordName);
    if (::fchown(fd.get(), 0, 0) < 0) return errno_error(std::string("chown ") + kLlamaRecordName);
    size_t done = 0;
    while (done < text.size()) {
        ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return errno_error(std::string("write ") + kLlamaRecordName);
        done += size_t(n);
    }
    if (::fsync(fd.get()) < 0) return errno_error(std::string("fsync ") + kLlamaRecordName);
    return {};
}

std::optional<LlamaRecord> read_llama_record(int dir_fd) {
    UniqueFd fd(::openat(dir_fd, kLlamaRecordName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    struct stat st;
    if (!fd || ::fstat(fd.get(), &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
        (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 || st.st_size > off_t(kMaxLlamaRecordBytes))
        return std::nullopt;
    std::string text(size_t(st.st_size), '\0');
    size_t done = 0;
    while (done < text.size()) {
        ssize_t n = ::read(fd.get(), text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return std::nullopt;  // shorter than it was: not whole
        done += size_t(n);
    }
    return parse_llama_record(text);
}

}  // namespace infervisor
