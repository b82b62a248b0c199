// simulate [--config FILE|DIR] [--from FILE] [--since WHEN] [--worker NAME...] [--json]
//
// What-if: the daemon's recording of its policy engine's input (or an
// exported one) run through the engine set up with another configuration,
// here in the client (policy/trace_replay.h), beside what really happened.
// Nothing on the host changes.
#include <algorithm>
#include <ctime>
#include <iostream>
#include <memory>

#include "base/file_io.h"
#include "commands.h"
#include "config/config_loader.h"
#include "control/varlink_message.h"
#include "policy/trace_replay.h"
#include "supervise/policy_options.h"
#include "time_spec.h"
#include "trace_fetch.h"

namespace infervisor::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// An exported trace is at most the daemon's bound many times over.
constexpr size_t kMaxTraceFileBytes = 256u << 20;

struct SimulateArgs {
    std::string config;  // empty: the daemon's default configuration file
    std::string from;    // empty: ask the daemon
    std::string since;
    std::vector<std::string> workers;
};

fs::path main_file_of(const std::string& config) {
    if (config.empty()) return ConfigSource{}.main_file;
    std::error_code ec;
    if (fs::is_directory(config, ec)) return fs::path(config) / "infervisor.yaml";
    return config;
}

std::string clock_time(int64_t wall_ms, bool with_date) {
    std::time_t t = static_cast<std::time_t>(wall_ms / 1000);
    std::tm tm{};
    ::localtime_r(&t, &tm);
    char text[32];
    std::strftime(text, sizeof text, with_date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm);
    return text;
}

std::string_view kind_name(ReplayItem::Kind kind) {
    switch (kind) {
        case ReplayItem::Kind::same:
            return "same";
        case ReplayItem::Kind::would:
            return "would";
        case ReplayItem::Kind::not_taken:
            return "not-taken";
        case ReplayItem::Kind::happened:
            return "happened";
    }
    return "happened";
}

std::string what_of(const ReplayItem& item) {
    std::string what = item.rule.empty() ? item.action : "rule '" + item.rule + "' " + item.action;
    if (item.dry_run) what += " (dry run)";
    return what;
}

// One line for people.
std::string line_of(const ReplayItem& item) {
    std::string who = item.worker.empty() ? "host" : item.worker;
    std::string line = clock_time(item.wall_ms, false) + "  " + who + "  ";
    switch (item.kind) {
        case ReplayItem::Kind::same:
            line += what_of(item) + ", as really: " + item.detail;
            break;
        case ReplayItem::Kind::would:
            line += "would: " + what_of(item) + ": " + item.detail;
            break;
        case ReplayItem::Kind::not_taken:
            line += "really: " + what_of(item) + ", not with this configuration: " + item.detail;
            break;
        case ReplayItem::Kind::happened:
            line +=
                "really: " + (item.rule.empty() ? item.detail : what_of(item) + ": " + item.detail);
            break;
    }
    return line;
}

bool shown(const ReplayItem& item, const std::vector<std::string>& workers) {
    return workers.empty() ||
           std::find(workers.begin(), workers.end(), item.worker) != workers.end();
}

std::string simulate_text(const std::vector<TraceEntry>& trace, const Config& config,
                          const std::string& config_name, std::optional<uint64_t> since_usec,
                          const std::vector<std::string>& workers, bool as_json);

// The recording: from the file `from`, or (empty) from the daemon.
std::optional<std::vector<TraceEntry>> read_trace(CliContext& ctx, const std::string& from) {
    if (!from.empty()) {
        auto text = read_regular_file(from, kMaxTraceFileBytes, "a trace file");
        if (!text) {
            ctx.fail(kFailure, "cannot read " + from + ": " + text.error().message());
            return std::nullopt;
        }
        auto trace = decode_trace_file(*text);
        if (!trace) {
            ctx.fail(kFailure, from + ": " + trace.error().message());
            return std::nullopt;
        }
        return std::move(*trace);
    }
    return fetch_trace(ctx);
}

void run_simulate(CliContext& ctx, const SimulateArgs& args) {
    // The configuration and any --from file are this machine's.
    if (ctx.refuses_hosts("simulate",
                          "this machine's configuration (export the remote recording with "
                          "`-H HOST history --export FILE`, then `simulate --from FILE`)"))
        return;
    auto report =
        simulation_report(ctx, args.config, args.from, args.since, args.workers, ctx.json);
    if (!report) return;
    ctx.page();
    std::cout << *report;
}

// The replay of `trace` with `config`'s rules: lines for people, or JSON.
// `since_usec`: replay from there on; `workers`: show only their lines.
std::string simulate_text(const std::vector<TraceEntry>& trace, const Config& config,
                          const std::string& config_name, std::optional<uint64_t> since_usec,
                          const std::vector<std::string>& workers, bool as_json) {
    PolicyEngine engine;
    configure_engine(engine, config.daemon);
    engine.set_dry_run(config.daemon.dry_run);
    engine.set_default_rules(config.default_rules);
    engine.set_host_rules(config.host_rules);
    for (const auto& w : config.workers) engine.set_worker_rules(w.name, w.rules);
    ReplaySetup setup;
    if (since_usec) setup.since_wall_ms = static_cast<int64_t>(*since_usec / 1000);
    setup.adjust_candidate = [&config](WorkerCandidate& c) {
        for (const auto& w : config.workers)
            if (w.name == c.name) {
                c.priority = static_cast<int>(w.priority);
                c.is_protected = w.is_protected;
                c.preempt.preemptible = w.preemptible;
            }
    };
    ReplayResult r = replay_trace(trace, engine, setup);
    size_t counts[4] = {0, 0, 0, 0};
    for (const auto& item : r.items)
        if (shown(item, workers)) ++counts[static_cast<int>(item.kind)];
    if (as_json) {
        json items = json::array();
        for (const auto& item : r.items) {
            if (!shown(item, workers)) continue;
            items.push_back({{"time_usec", item.wall_ms * 1000},
                             {"kind", kind_name(item.kind)},
                             {"worker", item.worker},
                             {"rule", item.rule},
                             {"action", item.action},
                             {"dry_run", item.dry_run},
                             {"detail", item.detail},
                             {"after_divergence", item.after_divergence}});
        }
        json out = {{"config", config_name},
                    {"rounds", r.rounds},
                    {"first_usec", r.first_wall_ms * 1000},
                    {"last_usec", r.last_wall_ms * 1000},
                    {"diverged_at_usec",
                     r.diverged_at_wall_ms ? json(*r.diverged_at_wall_ms * 1000) : json(nullptr)},
                    {"same", counts[0]},
                    {"would", counts[1]},
                    {"not_taken", counts[2]},
                    {"phase_differences", r.phase_differences},
                    {"items", std::move(items)}};
        return dump_json(out, 2) + "\n";
    }
    std::string out;
    if (r.rounds == 0)
        return "The recording holds no evaluation in that span: nothing to replay.\n";
    out += "Replayed " + std::to_string(r.rounds) + " evaluations from " +
           clock_time(r.first_wall_ms, true) + " to " + clock_time(r.last_wall_ms, true) +
           " with the rules of " + config_name + ".\n";
    bool divergence_said = false;
    for (const auto& item : r.items) {
        if (!shown(item, workers)) continue;
        if (item.after_divergence && !divergence_said) {
            out +=
                "-- from here on the recording shows what followed the real decisions, not these: "
                "what follows is an indication only --\n";
            divergence_said = true;
        }
        out += line_of(item) + "\n";
    }
    out += std::to_string(counts[0]) + " decision(s) as really, " + std::to_string(counts[1]) +
           " only in the replay, " + std::to_string(counts[2]) + " only really.";
    if (r.first_phase_difference)
        out += " The runs' phases differ from the daemon's at " +
               std::to_string(r.phase_differences) + " sample(s), first " +
               clock_time(r.first_phase_difference->wall_ms, false) + ": " +
               r.first_phase_difference->worker + ": " + r.first_phase_difference->detail + ".";
    if (r.diverged_at_wall_ms)
        out += " The replay departs from what happened at " +
               clock_time(*r.diverged_at_wall_ms, false) + ".";
    else
        out += " The replay decides as the daemon did.";
    return out + "\n";
}

}  // namespace

std::optional<std::string> simulation_report(CliContext& ctx, const std::string& config,
                                             const std::string& from, const std::string& since,
                                             const std::vector<std::string>& workers,
                                             bool as_json) {
    std::optional<uint64_t> since_usec;
    if (!since.empty()) {
        auto now = std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
        auto parsed = parse_since(since, static_cast<uint64_t>(now));
        if (!parsed) {
            ctx.fail(kUsage, "--since: " + parsed.error().message());
            return std::nullopt;
        }
        since_usec = *parsed;
    }
    fs::path main_file = main_file_of(config);
    LoadedConfig loaded = load_config(ConfigSource{main_file, {}});
    if (!loaded.errors.empty()) {
        for (const auto& line : loaded.errors.lines()) std::cerr << line << '\n';
        ctx.fail(kFailure, main_file.string() + " has errors: nothing was simulated");
        return std::nullopt;
    }
    auto trace = read_trace(ctx, from);
    if (!trace) return std::nullopt;
    return simulate_text(*trace, loaded.config, main_file.string(), since_usec, workers, as_json);
}

void add_simulate_command(CLI::App& app, CliContext& ctx) {
    auto args = std::make_shared<SimulateArgs>();
    auto* cmd = app.add_subcommand(
        "simulate", "Replay what the daemon recorded through a configuration's rules");
    cmd->add_option("--config", args->config,
                    "The configuration to try: a main file (its workers.d too) or a directory "
                    "holding infervisor.yaml (default: /etc/infervisor/infervisor.yaml)");
    cmd->add_option("--from", args->from,
                    "Replay a recording exported with `history --export` instead of asking "
                    "the daemon");
    cmd->add_option("--since", args->since,
                    "Replay from WHEN on (\"1h\", \"14:00\", as events --since); the engine "
                    "starts empty there");
    cmd->add_option("--worker", args->workers, "Show only this worker's lines (repeatable)");
    cmd->add_flag("--json", ctx.json, "The replay as JSON");
    cmd->footer(
        "The daemon records what its policy engine is given (every evaluation, with the\n"
        "host's and each worker's sample) for `metrics: history` (default 1h). simulate\n"
        "runs it through the rules of --config here, changing nothing, and shows each\n"
        "decision beside what really happened. After the first difference the recorded\n"
        "samples are what followed the real decisions: the output says so.\n"
        "Examples:\n"
        "  infervisorctl simulate --config /tmp/tighter.yaml\n"
        "  infervisorctl history --export incident.trace\n"
        "  infervisorctl simulate --from incident.trace --worker llama");
    cmd->callback([&ctx, args] { run_simulate(ctx, *args); });
}

}  // namespace infervisor::cli
