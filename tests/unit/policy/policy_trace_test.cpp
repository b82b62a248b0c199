// The policy trace (policy/policy_trace.h): what the daemon records of its
// engine's input round-trips exactly, costs little, and a hostile file is an
// error, never a crash; and the replay (policy/trace_replay.h) of a trace
// recorded from a live engine with the SHIPPED rules decides as the live
// engine did, at the same sample, while a changed threshold moves the
// decision and the replay says where it departs from what happened.
#include "policy/policy_trace.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/base64.h"
#include "config/config_loader.h"
#include "policy/trace_replay.h"
#include "supervise/policy_options.h"
#include "support/byte_units.h"

namespace infervisor {
namespace {

using namespace std::chrono_literals;

TimePoint at(double seconds) {
    return TimePoint(std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)) + 1000h);
}
constexpr int64_t kWallStart = 1'796'000'000'000;  // 2026-12-01, Unix ms
int64_t wall(double seconds) { return kWallStart + static_cast<int64_t>(seconds * 1000); }

PsiReading psi(double a, double b, double c, bool full) {
    PsiReading r{{a, b, c, 0}, std::nullopt};
    if (full) r.full = PsiAverages{c, a, b, 0};  // other values, as the kernel writes them
    return r;
}

TraceWorker full_worker() {
    TraceWorker w;
    w.name = "llama";
    WorkerSample& s = w.sample;
    s.memory_current = 700 * MiB + 4096;
    s.memory_max = 1 * GiB;
    s.memory_high = 900 * MiB;
    s.swap_current = 0;
    s.swap_max = 256 * MiB;
    s.memory_pressure = psi(12.34, 5.5, 1.02, true);
    s.cpu_pressure = psi(0.5, 0.25, 0.0, false);
    s.io_pressure = psi(99.99, 100, 0.01, true);
    s.memory_events = MemoryEvents{1, 2, 3, 4, 5, 6};
    s.cpu_usage_usec = 123'456'789;
    s.swapin_pages = 77;
    s.swapout_pages = 88;
    s.memory_anon = 650 * MiB;
    s.memory_unevictable = 4 * MiB;
    s.memory_peak = 800 * MiB;
    s.pids_current = 12;
    s.started_at = at(-100);
    s.ready_at = at(-40);
    s.signals_readiness = true;
    s.load_limit = 300s;
    s.last_heartbeat = at(-1.5);
    s.watchdog_interval = 30s;
    s.workdir_usage = 5 * GiB;
    s.workdir_quota = 20 * GiB;
    s.engine = EngineReading{
        at(-0.7),
        {{"llamacpp:requests_processing", 2}, {"llamacpp:tokens_predicted_total", 1.5e9}}};
    w.candidate.name = "llama";
    w.candidate.priority = -3;
    w.candidate.is_protected = true;
    w.candidate.preempt.preemptible = false;
    w.candidate.preempt.no_suspend = "its suspension by rule 'r' freed 0B of 412M";
    w.candidate.preempt.checkpoint_took = 4500ms;
    w.candidate.preempt.resumed_ago = 60s;
    w.candidate.preempt.unload_bound = 35s;
    w.candidate.preempt.unloaded_ago = 90s;
    w.phase = WorkerPhase::serving;
    w.growth_percent_per_min = -12.34;  // shrinking: a negative figure
    return w;
}

HostSample full_host() {
    HostSample h;
    h.memory_pressure = psi(1, 2, 3, true);
    h.cpu_pressure = psi(4, 5, 6, false);
    h.io_pressure = psi(7, 8, 9, true);
    h.pswpin = 1000;
    h.pswpout = 2000;
    h.mem_available = 3 * GiB;
    h.mem_total = 16 * GiB;
    h.swap_total = 0;
    h.swap_free = 0;
    return h;
}

void expect_same(const WorkerSample& a, const WorkerSample& b) {
    EXPECT_EQ(a.memory_current, b.memory_current);
    EXPECT_EQ(a.memory_max, b.memory_max);
    EXPECT_EQ(a.memory_high, b.memory_high);
    EXPECT_EQ(a.swap_current, b.swap_current);
    EXPECT_EQ(a.swap_max, b.swap_max);
    EXPECT_EQ(a.memory_pressure, b.memory_pressure);
    EXPECT_EQ(a.cpu_pressure, b.cpu_pressure);
    EXPECT_EQ(a.io_pressure, b.io_pressure);
    EXPECT_EQ(a.memory_events, b.memory_events);
    EXPECT_EQ(a.cpu_usage_usec, b.cpu_usage_usec);
    EXPECT_EQ(a.swapin_pages, b.swapin_pages);
    EXPECT_EQ(a.swapout_pages, b.swapout_pages);
    EXPECT_EQ(a.memory_anon, b.memory_anon);
    EXPECT_EQ(a.memory_unevictable, b.memory_unevictable);
    EXPECT_EQ(a.memory_peak, b.memory_peak);
    EXPECT_EQ(a.pids_current, b.pids_current);
    EXPECT_EQ(a.started_at, b.started_at);
    EXPECT_EQ(a.ready_at, b.ready_at);
    EXPECT_EQ(a.signals_readiness, b.signals_readiness);
    EXPECT_EQ(a.load_limit, b.load_limit);
    EXPECT_EQ(a.last_heartbeat, b.last_heartbeat);
    EXPECT_EQ(a.watchdog_interval, b.watchdog_interval);
    EXPECT_EQ(a.workdir_usage, b.workdir_usage);
    EXPECT_EQ(a.workdir_quota, b.workdir_quota);
    ASSERT_EQ(a.engine.has_value(), b.engine.has_value());
    if (a.engine) {
        EXPECT_EQ(a.engine->time, b.engine->time);
        EXPECT_EQ(a.engine->series, b.engine->series);
    }
}

void expect_same(const PreemptFacts& a, const PreemptFacts& b) {
    EXPECT_EQ(a.preemptible, b.preemptible);
    EXPECT_EQ(a.no_suspend, b.no_suspend);
    EXPECT_EQ(a.checkpoint_took, b.checkpoint_took);
    EXPECT_EQ(a.resumed_ago, b.resumed_ago);
    EXPECT_EQ(a.unload_bound, b.unload_bound);
    EXPECT_EQ(a.unloaded_ago, b.unloaded_ago);
}

TEST(PolicyTraceTest, EveryFieldTheEngineReadsRoundTripsAndAnAbsentOneStaysAbsent) {
    TraceRound first{at(0), wall(0), false, full_host(), {full_worker()}};
    first.host.time = first.time;
    first.workers[0].sample.time = first.time;
    // The next sample: values move, some disappear (a cgroup file gone),
    // one worker joins with almost nothing.
    TraceRound second = first;
    second.time = at(2);
    second.wall_ms = wall(2);
    second.woken = true;
    second.host.time = second.time;
    WorkerSample& s = second.workers[0].sample;
    s.time = second.time;
    s.memory_current = 300 * MiB;  // fell: a negative difference
    s.memory_pressure.reset();
    s.memory_events.reset();
    s.engine.reset();
    s.ready_at.reset();
    second.workers[0].candidate.preempt.no_suspend.clear();
    second.host.io_pressure->full.reset();
    second.host.mem_available.reset();
    TraceWorker bare;
    bare.name = "other";
    bare.sample.time = second.time;
    bare.candidate.name = "other";
    second.workers.push_back(bare);
    TraceEvent event{at(2.5),
                     wall(2.5),
                     TraceEventKind::decision,
                     "llama",
                     "near-the-cap",
                     "kill",
                     true,
                     "memory.headroom is 12s (< 30s) for 8s"};

    TraceBlockWriter writer;
    writer.add(first);
    writer.add(second);
    writer.add(event);
    std::vector<TraceEntry> decoded;
    ASSERT_TRUE(decode_trace_block(writer.bytes(), decoded));
    ASSERT_EQ(decoded.size(), 3u);
    for (size_t i = 0; i < 2; ++i) {
        const auto& want = i == 0 ? first : second;
        const auto& got = std::get<TraceRound>(decoded[i]);
        EXPECT_EQ(got.time, want.time);
        EXPECT_EQ(got.wall_ms, want.wall_ms);
        EXPECT_EQ(got.woken, want.woken);
        EXPECT_EQ(got.host.memory_pressure, want.host.memory_pressure);
        EXPECT_EQ(got.host.cpu_pressure, want.host.cpu_pressure);
        EXPECT_EQ(got.host.io_pressure, want.host.io_pressure);
        EXPECT_EQ(got.host.pswpin, want.host.pswpin);
        EXPECT_EQ(got.host.pswpout, want.host.pswpout);
        EXPECT_EQ(got.host.mem_available, want.host.mem_available);
        EXPECT_EQ(got.host.mem_total, want.host.mem_total);
        EXPECT_EQ(got.host.swap_total, want.host.swap_total);
        EXPECT_EQ(got.host.swap_free, want.host.swap_free);
        ASSERT_EQ(got.workers.size(), want.workers.size());
        for (size_t k = 0; k < got.workers.size(); ++k) {
            EXPECT_EQ(got.workers[k].name, want.workers[k].name);
            expect_same(got.workers[k].sample, want.workers[k].sample);
            EXPECT_EQ(got.workers[k].candidate.priority, want.workers[k].candidate.priority);
            EXPECT_EQ(got.workers[k].candidate.is_protected,
                      want.workers[k].candidate.is_protected);
            expect_same(got.workers[k].candidate.preempt, want.workers[k].candidate.preempt);
            EXPECT_EQ(got.workers[k].phase, want.workers[k].phase);
            EXPECT_EQ(got.workers[k].growth_percent_per_min,
                      want.workers[k].growth_percent_per_min);
        }
    }
    const auto& e = std::get<TraceEvent>(decoded[2]);
    EXPECT_EQ(e.time, event.time);
    EXPECT_EQ(e.wall_ms, event.wall_ms);
    EXPECT_EQ(e.kind, event.kind);
    EXPECT_EQ(e.worker, event.worker);
    EXPECT_EQ(e.rule, event.rule);
    EXPECT_EQ(e.action, event.action);
    EXPECT_EQ(e.dry_run, event.dry_run);
    EXPECT_EQ(e.text, event.text);

    // The same through the file form, and base64 as the Trace call sends it.
    auto encoded = base64_decode(base64_encode(writer.bytes()));
    ASSERT_TRUE(encoded);
    auto file = decode_trace_file(encode_trace_file({*encoded, *encoded}));
    ASSERT_TRUE(file) << file.error().message();
    EXPECT_EQ(file->size(), 6u);
}

// A steady worker (its CPU time moving, its memory wobbling a page) costs
// a few bytes a sample: an hour of 20 workers at 2s stays well under 1 MiB.
// The growth figure is the daemon's own: what is not a number is none,
// the rest clamped, and what decodes encodes back the same.
TEST(PolicyTraceTest, GrowthFiguresOutOfRangeAreClampedOrNone) {
    const double inputs[] = {std::nan(""), HUGE_VAL, -HUGE_VAL, 1e300, -1e300, 0.004, -0.006};
    // 0.004 %/min is 0 in hundredths: recorded as 0, not as none.
    const std::optional<double> expected[] = {std::nullopt, std::nullopt, std::nullopt, 1e12,
                                              -1e12,        0.0,          -0.01};
    TraceBlockWriter writer;
    for (size_t i = 0; i < std::size(inputs); ++i) {
        TraceRound round{at(2.0 * i), wall(2.0 * i), false, {}, {}};
        TraceWorker w;
        w.name = "w";
        w.growth_percent_per_min = inputs[i];
        round.workers.push_back(w);
        writer.add(round);
    }
    TraceEvent journaled{at(20), wall(20), TraceEventKind::action, "w", "watchdog", "kill"};
    writer.add(journaled);
    std::vector<TraceEntry> decoded;
    ASSERT_TRUE(decode_trace_block(writer.bytes(), decoded));
    ASSERT_EQ(decoded.size(), std::size(inputs) + 1);
    for (size_t i = 0; i < std::size(inputs); ++i) {
        const auto& got = std::get<TraceRound>(decoded[i]).workers.at(0).growth_percent_per_min;
        EXPECT_EQ(got, expected[i]) << "input " << inputs[i];
    }
    const auto& event = std::get<TraceEvent>(decoded.back());
    EXPECT_EQ(event.kind, TraceEventKind::action);
    EXPECT_EQ(event.rule, "watchdog");
    EXPECT_EQ(event.action, "kill");
}

TEST(PolicyTraceTest, ASteadyWorkerCostsAFewBytesASample) {
    TraceBlockWriter writer;
    TraceWorker w = full_worker();
    w.sample.engine.reset();
    for (int i = 0; i < 1800; ++i) {
        w.sample.cpu_usage_usec = *w.sample.cpu_usage_usec + 20'000 + i % 7;
        w.sample.memory_current = 700 * MiB + (i % 2) * 4096;
        w.sample.memory_anon = *w.sample.memory_current - 50 * MiB;
        TraceRound round{at(2.0 * i), wall(2.0 * i), false, full_host(), {w}};
        writer.add(round);
    }
    double per_round = static_cast<double>(writer.bytes().size()) / 1800;
    EXPECT_LT(per_round, 24.0) << "host + 1 worker, bytes a round";
    RecordProperty("bytes_per_round", std::to_string(per_round));
}

TEST(PolicyTraceTest, AnyCutOrFlippedByteIsAnErrorOrAValidTraceNeverACrash) {
    TraceBlockWriter writer;
    TraceRound round{at(0), wall(0), false, full_host(), {full_worker()}};
    writer.add(round);
    writer.add(TraceEvent{at(1), wall(1), TraceEventKind::exited, "llama", "", "", false,
                          "killed by the kernel's OOM killer"});
    const std::string bytes = writer.bytes();
    size_t errors = 0;
    for (size_t cut = 0; cut < bytes.size(); ++cut) {
        std::vector<TraceEntry> out;
        if (!decode_trace_block(std::string_view(bytes).substr(0, cut), out)) ++errors;
    }
    EXPECT_GT(errors, bytes.size() / 2);
    for (size_t i = 0; i < bytes.size(); ++i) {
        std::string flipped = bytes;
        flipped[i] = static_cast<char>(flipped[i] ^ 0xff);
        std::vector<TraceEntry> out;
        (void)decode_trace_block(flipped, out);
    }
    EXPECT_FALSE(decode_trace_file("not a trace"));
    EXPECT_FALSE(decode_trace_file(std::string(kTraceMagic) + "\xff\xff\xff\xff\xff\xff"));
    EXPECT_FALSE(base64_decode("abc"));
    EXPECT_FALSE(base64_decode("ab!="));
    EXPECT_FALSE(base64_decode("fm=="));  // bits the padding drops are set
    EXPECT_EQ(base64_decode("Zm8="), "fo");
}

// ---- Replay ------------------------------------------------------------

Config load_shipped(std::string_view replace = {}, std::string_view with = {}) {
    const char* src = std::getenv("INFERVISOR_SOURCE_ROOT");
    EXPECT_NE(src, nullptr);
    if (!src) return {};
    std::ifstream in(std::filesystem::path(src) / "etc/infervisor.yaml");
    std::stringstream text;
    text << in.rdbuf();
    std::string yaml = text.str();
    if (!replace.empty()) {
        auto pos = yaml.find(replace);
        EXPECT_NE(pos, std::string::npos) << replace;
        if (pos != std::string::npos) yaml.replace(pos, replace.size(), with);
    }
    auto loaded = load_config_text(yaml, "infervisor.yaml");
    EXPECT_TRUE(loaded.ok()) << loaded.errors.format();
    return loaded.config;
}

PolicyEngine engine_for(const Config& config) {
    PolicyEngine engine(policy_options(config.daemon));
    configure_engine(engine, config.daemon);
    engine.set_default_rules(config.default_rules);
    engine.set_host_rules(config.host_rules);
    return engine;
}

// A 16 GiB host with two workers capped at 1 GiB: "steady" holds 600 MiB,
// "leaky" is ready at 10s with 300 MiB and then grows 10 MiB/s. The live
// engine runs as the daemon's PolicyRunner does (samples, then the host,
// then the round and its decisions recorded, then the decisions carried
// out: a kill ends the run, recorded as the `exited` event).
std::vector<TraceEntry> record_live(const Config& config, std::vector<Decision>& live) {
    PolicyEngine engine = engine_for(config);
    TraceBlockWriter writer;
    bool leaky_alive = true;
    double step = std::chrono::duration<double>(config.daemon.sample_interval).count();
    for (double t = 0; t <= 120; t += step) {
        TraceRound round{at(t), wall(t), false, {}, {}};
        std::vector<Decision> decided;
        auto sample_of = [&](const std::string& name, double mib, double ready) {
            TraceWorker w;
            w.name = name;
            w.candidate.name = name;
            WorkerSample& s = w.sample;
            s.time = at(t);
            s.memory_current = static_cast<uint64_t>(mib * MiB);
            s.memory_anon = s.memory_current;
            s.memory_max = 1 * GiB;
            s.swap_current = 0;
            s.swap_max = 0;
            s.memory_events = MemoryEvents{};
            s.cpu_usage_usec = static_cast<uint64_t>(t * 1e5);
            s.memory_pressure = psi(0, 0, 0, true);
            s.started_at = at(0);
            s.signals_readiness = true;
            if (t >= ready) s.ready_at = at(ready);
            return w;
        };
        round.workers.push_back(sample_of("steady", 600, 5));
        if (leaky_alive)
            round.workers.push_back(sample_of("leaky", 300 + 10 * std::max(0.0, t - 10), 10));
        std::vector<WorkerCandidate> candidates;
        for (auto& w : round.workers) {
            for (auto& d : engine.evaluate(w.name, w.sample, round.time)) decided.push_back(d);
            w.phase = engine.phase_of(w.name);
            candidates.push_back(w.candidate);
        }
        round.host.time = at(t);
        round.host.mem_total = 16 * GiB;
        round.host.mem_available = 12 * GiB;
        round.host.swap_total = 0;
        round.host.swap_free = 0;
        round.host.pswpin = 0;
        round.host.pswpout = 0;
        round.host.memory_pressure = psi(0, 0, 0, true);
        for (auto& d : engine.evaluate_host(round.host, candidates, round.time))
            decided.push_back(d);
        writer.add(round);
        for (const auto& d : decided) {
            writer.add(TraceEvent{at(t), wall(t), TraceEventKind::decision, d.worker, d.rule,
                                  std::string(to_string(d.action)), d.dry_run, d.reason});
            live.push_back(d);
        }
        for (const auto& d : decided)
            if (d.worker == "leaky" && d.action == Action::kill && leaky_alive) {
                leaky_alive = false;
                writer.add(TraceEvent{at(t + 0.1), wall(t + 0.1), TraceEventKind::exited, "leaky",
                                      "", "", false, "killed by SIGKILL (rule 'near-the-cap')"});
            }
    }
    std::vector<TraceEntry> trace;
    EXPECT_TRUE(decode_trace_block(writer.bytes(), trace));
    return trace;
}

const ReplayItem* find_item(const ReplayResult& r, ReplayItem::Kind kind, std::string_view rule) {
    for (const auto& item : r.items)
        if (item.kind == kind && item.rule == rule) return &item;
    return nullptr;
}

TEST(TraceReplayTest, ALiveRecordingReplayedWithTheShippedRulesDecidesTheSameAtTheSameSample) {
    Config shipped = load_shipped();
    std::vector<Decision> live;
    auto trace = record_live(shipped, live);
    ASSERT_FALSE(live.empty());
    EXPECT_EQ(live.front().worker, "leaky") << "the grower, not the steady server";

    PolicyEngine engine = engine_for(shipped);
    ReplayResult r = replay_trace(trace, engine);
    EXPECT_FALSE(r.diverged_at_wall_ms.has_value());
    size_t same = 0;
    for (const auto& item : r.items) {
        EXPECT_NE(item.kind, ReplayItem::Kind::would) << item.rule << " " << item.worker;
        EXPECT_NE(item.kind, ReplayItem::Kind::not_taken) << item.rule << " " << item.worker;
        if (item.kind == ReplayItem::Kind::same) ++same;
    }
    EXPECT_EQ(same, live.size());
    const ReplayItem* kill = find_item(r, ReplayItem::Kind::same, live.front().rule);
    ASSERT_NE(kill, nullptr);
    EXPECT_EQ(kill->worker, "leaky");
    EXPECT_EQ(r.phase_differences, 0u);
    const ReplayItem* exit = find_item(r, ReplayItem::Kind::happened, "");
    ASSERT_NE(exit, nullptr);
    EXPECT_EQ(exit->detail, "killed by SIGKILL (rule 'near-the-cap')");
    EXPECT_GT(exit->wall_ms, kill->wall_ms);
}

// The daemon journals each action it takes (TraceEventKind::action, what
// `history` marks), its engine's and the others' (a watchdog's kill): the
// replay passes over them and decides as it did without them.
TEST(TraceReplayTest, JournaledActionsChangeNothingInTheReplay) {
    Config shipped = load_shipped();
    std::vector<Decision> live;
    auto trace = record_live(shipped, live);
    std::vector<TraceEntry> journaled;
    for (const auto& entry : trace) {
        journaled.push_back(entry);
        const auto* e = std::get_if<TraceEvent>(&entry);
        if (!e || e->kind != TraceEventKind::decision) continue;
        TraceEvent action = *e;
        action.kind = TraceEventKind::action;
        journaled.push_back(action);
        action.rule = "watchdog";
        journaled.push_back(action);
    }
    ASSERT_GT(journaled.size(), trace.size());
    PolicyEngine plain = engine_for(shipped), with_actions = engine_for(shipped);
    ReplayResult a = replay_trace(trace, plain);
    ReplayResult b = replay_trace(journaled, with_actions);
    ASSERT_EQ(a.items.size(), b.items.size());
    for (size_t i = 0; i < a.items.size(); ++i) {
        EXPECT_EQ(a.items[i].kind, b.items[i].kind);
        EXPECT_EQ(a.items[i].rule, b.items[i].rule);
        EXPECT_EQ(a.items[i].wall_ms, b.items[i].wall_ms);
    }
    EXPECT_EQ(a.rounds, b.rounds);
    EXPECT_FALSE(b.diverged_at_wall_ms.has_value());
}

TEST(TraceReplayTest, AWiderThresholdActsEarlierAndTheReplaySaysWhereItDeparts) {
    Config shipped = load_shipped();
    std::vector<Decision> live;
    auto trace = record_live(shipped, live);
    ASSERT_FALSE(live.empty());
    ASSERT_EQ(live.front().rule, "near-the-cap");

    Config wider = load_shipped("memory.headroom < 30s for 8s", "memory.headroom < 60s for 8s");
    PolicyEngine engine = engine_for(wider);
    ReplayResult r = replay_trace(trace, engine);
    const ReplayItem* would = find_item(r, ReplayItem::Kind::would, "near-the-cap");
    const ReplayItem* really = find_item(r, ReplayItem::Kind::not_taken, "near-the-cap");
    ASSERT_NE(would, nullptr);
    ASSERT_NE(really, nullptr);
    EXPECT_EQ(would->worker, "leaky");
    EXPECT_LT(would->wall_ms, really->wall_ms);
    // Reaching 30s of headroom takes 30s more at 10 MiB/s than 60s does.
    EXPECT_EQ(really->wall_ms - would->wall_ms, 30'000);
    ASSERT_TRUE(r.diverged_at_wall_ms.has_value());
    EXPECT_EQ(*r.diverged_at_wall_ms, would->wall_ms);
    EXPECT_FALSE(would->after_divergence);
    EXPECT_TRUE(really->after_divergence);

    Config tighter = load_shipped("memory.headroom < 30s for 8s", "memory.headroom < 10s for 8s");
    PolicyEngine later = engine_for(tighter);
    ReplayResult r2 = replay_trace(trace, later);
    const ReplayItem* not_taken = find_item(r2, ReplayItem::Kind::not_taken, "near-the-cap");
    ASSERT_NE(not_taken, nullptr);
    EXPECT_EQ(r2.diverged_at_wall_ms, not_taken->wall_ms);
}

TEST(TraceReplayTest, APhaseJudgedOtherwiseThanTheDaemonDidIsCountedAndNamed) {
    Config shipped = load_shipped();
    std::vector<Decision> live;
    auto trace = record_live(shipped, live);
    // The daemon (here: the recording) said "loading" where the engine,
    // given the same samples, says "serving": as after a changed settle.
    size_t flipped = 0;
    for (auto& entry : trace)
        if (auto* round = std::get_if<TraceRound>(&entry))
            for (auto& w : round->workers)
                if (w.name == "steady" && w.phase == WorkerPhase::serving && flipped < 3) {
                    w.phase = WorkerPhase::loading;
                    ++flipped;
                }
    ASSERT_EQ(flipped, 3u);
    PolicyEngine engine = engine_for(shipped);
    ReplayResult r = replay_trace(trace, engine);
    EXPECT_EQ(r.phase_differences, 3u);
    ASSERT_TRUE(r.first_phase_difference.has_value());
    EXPECT_EQ(r.first_phase_difference->worker, "steady");
    EXPECT_EQ(r.first_phase_difference->detail,
              "the replay judges the run serving, the daemon judged it loading");
}

TEST(TraceReplayTest, SinceStartsTheEngineEmptyThere) {
    Config shipped = load_shipped();
    std::vector<Decision> live;
    auto trace = record_live(shipped, live);
    PolicyEngine engine = engine_for(shipped);
    ReplaySetup setup;
    setup.since_wall_ms = wall(100);
    ReplayResult r = replay_trace(trace, engine, setup);
    EXPECT_EQ(r.first_wall_ms, wall(100));
    for (const auto& item : r.items) EXPECT_GE(item.wall_ms, wall(100));
}

}  // namespace
}  // namespace infervisor
