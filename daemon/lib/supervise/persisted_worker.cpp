#include "supervise/persisted_worker.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <system_error>

#include "base/file_io.h"
#include "base/unique_fd.h"
#include "config/config_validator.h"

namespace infervisor {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kVersionLine = "infervisor-worker-state 1";
constexpr size_t kMaxStarts = 1000;  // far above any sane start_limit_burst

// One line per value: a newline in a status text must not start a new key.
std::string one_line(std::string_view s) {
    std::string out(s.substr(0, 1024));
    for (char& c : out)
        if (c == '\n' || c == '\r' || c == '\0') c = ' ';
    return out;
}

int64_t to_ms(TimePoint t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

TimePoint from_ms(int64_t ms) { return TimePoint(std::chrono::milliseconds(ms)); }

std::string optional_time(const std::optional<TimePoint>& t) {
    return t ? std::to_string(to_ms(*t)) : "-";
}

template <class T>
std::optional<T> number(std::string_view s) {
    T value{};
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
    return value;
}

std::optional<WorkerState> state_from_name(std::string_view name) {
    for (int i = 0; i <= static_cast<int>(kLastWorkerState); ++i)
        if (auto s = static_cast<WorkerState>(i); state_name(s) == name) return s;
    return std::nullopt;
}

std::optional<bool> flag(std::string_view s) {
    if (s == "0") return false;
    if (s == "1") return true;
    return std::nullopt;
}

Error bad(const std::string& what) { return plain_error("worker state file: " + what); }

std::string time_list(const std::deque<TimePoint>& times) {
    std::string out;
    for (const auto& t : times) out += (out.empty() ? "" : ",") + std::to_string(to_ms(t));
    return out;
}

// Parses time_list()'s form; nullopt when malformed or longer than `max`.
std::optional<std::deque<TimePoint>> parse_time_list(std::string_view list, size_t max) {
    std::deque<TimePoint> out;
    while (!list.empty()) {
        size_t comma = list.find(',');
        auto ms = number<int64_t>(list.substr(0, comma));
        if (!ms || out.size() == max) return std::nullopt;
        out.push_back(from_ms(*ms));
        list = comma == std::string_view::npos ? "" : list.substr(comma + 1);
    }
    return out;
}

}  // namespace

std::string format_persisted_worker(const PersistedWorker& w) {
    std::string starts = time_list(w.restarts.starts);
    std::string out = std::string(kVersionLine) + "\n";
    auto line = [&](std::string_view key, const std::string& value) {
        out += std::string(key) + "=" + one_line(value) + "\n";
    };
    line("name", w.name);
    line("config_snapshot", w.config_snapshot);
    line("state", std::string(state_name(w.state)));
    line("pid", std::to_string(w.pid));
    line("pid_start_time", std::to_string(w.pid_start_time));
    line("started_at_ms", optional_time(w.started_at));
    line("stop_requested", w.stop_requested ? "1" : "0");
    line("restart_requested", w.restart_requested ? "1" : "0");
    line("policy_then", w.policy_then ? std::string(to_string(*w.policy_then)) : "-");
    line("policy_rule", w.policy_rule);
    line("starts_ms", starts);
    line("last_start_ms", optional_time(w.restarts.last_start));
    line("consecutive_failures", std::to_string(w.restarts.consecutive_failures));
    line("total_restarts", std::to_string(w.restarts.total_restarts));
    // Only when there are any: a file without it is what this format's
    // first release wrote, and reads the same.
    if (!w.host_kills.empty()) line("host_kills_ms", time_list(w.host_kills));
    line("last_exit", w.last_exit);
    line("status_text", w.status_text);
    line("suspended_by", w.suspended_by);
    line("suspended_since_ms", optional_time(w.suspended_since));
    line("suspended_memory", w.suspended_memory ? std::to_string(*w.suspended_memory) : "-");
    line("suspended_starting", w.suspended_starting ? "1" : "0");
    // Only when said: a file without it reads as an older daemon's.
    if (w.suspended_engine_slept)
        line("suspended_engine_slept", *w.suspended_engine_slept ? "1" : "0");
    if (!w.suspended_step.empty()) line("suspended_step", w.suspended_step);
    line("checkpoint_path", w.checkpoint ? w.checkpoint->path : "");
    line("checkpoint_bytes",
         w.checkpoint && w.checkpoint->bytes ? std::to_string(*w.checkpoint->bytes) : "-");
    line("checkpoint_at_ms",
         optional_time(w.checkpoint ? std::optional<TimePoint>(w.checkpoint->written_at)
                                    : std::nullopt));
    return out;
}

Result<PersistedWorker> parse_persisted_worker(std::string_view text) {
    if (text.size() > kMaxStateFileSize)
        return bad("larger than " + std::to_string(kMaxStateFileSize) + " bytes");
    size_t eol = text.find('\n');
    if (eol == std::string_view::npos || text.substr(0, eol) != kVersionLine)
        return bad("not a version 1 worker state file");
    std::map<std::string, std::string, std::less<>> fields;
    for (size_t pos = eol + 1; pos < text.size();) {
        size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) return bad("truncated (no final newline)");
        std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        size_t eq = line.find('=');
        if (eq == std::string_view::npos) return bad("a line without '='");
        fields.emplace(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
    }
    auto get = [&](std::string_view key) -> std::optional<std::string_view> {
        auto it = fields.find(key);
        if (it == fields.end()) return std::nullopt;
        return std::string_view(it->second);
    };
    auto time = [&](std::string_view key) -> std::optional<std::optional<TimePoint>> {
        auto v = get(key);
        if (!v) return std::nullopt;
        if (*v == "-") return std::make_optional(std::optional<TimePoint>());
        auto ms = number<int64_t>(*v);
        if (!ms) return std::nullopt;
        return std::optional<TimePoint>(from_ms(*ms));
    };

    PersistedWorker w;
    auto name = get("name");
    if (!name || !is_valid_worker_name(std::string(*name))) return bad("missing or invalid name");
    w.name = *name;
    w.config_snapshot = get("config_snapshot").value_or("");
    auto state = get("state");
    auto parsed_state = state ? state_from_name(*state) : std::nullopt;
    if (!parsed_state) return bad("missing or unknown state");
    w.state = *parsed_state;
    auto count = [&](std::string_view key) -> std::optional<uint64_t> {
        auto v = get(key);
        if (!v) return std::nullopt;
        return number<uint64_t>(*v);
    };
    auto pid = count("pid");
    auto start = count("pid_start_time");
    if (!pid || *pid > 0x3fffffff || !start) return bad("missing or invalid pid");
    w.pid = static_cast<pid_t>(*pid);
    w.pid_start_time = *start;
    auto started = time("started_at_ms");
    auto last_start = time("last_start_ms");
    if (!started || !last_start) return bad("missing or invalid time");
    w.started_at = *started;
    w.restarts.last_start = *last_start;
    auto stop = get("stop_requested") ? flag(*get("stop_requested")) : std::nullopt;
    auto restart = get("restart_requested") ? flag(*get("restart_requested")) : std::nullopt;
    if (!stop || !restart) return bad("missing or invalid request flags");
    w.stop_requested = *stop;
    w.restart_requested = *restart;
    auto then = get("policy_then");
    if (!then) return bad("missing policy_then");
    if (*then != "-") {
        w.policy_then = parse_then(*then);
        if (!w.policy_then) return bad("unknown policy_then");
    }
    w.policy_rule = get("policy_rule").value_or("");
    auto starts = parse_time_list(get("starts_ms").value_or(""), kMaxStarts);
    if (!starts) return bad("invalid starts_ms (or more than " + std::to_string(kMaxStarts) + ")");
    w.restarts.starts = std::move(*starts);
    auto failures = count("consecutive_failures");
    auto total = count("total_restarts");
    if (!failures || *failures > 1'000'000 || !total)
        return bad("missing or invalid restart counters");
    w.restarts.consecutive_failures = static_cast<int>(*failures);
    w.restarts.total_restarts = *total;
    w.last_exit = get("last_exit").value_or("");
    w.status_text = get("status_text").value_or("");
    // Optional: a file of an older daemon has none of these.
    auto host_kills = parse_time_list(get("host_kills_ms").value_or(""), kMaxStarts);
    if (!host_kills) return bad("invalid host_kills_ms");
    w.host_kills = std::move(*host_kills);
    w.suspended_by = get("suspended_by").value_or("");
    if (get("suspended_since_ms")) {
        auto since = time("suspended_since_ms");
        if (!since) return bad("invalid suspended_since_ms");
        w.suspended_since = *since;
    }
    if (auto memory = get("suspended_memory"); memory && *memory != "-") {
        auto bytes = number<uint64_t>(*memory);
        if (!bytes) return bad("invalid suspended_memory");
        w.suspended_memory = *bytes;
    }
    if (auto starting = get("suspended_starting")) {
        auto value = flag(*starting);
        if (!value) return bad("invalid suspended_starting");
        w.suspended_starting = *value;
    }
    if (auto slept = get("suspended_engine_slept")) {
        auto value = flag(*slept);
        if (!value) return bad("invalid suspended_engine_slept");
        w.suspended_engine_slept = *value;
    }
    if (auto step = get("suspended_step")) {
        if (*step != "vllm-sleep" && *step != "cuda-checkpoint")
            return bad("invalid suspended_step");
        w.suspended_step = std::string(*step);
    }
    if (auto path = get("checkpoint_path"); path && !path->empty()) {
        auto at = time("checkpoint_at_ms");
        if (!at || !*at) return bad("checkpoint_path without a valid checkpoint_at_ms");
        ParkedCheckpoint c{std::string(*path), std::nullopt, **at};
        if (auto bytes = get("checkpoint_bytes"); bytes && *bytes != "-") {
            c.bytes = number<uint64_t>(*bytes);
            if (!c.bytes) return bad("invalid checkpoint_bytes");
        }
        w.checkpoint = std::move(c);
    }
    return w;
}

Result<void> write_persisted_worker(const fs::path& dir, const PersistedWorker& worker) {
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
        return errno_error("create " + dir.string());
    std::string text = format_persisted_worker(worker);
    if (text.size() > kMaxStateFileSize)
        return plain_error("state of worker '" + worker.name + "' too large to persist");
    return replace_file(dir / worker.name, text);
}

Result<PersistedWorker> read_persisted_worker(const fs::path& dir, const std::string& name) {
    fs::path path = dir / name;
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) return errno_error("open " + path.string());
    std::string text(kMaxStateFileSize + 1, '\0');
    size_t got = 0;
    while (got < text.size()) {
        ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno_error("read " + path.string());
        if (n == 0) break;
        got += static_cast<size_t>(n);
    }
    text.resize(got);
    auto parsed = parse_persisted_worker(text);
    if (!parsed) return plain_error(path.string() + ": " + parsed.error().message());
    if (parsed->name != name)
        return plain_error(path.string() + ": names worker '" + parsed->name + "'");
    return parsed;
}

void remove_persisted_worker(const fs::path& dir, const std::string& name) {
    ::unlink((dir / name).c_str());
}

std::vector<std::string> persisted_worker_names(const fs::path& dir) {
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        std::string name = it->path().filename().string();
        if (it->is_regular_file(ec) && is_valid_worker_name(name)) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace infervisor
