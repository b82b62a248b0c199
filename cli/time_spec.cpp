#include "time_spec.h"

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>

#include "base/units.h"

namespace infervisor::cli {

namespace {

constexpr uint64_t kUsecPerSec = 1000000;

// Local midnight `days_back` days before the day of `now_usec`.
uint64_t local_midnight(uint64_t now_usec, int days_back) {
    time_t now = static_cast<time_t>(now_usec / kUsecPerSec);
    struct tm day {};
    localtime_r(&now, &day);
    day.tm_hour = day.tm_min = day.tm_sec = 0;
    day.tm_mday -= days_back;
    day.tm_isdst = -1;
    return static_cast<uint64_t>(mktime(&day)) * kUsecPerSec;
}

// "YYYY-MM-DD", "YYYY-MM-DD HH:MM[:SS]" (or with 'T'), "HH:MM[:SS]" (today),
// as local time; nullopt when the text is none of them.
std::optional<uint64_t> local_time_point(const std::string& text, uint64_t now_usec) {
    static constexpr const char* kFormats[] = {
        "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d",
        "%H:%M:%S",          "%H:%M",
    };
    time_t now = static_cast<time_t>(now_usec / kUsecPerSec);
    for (const char* format : kFormats) {
        struct tm t {};
        localtime_r(&now, &t);  // a time alone is today's: strptime sets only what it reads
        t.tm_hour = t.tm_min = t.tm_sec = 0;
        const char* end = strptime(text.c_str(), format, &t);
        if (!end || *end != '\0') continue;
        t.tm_isdst = -1;
        time_t at = mktime(&t);
        if (at < 0) return std::nullopt;
        return static_cast<uint64_t>(at) * kUsecPerSec;
    }
    return std::nullopt;
}

}  // namespace

Result<uint64_t> parse_since(std::string_view text, uint64_t now_usec) {
    std::string spec(text);
    if (spec == "now") return now_usec;
    if (spec == "today") return local_midnight(now_usec, 0);
    if (spec == "yesterday") return local_midnight(now_usec, 1);
    if (spec.size() > 1 && spec[0] == '@') {
        char* end = nullptr;
        errno = 0;
        unsigned long long seconds = std::strtoull(spec.c_str() + 1, &end, 10);
        if (errno == 0 && *end == '\0' && spec[1] >= '0' && spec[1] <= '9' &&
            seconds < UINT64_MAX / kUsecPerSec)
            return static_cast<uint64_t>(seconds) * kUsecPerSec;
    }
    if (auto at = local_time_point(spec, now_usec)) return *at;
    std::string ago = spec;
    if (!ago.empty() && ago[0] == '-') ago.erase(0, 1);
    if (ago.size() > 4 && ago.compare(ago.size() - 4, 4, " ago") == 0) ago.resize(ago.size() - 4);
    if (auto d = parse_duration(ago); d && d->count() >= 0) {
        auto usec = std::chrono::duration_cast<std::chrono::microseconds>(*d).count();
        return static_cast<uint64_t>(usec) >= now_usec ? 0 : now_usec - static_cast<uint64_t>(usec);
    }
    return plain_error(
        "expected e.g. 10m (ago), '2h ago', today, yesterday, '2026-12-02 14:30', "
        "14:30 or @SECONDS, not '" +
        spec + "'");
}

}  // namespace infervisor::cli
