#include "supervise/config_snapshot.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <system_error>

#include "base/file_io.h"
#include "config/config_loader.h"

namespace infervisor {

namespace fs = std::filesystem;

namespace {

constexpr const char* kMainName = "infervisor.yaml";

void fnv1a(uint64_t& hash, std::string_view bytes) {
    for (unsigned char c : bytes) {
        hash ^= c;
        hash *= 1099511628211ull;
    }
    hash ^= 0xff;  // a separator no byte sequence can fake
    hash *= 1099511628211ull;
}

bool valid_id(const std::string& id) {
    if (id.size() != 16) return false;
    for (char c : id)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

Result<void> write_new_file(const fs::path& path, const std::string& text) {
    FILE* f = std::fopen(path.c_str(), "wxe");
    if (!f) return errno_error("create " + path.string());
    bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    ok = std::fclose(f) == 0 && ok;
    if (!ok) return errno_error("write " + path.string());
    return {};
}

}  // namespace

Result<std::string> ConfigSnapshots::save(const std::vector<fs::path>& files) {
    if (files.empty()) return std::string();
    std::vector<std::pair<std::string, std::string>> contents;  // name in the snapshot, text
    uint64_t hash = 14695981039346656037ull;
    for (size_t i = 0; i < files.size(); ++i) {
        auto text = read_file(files[i]);
        if (!text) return text.error();
        std::string name =
            i == 0 ? std::string(kMainName) : "workers.d/" + files[i].filename().string();
        fnv1a(hash, name);
        fnv1a(hash, *text);
        contents.emplace_back(std::move(name), std::move(*text));
    }
    char id[17];
    std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(hash));
    fs::path final_dir = dir_ / id;
    std::error_code ec;
    if (fs::is_directory(final_dir, ec)) return std::string(id);
    fs::create_directories(dir_, ec);
    if (ec) return plain_error("create " + dir_.string() + ": " + ec.message());
    ::chmod(dir_.c_str(), 0700);
    fs::path tmp = dir_ / (".tmp-" + std::string(id));
    fs::remove_all(tmp, ec);
    fs::create_directories(tmp / "workers.d", ec);
    if (ec) return plain_error("create " + tmp.string() + ": " + ec.message());
    for (const auto& [name, text] : contents)
        if (auto r = write_new_file(tmp / name, text); !r) {
            fs::remove_all(tmp, ec);
            return r.error();
        }
    if (::rename(tmp.c_str(), final_dir.c_str()) != 0) {
        auto e = errno_error("rename " + tmp.string() + " to " + final_dir.string());
        fs::remove_all(tmp, ec);
        return e;
    }
    return std::string(id);
}

Result<const Config*> ConfigSnapshots::load(const std::string& id) {
    if (!valid_id(id)) return plain_error("no configuration snapshot recorded");
    if (auto it = loaded_.find(id); it != loaded_.end()) return it->second.get();
    fs::path dir = dir_ / id;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return plain_error("configuration snapshot " + id + " missing");
    auto loaded = load_config(ConfigSource{dir / kMainName, dir / "workers.d"});
    if (!loaded.ok())
        return plain_error("configuration snapshot " + id +
                           " is not valid now: " + loaded.errors.all().front().format());
    auto config = std::make_shared<Config>(std::move(loaded.config));
    loaded_[id] = config;
    return config.get();
}

void ConfigSnapshots::prune(const std::set<std::string>& keep) {
    std::error_code ec;
    std::vector<fs::path> doomed;
    for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
        std::string name = it->path().filename().string();
        if (!keep.count(name)) doomed.push_back(it->path());
    }
    for (const auto& path : doomed) {
        fs::remove_all(path, ec);
        loaded_.erase(path.filename().string());
    }
}

}  // namespace infervisor
