#include "status_table.h"

#include <algorithm>
#include <array>

#include "control/varlink_message.h"
#include "human_format.h"

namespace infervisor::cli {

namespace {

constexpr std::size_t kColumns = 12;
using Row = std::array<std::string, kColumns>;
constexpr std::size_t kStateColumn = 1;

Row header() {
    return {"NAME", "STATE", "PID",  "UPTIME", "RESTARTS", "MEMORY",
            "HIGH", "MAX",   "SWAP", "PSI10",  "PROBES",   "LAST EXIT"};
}

// "-" without probes; "ok" when every active probe passes; else what does
// not: "startup waiting", "readiness failing", "liveness failing".
std::string probes_summary(const std::vector<ProbeStatus>& probes) {
    if (probes.empty()) return "-";
    std::string out;
    for (const auto& p : probes) {
        if (!p.active || p.verdict == "passing") continue;
        out +=
            (out.empty() ? "" : ",") + p.probe + (p.verdict == "failing" ? " failing" : " waiting");
    }
    return out.empty() ? "ok" : out;
}

// "liveness GET http://127.0.0.1:8080/health: passing; last failure 12s ago: HTTP 503"
std::string probe_line(const ProbeStatus& p) {
    std::string line =
        p.probe + " " + printable(p.target) + ": " + p.verdict + (p.active ? "" : " (not probing)");
    if (p.consecutive_failures > 0)
        line += ", " + std::to_string(p.consecutive_failures) + " failures in a row";
    if (p.last_failure)
        line += "; last failure " + human_uptime(p.last_failure_age_usec) +
                " ago: " + printable(*p.last_failure);
    return line;
}

Row row(const WorkerStatus& w) {
    // "running (loading)": up, but the policy still counts it as loading.
    std::string state = w.state;
    if (w.state == "running" && w.phase == "loading") state += " (loading)";
    return {w.name + (w.is_protected ? "*" : ""),
            w.state + (w.state_reason.empty() ? "" : " (" + printable(w.state_reason) + ")"),
            w.main_pid ? std::to_string(*w.main_pid) : "-",
            human_uptime(w.uptime_usec),
            std::to_string(w.restarts),
            human_bytes(w.memory_current),
            human_limit(w.memory_high),
            human_limit(w.memory_max),
            human_bytes(w.swap_current),
            human_percent(w.memory_pressure_some_avg10),
            probes_summary(w.probes),
            w.last_exit.empty() ? "-" : printable(w.last_exit)};
}

void print_row(std::ostream& out, const Row& r, const std::array<std::size_t, kColumns>& width,
               const char* state_colour_code) {
    for (std::size_t i = 0; i < kColumns; ++i) {
        bool last = i + 1 == kColumns;
        std::string cell = r[i];
        if (!last) cell.resize(width[i], ' ');
        if (i == kStateColumn && state_colour_code)
            out << state_colour_code << cell << kColourReset;
        else
            out << cell;
        if (!last) out << "  ";
    }
    out << "\n";
}

}  // namespace

void print_status_table(std::ostream& out, const std::vector<WorkerStatus>& workers, bool colour,
                        bool legend) {
    std::vector<Row> rows{header()};
    for (const auto& w : workers) rows.push_back(row(w));
    std::array<std::size_t, kColumns> width{};
    for (const auto& r : rows)
        for (std::size_t i = 0; i < kColumns; ++i) width[i] = std::max(width[i], r[i].size());
    if (legend) print_row(out, rows[0], width, nullptr);
    for (std::size_t i = 0; i < workers.size(); ++i)
        print_row(out, rows[i + 1], width, colour ? state_colour(workers[i].state) : nullptr);
}

void print_worker_detail(std::ostream& out, const WorkerDetail& detail, bool colour) {
    const auto& w = detail.status;
    out << w.name << " - ";
    if (colour)
        out << state_colour(w.state) << w.state << kColourReset << "\n";
    else
        out << w.state << "\n";
    if (!w.state_reason.empty()) out << "  (" << printable(w.state_reason) << ")\n";
    auto line = [&](const char* label, const std::string& value) {
        out << "  " << label << ": " << value << "\n";
    };
    line("      PID", w.main_pid ? std::to_string(*w.main_pid) : "-");
    line("   Uptime", human_uptime(w.uptime_usec));
    line(" Restarts", std::to_string(w.restarts));
    line("   Memory", human_bytes(w.memory_current) + " (high " + human_limit(w.memory_high) +
                          ", max " + human_limit(w.memory_max) + ", peak " +
                          human_bytes(w.memory_peak) + ")");
    line("     Swap", human_bytes(w.swap_current) + " (max " + human_limit(w.swap_max) + ")");
    line(" Pressure", "memory some avg10 " + human_percent(w.memory_pressure_some_avg10));
    line("Last exit", w.last_exit.empty() ? "-" : printable(w.last_exit));
    line("   Status", w.status_text.empty() ? "-" : printable(w.status_text));
    line("Protected", w.is_protected ? "yes" : "no");
    line("    Phase", w.phase.empty() ? "-" : w.phase);
    if (w.checkpoint)
        line("Checkpoint", printable(w.checkpoint->path) + " (" + human_bytes(w.checkpoint->bytes) +
                               ", written " + human_uptime(w.checkpoint->age_usec) + " ago)");
    for (const auto& p : w.probes) line("    Probe", probe_line(p));
    out << "  Spec:\n" << dump_json(detail.spec, 2) << "\n";
    auto env = detail.spec.find("environment");
    if (env != detail.spec.end() && env->is_object())
        for (const auto& value : *env)
            if (value.is_null()) {
                out << "  (environment values are hidden: reading them needs root or the "
                       "daemon's control group)\n";
                break;
            }
}

}  // namespace infervisor::cli
