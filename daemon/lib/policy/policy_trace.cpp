#include "policy/policy_trace.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <unordered_map>

namespace infervisor {

// Named, not anonymous: TraceBlockWriter::State holds these types.
namespace trace_encoding {

enum Record : uint8_t { kTick = 1, kWoken = 2, kEvent = 3 };

// The flattened fields of a worker's sample and candidate. The ones that
// change at most samples come first, so their bits keep the "changed" mask
// short.
enum WorkerField : unsigned {
    wMemoryCurrent,
    wAnon,
    wCpuUsage,
    wSwapCurrent,
    wSwapIn,
    wSwapOut,
    wMemoryPsi,  // 6 fields: some avg10/60/300, full avg10/60/300
    wCpuPsi = wMemoryPsi + 6,
    wIoPsi = wCpuPsi + 6,
    wEngineTime = wIoPsi + 6,  // the series follow the masks when present
    wHeartbeat,
    wWorkdirUsage,
    wUnevictable,
    wEvents,  // 6 fields: low, high, max, oom, oom_kill, oom_group_kill
    wMemoryMax = wEvents + 6,
    wMemoryHigh,
    wSwapMax,
    wStartedAt,
    wReadyAt,
    wSignalsReadiness,
    wLoadLimit,
    wWatchdog,
    wWorkdirQuota,
    wPeak,
    wPids,
    wPriority,
    wProtected,
    wPreemptible,
    wCheckpointTook,
    wResumedAgo,
    wUnloadBound,
    wUnloadedAgo,
    wNoSuspend,  // a hash of the text; the text follows the masks when it changed
    wPhase,      // 0 loading, 1 serving
    wGrowth,     // memory.growth, hundredths of a percent per minute
    kWorkerFields
};

enum HostField : unsigned {
    hMemAvailable,
    hSwapIn,
    hSwapOut,
    hSwapFree,
    hMemoryPsi,
    hCpuPsi = hMemoryPsi + 6,
    hIoPsi = hCpuPsi + 6,
    hMemTotal = hIoPsi + 6,
    hSwapTotal,
    kHostFields
};

static_assert(kWorkerFields <= 64 && kHostFields <= 64);

template <size_t N>
using Fields = std::array<std::optional<int64_t>, N>;

int64_t ms_of(TimePoint t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
// A decoded time or duration, in milliseconds, is clamped to +-2^40 (34
// years of uptime): as nanoseconds (TimePoint) it and the sum of a few of
// them stay within int64, whatever a hostile file says. A wall time is
// clamped to +-2^50 (35,000 years), so that it stays within int64 in
// microseconds.
constexpr int64_t kMaxMs = int64_t{1} << 40;
constexpr int64_t kMaxWallMs = int64_t{1} << 50;
int64_t clamp_ms(int64_t ms) { return std::clamp(ms, -kMaxMs, kMaxMs); }
int64_t clamp_wall(int64_t ms) { return std::clamp(ms, -kMaxWallMs, kMaxWallMs); }
TimePoint time_of(int64_t ms) { return TimePoint(std::chrono::milliseconds(clamp_ms(ms))); }

std::optional<int64_t> u(std::optional<uint64_t> v) {
    if (!v) return std::nullopt;
    return static_cast<int64_t>(*v);
}
std::optional<uint64_t> to_u(std::optional<int64_t> v) {
    if (!v) return std::nullopt;
    return static_cast<uint64_t>(*v);
}
std::optional<int64_t> ms(std::optional<TimePoint> t) {
    if (!t) return std::nullopt;
    return ms_of(*t);
}
std::optional<int64_t> ms(std::optional<Duration> d) {
    if (!d) return std::nullopt;
    return d->count();
}
std::optional<TimePoint> to_time(std::optional<int64_t> v) {
    if (!v) return std::nullopt;
    return time_of(*v);
}
std::optional<Duration> to_duration(std::optional<int64_t> v) {
    if (!v) return std::nullopt;
    return Duration(clamp_ms(*v));
}
// FNV-1a, 63 bits: whether a text changed since the last sample.
int64_t text_hash(std::string_view text) {
    uint64_t h = 14695981039346656037ull;
    for (char c : text) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
    return static_cast<int64_t>(h >> 1);
}

// The kernel writes PSI averages with two decimals: kept exactly.
int64_t centi(double percent) { return std::llround(percent * 100); }
// A figure of the daemon's own (memory.growth), not the kernel's: NaN and
// infinities are none and the rest is clamped to +-10^12 % a minute, within llround's
// range; a decoded one is clamped the same, so that it encodes back alike.
constexpr int64_t kMaxCentiGrowth = int64_t{100'000'000'000'000};
std::optional<int64_t> centi_clamped(double percent) {
    if (!std::isfinite(percent)) return std::nullopt;
    return centi(std::clamp(percent, -1e12, 1e12));
}

template <size_t N>
void put_psi(Fields<N>& f, unsigned at, const std::optional<PsiReading>& psi) {
    if (!psi) return;
    f[at] = centi(psi->some.avg10);
    f[at + 1] = centi(psi->some.avg60);
    f[at + 2] = centi(psi->some.avg300);
    if (!psi->full) return;
    f[at + 3] = centi(psi->full->avg10);
    f[at + 4] = centi(psi->full->avg60);
    f[at + 5] = centi(psi->full->avg300);
}

template <size_t N>
std::optional<PsiReading> get_psi(const Fields<N>& f, unsigned at) {
    auto avg = [&](unsigned i) -> std::optional<PsiAverages> {
        if (!f[i] || !f[i + 1] || !f[i + 2]) return std::nullopt;
        return PsiAverages{static_cast<double>(*f[i]) / 100, static_cast<double>(*f[i + 1]) / 100,
                           static_cast<double>(*f[i + 2]) / 100, 0};
    };
    auto some = avg(at);
    if (!some) return std::nullopt;
    return PsiReading{*some, avg(at + 3)};
}

// Both directions of the flattening from one list of the fields: a mapper
// is called with each field's number and member; ToFields reads the
// members into fields, FromFields writes them back.
template <size_t N>
struct ToFields {
    Fields<N>& f;
    void size(unsigned i, const std::optional<uint64_t>& v) { f[i] = u(v); }
    void time(unsigned i, const std::optional<TimePoint>& v) { f[i] = ms(v); }
    void duration(unsigned i, const std::optional<Duration>& v) { f[i] = ms(v); }
    void psi(unsigned i, const std::optional<PsiReading>& v) { put_psi(f, i, v); }
    void flag(unsigned i, const bool& v, bool /*absent*/) { f[i] = v ? 1 : 0; }
};

template <size_t N>
struct FromFields {
    const Fields<N>& f;
    void size(unsigned i, std::optional<uint64_t>& v) { v = to_u(f[i]); }
    void time(unsigned i, std::optional<TimePoint>& v) { v = to_time(f[i]); }
    void duration(unsigned i, std::optional<Duration>& v) { v = to_duration(f[i]); }
    void psi(unsigned i, std::optional<PsiReading>& v) { v = get_psi(f, i); }
    void flag(unsigned i, bool& v, bool absent) { v = f[i] ? *f[i] != 0 : absent; }
};

// The fields of a worker's sample and candidate that map one to one (the
// engine reading, the memory events, the priority and no_suspend are
// flatten()'s and unflatten()'s own).
template <typename Worker, typename Mapper>
void map_worker(Worker& w, Mapper&& m) {
    auto& s = w.sample;
    m.size(wMemoryCurrent, s.memory_current);
    m.size(wAnon, s.memory_anon);
    m.size(wCpuUsage, s.cpu_usage_usec);
    m.size(wSwapCurrent, s.swap_current);
    m.size(wSwapIn, s.swapin_pages);
    m.size(wSwapOut, s.swapout_pages);
    m.psi(wMemoryPsi, s.memory_pressure);
    m.psi(wCpuPsi, s.cpu_pressure);
    m.psi(wIoPsi, s.io_pressure);
    m.time(wHeartbeat, s.last_heartbeat);
    m.size(wWorkdirUsage, s.workdir_usage);
    m.size(wUnevictable, s.memory_unevictable);
    m.size(wMemoryMax, s.memory_max);
    m.size(wMemoryHigh, s.memory_high);
    m.size(wSwapMax, s.swap_max);
    m.time(wStartedAt, s.started_at);
    m.time(wReadyAt, s.ready_at);
    m.flag(wSignalsReadiness, s.signals_readiness, false);
    m.duration(wLoadLimit, s.load_limit);
    m.duration(wWatchdog, s.watchdog_interval);
    m.size(wWorkdirQuota, s.workdir_quota);
    m.size(wPeak, s.memory_peak);
    m.size(wPids, s.pids_current);
    auto& c = w.candidate;
    m.flag(wProtected, c.is_protected, false);
    m.flag(wPreemptible, c.preempt.preemptible, true);
    m.duration(wCheckpointTook, c.preempt.checkpoint_took);
    m.duration(wResumedAgo, c.preempt.resumed_ago);
    m.duration(wUnloadBound, c.preempt.unload_bound);
    m.duration(wUnloadedAgo, c.preempt.unloaded_ago);
}

template <typename Host, typename Mapper>
void map_host(Host& h, Mapper&& m) {
    m.size(hMemAvailable, h.mem_available);
    m.size(hSwapIn, h.pswpin);
    m.size(hSwapOut, h.pswpout);
    m.size(hSwapFree, h.swap_free);
    m.psi(hMemoryPsi, h.memory_pressure);
    m.psi(hCpuPsi, h.cpu_pressure);
    m.psi(hIoPsi, h.io_pressure);
    m.size(hMemTotal, h.mem_total);
    m.size(hSwapTotal, h.swap_total);
}

Fields<kWorkerFields> flatten(const TraceWorker& w) {
    Fields<kWorkerFields> f;
    map_worker(w, ToFields<kWorkerFields>{f});
    const WorkerSample& s = w.sample;
    if (s.engine) f[wEngineTime] = ms_of(s.engine->time);
    if (const auto& e = s.memory_events) {
        const uint64_t counts[] = {e->low, e->high, e->max, e->oom, e->oom_kill, e->oom_group_kill};
        for (unsigned i = 0; i < 6; ++i) f[wEvents + i] = static_cast<int64_t>(counts[i]);
    }
    f[wPriority] = w.candidate.priority;
    const std::string& no_suspend = w.candidate.preempt.no_suspend;
    if (!no_suspend.empty()) f[wNoSuspend] = text_hash(no_suspend);
    if (w.phase) f[wPhase] = *w.phase == WorkerPhase::serving ? 1 : 0;
    if (w.growth_percent_per_min) f[wGrowth] = centi_clamped(*w.growth_percent_per_min);
    return f;
}

void unflatten(const Fields<kWorkerFields>& f, TraceWorker& w) {
    map_worker(w, FromFields<kWorkerFields>{f});
    bool events = true;
    for (unsigned i = 0; i < 6; ++i) events = events && f[wEvents + i].has_value();
    if (events) {
        auto at = [&](unsigned i) { return static_cast<uint64_t>(*f[wEvents + i]); };
        w.sample.memory_events = MemoryEvents{at(0), at(1), at(2), at(3), at(4), at(5)};
    }
    w.candidate.name = w.name;
    w.candidate.priority = static_cast<int>(f[wPriority].value_or(0));
    if (f[wPhase]) w.phase = *f[wPhase] != 0 ? WorkerPhase::serving : WorkerPhase::loading;
    if (f[wGrowth])
        w.growth_percent_per_min = static_cast<double>(std::clamp<int64_t>(
                                       *f[wGrowth], -kMaxCentiGrowth, kMaxCentiGrowth)) /
                                   100;
}

Fields<kHostFields> flatten(const HostSample& h) {
    Fields<kHostFields> f;
    map_host(h, ToFields<kHostFields>{f});
    return f;
}

void unflatten(const Fields<kHostFields>& f, HostSample& h) {
    map_host(h, FromFields<kHostFields>{f});
}

// What the previous sample of one series (a worker, or the host) had.
template <size_t N>
struct Previous {
    uint64_t present = 0;
    std::array<int64_t, N> values{};
    std::string text;  // a worker's no_suspend
};

uint64_t zigzag(int64_t v) {
    return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

void put_varint(std::string& out, uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7f) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}
void put_signed(std::string& out, int64_t v) { put_varint(out, zigzag(v)); }
void put_string(std::string& out, std::string_view s, size_t max) {
    s = s.substr(0, max);
    put_varint(out, s.size());
    out.append(s);
}

// Differences wrap (unsigned arithmetic), so any two values round-trip.
int64_t minus(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t plus(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

// Returns the mask of the fields that changed.
template <size_t N>
uint64_t put_fields(std::string& out, const Fields<N>& f, Previous<N>& prev) {
    uint64_t present = 0, changed = 0;
    for (size_t i = 0; i < N; ++i)
        if (f[i]) {
            present |= uint64_t{1} << i;
            if (!(prev.present >> i & 1) || prev.values[i] != *f[i]) changed |= uint64_t{1} << i;
        }
    put_varint(out, present ^ prev.present);
    put_varint(out, changed);
    for (size_t i = 0; i < N; ++i)
        if (changed >> i & 1) {
            put_signed(out, minus(*f[i], prev.values[i]));
            prev.values[i] = *f[i];
        }
    prev.present = present;
    return changed;
}

class Reader {
  public:
    explicit Reader(std::string_view in) : in_(in) {}
    bool done() const { return at_ == in_.size(); }
    size_t at() const { return at_; }

    std::optional<uint64_t> varint() {
        uint64_t v = 0;
        for (unsigned shift = 0; shift < 64 && at_ < in_.size(); shift += 7) {
            auto byte = static_cast<uint8_t>(in_[at_++]);
            v |= static_cast<uint64_t>(byte & 0x7f) << shift;
            if (!(byte & 0x80)) return v;
        }
        return std::nullopt;
    }
    std::optional<int64_t> signed_varint() {
        auto v = varint();
        if (!v) return std::nullopt;
        return unzigzag(*v);
    }
    std::optional<uint8_t> byte() {
        if (at_ >= in_.size()) return std::nullopt;
        return static_cast<uint8_t>(in_[at_++]);
    }
    // A varint length and that many bytes.
    std::optional<std::string_view> bytes(size_t max) {
        auto n = varint();
        if (!n || *n > max || *n > in_.size() - at_) return std::nullopt;
        std::string_view s = in_.substr(at_, *n);
        at_ += *n;
        return s;
    }
    std::optional<std::string> string(size_t max) {
        auto s = bytes(max);
        if (!s) return std::nullopt;
        return std::string(*s);
    }
    std::optional<double> number() {
        if (in_.size() - at_ < sizeof(uint64_t)) return std::nullopt;
        uint64_t bits = 0;
        for (unsigned i = 0; i < 8; ++i)
            bits |= static_cast<uint64_t>(static_cast<uint8_t>(in_[at_ + i])) << (8 * i);
        at_ += 8;
        return std::bit_cast<double>(bits);
    }

  private:
    std::string_view in_;
    size_t at_ = 0;
};

void put_number(std::string& out, double v) {
    auto bits = std::bit_cast<uint64_t>(v);
    for (unsigned i = 0; i < 8; ++i) out.push_back(static_cast<char>(bits >> (8 * i) & 0xff));
}

// `changed`: the mask of the fields that changed.
template <size_t N>
bool get_fields(Reader& in, Fields<N>& f, Previous<N>& prev, uint64_t& changed_out) {
    auto flipped = in.varint();
    auto changed = in.varint();
    if (!flipped || !changed) return false;
    changed_out = *changed;
    uint64_t present = prev.present ^ *flipped;
    if (N < 64 && (present >> N || *changed >> N)) return false;
    if (*changed & ~present) return false;
    for (size_t i = 0; i < N; ++i) {
        if (*changed >> i & 1) {
            auto d = in.signed_varint();
            if (!d) return false;
            prev.values[i] = (prev.present >> i & 1) ? plus(prev.values[i], *d) : *d;
        } else if ((present >> i & 1) && !(prev.present >> i & 1)) {
            return false;  // newly present must be written
        }
        f[i] = (present >> i & 1) ? std::optional<int64_t>(prev.values[i]) : std::nullopt;
    }
    prev.present = present;
    return true;
}

}  // namespace trace_encoding

using namespace trace_encoding;

struct TraceBlockWriter::State {
    int64_t time = 0, wall = 0;  // of the previous record
    std::unordered_map<std::string, uint64_t> names;
    std::unordered_map<std::string, Previous<kWorkerFields>> workers;
    Previous<kHostFields> host;

    void put_name(std::string& out, const std::string& name) {
        std::string clipped = name.substr(0, kMaxTraceName);
        auto [it, added] = names.emplace(clipped, names.size());
        put_varint(out, it->second);
        if (added) put_string(out, clipped, kMaxTraceName);
    }
    void put_times(std::string& out, TimePoint t, int64_t wall_ms) {
        put_signed(out, minus(ms_of(t), time));
        put_signed(out, minus(wall_ms, wall));
        time = ms_of(t);
        wall = wall_ms;
    }
};

TraceBlockWriter::TraceBlockWriter() : state_(std::make_unique<State>()) {}
TraceBlockWriter::~TraceBlockWriter() = default;
TraceBlockWriter::TraceBlockWriter(TraceBlockWriter&&) noexcept = default;
TraceBlockWriter& TraceBlockWriter::operator=(TraceBlockWriter&&) noexcept = default;

std::string TraceBlockWriter::take() {
    std::string out = std::move(bytes_);
    bytes_.clear();
    state_ = std::make_unique<State>();
    return out;
}

void TraceBlockWriter::add(const TraceRound& round) {
    bytes_.push_back(static_cast<char>(round.woken ? kWoken : kTick));
    state_->put_times(bytes_, round.time, round.wall_ms);
    put_fields(bytes_, flatten(round.host), state_->host);
    size_t count = std::min(round.workers.size(), kMaxTraceWorkers);
    put_varint(bytes_, count);
    for (size_t i = 0; i < count; ++i) {
        const TraceWorker& w = round.workers[i];
        state_->put_name(bytes_, w.name);
        auto fields = flatten(w);
        uint64_t changed =
            put_fields(bytes_, fields, state_->workers[w.name.substr(0, kMaxTraceName)]);
        if (fields[wEngineTime]) {
            const EngineSeries& series = w.sample.engine->series;
            size_t n = std::min(series.size(), kMaxTraceSeries);
            put_varint(bytes_, n);
            auto it = series.begin();
            for (size_t k = 0; k < n; ++k, ++it) {
                put_string(bytes_, it->first, kMaxTraceName);
                put_number(bytes_, it->second);
            }
        }
        if (changed >> wNoSuspend & 1)
            put_string(bytes_, w.candidate.preempt.no_suspend, kMaxTraceText);
    }
}

void TraceBlockWriter::add(const TraceEvent& event) {
    bytes_.push_back(static_cast<char>(kEvent));
    state_->put_times(bytes_, event.time, event.wall_ms);
    bytes_.push_back(static_cast<char>(event.kind));
    state_->put_name(bytes_, event.worker);
    put_string(bytes_, event.rule, kMaxTraceName);
    put_string(bytes_, event.action, kMaxTraceName);
    bytes_.push_back(event.dry_run ? 1 : 0);
    put_string(bytes_, event.text, kMaxTraceText);
}

Result<void> decode_trace_block(std::string_view block, std::vector<TraceEntry>& out) {
    if (block.size() > kMaxTraceBlock) return plain_error("a trace block is larger than 16 MiB");
    Reader in(block);
    int64_t time = 0, wall = 0;
    std::vector<std::string> names;
    std::unordered_map<std::string, Previous<kWorkerFields>> workers;
    Previous<kHostFields> host;
    size_t record_at = 0;
    auto bad = [&](std::string_view what) -> Result<void> {
        return plain_error("trace block: " + std::string(what) + " in the record at byte " +
                           std::to_string(record_at));
    };
    auto times = [&]() -> bool {
        auto dt = in.signed_varint();
        auto dw = in.signed_varint();
        if (!dt || !dw) return false;
        time = plus(time, *dt);
        wall = plus(wall, *dw);
        return true;
    };
    auto name = [&]() -> std::optional<std::string> {
        auto index = in.varint();
        if (!index || *index > names.size()) return std::nullopt;
        if (*index < names.size()) return names[*index];
        auto added = in.string(kMaxTraceName);
        if (!added || names.size() >= kMaxTraceWorkers * 4) return std::nullopt;
        names.push_back(*added);
        return added;
    };
    while (!in.done()) {
        record_at = in.at();
        auto type = in.byte();
        if (*type == kTick || *type == kWoken) {
            TraceRound round;
            round.woken = *type == kWoken;
            if (!times()) return bad("a truncated time");
            round.time = time_of(time);
            round.wall_ms = clamp_wall(wall);
            Fields<kHostFields> hf;
            uint64_t changed = 0;
            if (!get_fields(in, hf, host, changed)) return bad("malformed host fields");
            unflatten(hf, round.host);
            round.host.time = round.time;
            auto count = in.varint();
            if (!count || *count > kMaxTraceWorkers) return bad("a malformed worker count");
            for (uint64_t i = 0; i < *count; ++i) {
                TraceWorker w;
                auto n = name();
                if (!n) return bad("a malformed worker name");
                w.name = *n;
                Fields<kWorkerFields> wf;
                Previous<kWorkerFields>& prev = workers[w.name];
                if (!get_fields(in, wf, prev, changed)) return bad("malformed worker fields");
                unflatten(wf, w);
                w.sample.time = round.time;
                if (wf[wEngineTime]) {
                    EngineReading reading{time_of(*wf[wEngineTime]), {}};
                    auto series = in.varint();
                    if (!series || *series > kMaxTraceSeries)
                        return bad("a malformed series count");
                    for (uint64_t k = 0; k < *series; ++k) {
                        auto key = in.string(kMaxTraceName);
                        auto value = in.number();
                        if (!key || !value) return bad("a malformed engine series");
                        reading.series[*key] = *value;
                    }
                    w.sample.engine = std::move(reading);
                }
                if (changed >> wNoSuspend & 1) {
                    auto text = in.string(kMaxTraceText);
                    if (!text || text->empty()) return bad("a malformed no-suspend text");
                    prev.text = std::move(*text);
                }
                if (wf[wNoSuspend]) w.candidate.preempt.no_suspend = prev.text;
                round.workers.push_back(std::move(w));
            }
            out.emplace_back(std::move(round));
        } else if (*type == kEvent) {
            TraceEvent e;
            if (!times()) return bad("a truncated time");
            e.time = time_of(time);
            e.wall_ms = clamp_wall(wall);
            auto kind = in.byte();
            if (!kind || *kind < 1 || *kind > 5) return bad("an unknown event kind");
            e.kind = static_cast<TraceEventKind>(*kind);
            auto worker = name();
            auto rule = in.string(kMaxTraceName);
            auto action = in.string(kMaxTraceName);
            auto dry = in.byte();
            auto text = in.string(kMaxTraceText);
            if (!worker || !rule || !action || !dry || *dry > 1 || !text)
                return bad("a malformed event");
            e.worker = std::move(*worker);
            e.rule = std::move(*rule);
            e.action = std::move(*action);
            e.dry_run = *dry == 1;
            e.text = std::move(*text);
            out.emplace_back(std::move(e));
        } else {
            return bad("an unknown record type " + std::to_string(*type));
        }
    }
    return {};
}

std::string encode_trace_file(const std::vector<std::string>& blocks) {
    std::string out(kTraceMagic);
    for (const auto& b : blocks) {
        put_varint(out, b.size());
        out.append(b);
    }
    return out;
}

Result<std::vector<TraceEntry>> decode_trace_file(std::string_view file) {
    if (!file.starts_with(kTraceMagic))
        return plain_error(
            "not an infervisor trace (it does not begin with \"infervisor-trace 1\")");
    Reader in(file.substr(kTraceMagic.size()));
    std::vector<TraceEntry> out;
    for (size_t index = 0; !in.done(); ++index) {
        auto block = in.bytes(kMaxTraceBlock);
        if (!block)
            return plain_error("block " + std::to_string(index) +
                               ": a malformed or truncated length");
        if (auto r = decode_trace_block(*block, out); !r)
            return plain_error("block " + std::to_string(index) + ": " + r.error().message());
    }
    return out;
}

TimePoint entry_time(const TraceEntry& entry) {
    return std::visit([](const auto& e) { return e.time; }, entry);
}
int64_t entry_wall_ms(const TraceEntry& entry) {
    return std::visit([](const auto& e) { return e.wall_ms; }, entry);
}

}  // namespace infervisor
