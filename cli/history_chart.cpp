#include "history_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "human_format.h"

namespace infervisor::cli {

namespace {

using nlohmann::json;

constexpr std::array<const char*, 9> kBlocks = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};

std::optional<double> number(const json& sample, const char* key) {
    auto it = sample.find(key);
    if (it == sample.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
}

// The highest value of `key` among the samples of each column.
std::vector<std::optional<double>> columns(const json& samples, const char* key, int width) {
    std::vector<std::optional<double>> out(static_cast<size_t>(width));
    size_t n = samples.size();
    for (size_t i = 0; i < n; ++i) {
        auto v = number(samples[i], key);
        if (!v) continue;
        auto& cell = out[i * static_cast<size_t>(width) / n];
        cell = std::max(cell.value_or(*v), *v);
    }
    return out;
}

std::string sparkline(const std::vector<std::optional<double>>& cols, double top) {
    std::string line;
    for (const auto& v : cols) {
        if (!v || top <= 0) {
            line += v ? kBlocks[0] : "·";
            continue;
        }
        int level = static_cast<int>(std::lround(std::clamp(*v / top, 0.0, 1.0) * 8));
        line += kBlocks[static_cast<size_t>(std::max(level, *v > 0 ? 1 : 0))];
    }
    return line;
}

// The chart's rows, top first: a cell is full where the column reaches the
// row; the rows holding memory.max and memory.high are drawn across.
std::vector<std::string> memory_rows(const std::vector<std::optional<double>>& mem,
                                     std::optional<double> max, std::optional<double> high,
                                     double top, int height) {
    auto row_of = [&](double v) {
        return std::clamp(static_cast<int>(std::ceil(v / top * height)) - 1, 0, height - 1);
    };
    std::vector<std::string> rows;
    for (int r = height - 1; r >= 0; --r) {
        std::string line;
        double floor = top * r / height;
        for (const auto& v : mem) {
            if (v && *v > floor) {
                double part = std::min((*v - floor) / (top / height), 1.0);
                line += kBlocks[static_cast<size_t>(std::max<long>(1, std::lround(part * 8)))];
            } else if (max && row_of(*max) == r) {
                line += "━";
            } else if (high && row_of(*high) == r) {
                line += "╌";
            } else {
                line += v ? " " : "·";
            }
        }
        std::string label = r == height - 1 ? human_bytes(static_cast<uint64_t>(top)) : "";
        if (max && row_of(*max) == r) label = "max";
        if (high && row_of(*high) == r && label.empty()) label = "high";
        rows.push_back(fmt::format("{:>8} {}", label, line));
    }
    return rows;
}

std::string action_letter(const json& a) {
    std::string action = a.value("action", "");
    char c = action.empty() ? '?' : static_cast<char>(std::toupper(action[0]));
    if (a.value("dry_run", false)) c = static_cast<char>(std::tolower(c));
    return std::string(1, c);
}

std::string span(uint64_t usec) {
    uint64_t s = usec / 1'000'000;
    if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
    if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
    return fmt::format("{}s", s);
}

}  // namespace

std::vector<std::string> draw_history(const std::string& worker, const json& reply,
                                      ChartSize size) {
    const json& samples = reply.at("samples");
    const json& actions = reply.at("actions");
    std::vector<std::string> out;
    if (samples.empty()) {
        out.push_back(worker +
                      ": no samples yet (the worker has not run since the daemon "
                      "started, or history is 0)");
        return out;
    }
    int width = std::clamp(size.width, 10, 1000);
    width = std::min<int>(width, static_cast<int>(samples.size()));
    int height = std::clamp(size.height, 3, 100);
    uint64_t first = samples.front().value("time_usec", uint64_t{0});
    uint64_t last = samples.back().value("time_usec", uint64_t{0});
    const json& newest = samples.back();
    auto max = number(newest, "memory_max");
    auto high = number(newest, "memory_high");
    auto mem = columns(samples, "memory_current", width);
    double peak = 0;
    for (const auto& v : mem) peak = std::max(peak, v.value_or(0));
    double top = std::max(max.value_or(0), peak);
    if (top <= 0) top = 1;
    out.push_back(fmt::format("{}: last {} ({} samples, every {}); memory.max {}, memory.high {}",
                              worker, span(last - first), samples.size(),
                              span(reply.value("interval_usec", uint64_t{0})),
                              human_limit(max ? std::optional<uint64_t>(*max) : std::nullopt),
                              human_limit(high ? std::optional<uint64_t>(*high) : std::nullopt)));
    for (auto& row : memory_rows(mem, max, high, top, height)) out.push_back(std::move(row));
    out.push_back(fmt::format(
        "{:>8} {}", "psi", sparkline(columns(samples, "memory_pressure_some_avg10", width), 100)));
    auto swap = columns(samples, "swap_current", width);
    double swap_top = 0;
    for (const auto& v : swap) swap_top = std::max(swap_top, v.value_or(0));
    out.push_back(fmt::format("{:>8} {}", "swap", sparkline(swap, swap_top)));
    std::string marks(static_cast<size_t>(width), ' ');
    for (const auto& a : actions) {
        uint64_t t = a.value("time_usec", uint64_t{0});
        if (t < first || t > last + reply.value("interval_usec", uint64_t{0})) continue;
        size_t col = last > first
                         ? static_cast<size_t>((t - first) * static_cast<uint64_t>(width - 1) /
                                               (last - first))
                         : 0;
        marks[std::min(col, marks.size() - 1)] = action_letter(a)[0];
    }
    out.push_back(fmt::format("{:>8} {}", "actions", marks));
    std::string axis = fmt::format("-{}", span(last - first));
    out.push_back(fmt::format("{:>8} {}{:>{}}", "", axis, "now",
                              std::max<int>(3, width - static_cast<int>(axis.size()))));
    out.push_back(
        fmt::format("{:>8} psi: memory pressure (some avg10, 0-100%); swap: scaled to "
                    "{}; actions: K kill, T throttle, F freeze, C checkpoint, L log "
                    "(lower case: dry run)",
                    "", human_bytes(static_cast<uint64_t>(swap_top))));
    for (const auto& a : actions)
        out.push_back(fmt::format("{:>8} {} rule '{}': {}{}", "",
                                  local_time(a.value("time_usec", uint64_t{0})),
                                  printable(a.value("rule", "")), printable(a.value("action", "")),
                                  a.value("dry_run", false) ? " (dry run)" : ""));
    return out;
}

std::string history_csv(const json& reply) {
    static const char* keys[] = {"time_usec",
                                 "memory_current",
                                 "memory_max",
                                 "memory_high",
                                 "swap_current",
                                 "memory_pressure_some_avg10",
                                 "memory_pressure_full_avg10",
                                 "swap_in_pages_per_second",
                                 "memory_growth_percent_per_min"};
    std::string out;
    for (size_t i = 0; i < std::size(keys); ++i) out += (i ? "," : "") + std::string(keys[i]);
    out += '\n';
    for (const auto& s : reply.at("samples")) {
        for (size_t i = 0; i < std::size(keys); ++i) {
            if (i) out += ',';
            auto it = s.find(keys[i]);
            if (it != s.end() && !it->is_null()) out += it->dump();
        }
        out += '\n';
    }
    return out;
}

}  // namespace infervisor::cli
