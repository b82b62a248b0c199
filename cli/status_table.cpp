#include "status_table.h"

#include <algorithm>
#include <array>

#include "control/varlink_message.h"
#include "human_format.h"

namespace infervisor::cli {

namespace {

constexpr std::size_t kColumns = 11;
using Row = std::array<std::string, kColumns>;
constexpr std::size_t kStateColumn = 1;

Row header() {
    return {"NAME", "STATE", "PID",  "UPTIME", "RESTARTS", "MEMORY",
            "HIGH", "MAX",   "SWAP", "PSI10",  "LAST EXIT"};
}

Row row(const WorkerStatus& w) {
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

void print_status_table(std::ostream& out, const std::vector<WorkerStatus>& workers, bool colour) {
    std::vector<Row> rows{header()};
    for (const auto& w : workers) rows.push_back(row(w));
    std::array<std::size_t, kColumns> width{};
    for (const auto& r : rows)
        for (std::size_t i = 0; i < kColumns; ++i) width[i] = std::max(width[i], r[i].size());
    print_row(out, rows[0], width, nullptr);
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
