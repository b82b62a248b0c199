#include "status_table.h"

#include <algorithm>
#include <functional>
#include <string>

#include "control/varlink_message.h"
#include "human_format.h"

namespace infervisor::cli {

namespace {

using Cell = std::function<std::string(const WorkerView&)>;
struct Column {
    const char* header;
    Cell cell;
    bool is_state = false;
};

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

// "running (loading)": up, but the policy still counts it as loading.
std::string short_state(const WorkerView& w) {
    return w.state == "running" && w.phase == "loading" ? w.state + " (loading)" : w.state;
}

std::string state_with_reason(const WorkerView& w) {
    return short_state(w) + (w.state_reason.empty() ? "" : " (" + printable(w.state_reason) + ")");
}

// "6.0G/10G": GPU memory and its cap (gpu.memory_max); "-" where not read.
std::string gpu_cell(const WorkerView& w) {
    return human_bytes(w.gpu_memory) +
           (w.gpu_memory_max ? "/" + human_bytes(w.gpu_memory_max) : "");
}

// "6.0G (gpu.memory_max 10G), compute 85.00%, on 0000:03:00.0 4.0G, 0000:04:00.0 2.0G"
std::string gpu_line(const WorkerView& w) {
    std::string text = human_bytes(w.gpu_memory);
    if (w.gpu_memory_max) text += " (gpu.memory_max " + human_bytes(w.gpu_memory_max) + ")";
    if (w.gpu_utilization) text += ", compute " + human_percent(w.gpu_utilization) + "%";
    for (std::size_t i = 0; i < w.gpu_devices.size(); ++i)
        text += (i == 0 ? ", on " : ", ") + printable(w.gpu_devices[i].device) + " " +
                human_bytes(w.gpu_devices[i].memory);
    return text;
}

bool any_gpu(const std::vector<WorkerView>& workers) {
    return std::any_of(workers.begin(), workers.end(),
                       [](const WorkerView& w) { return w.gpu_memory || w.gpu_memory_max; });
}

// The GPU column is shown only when some worker has a GPU figure or cap: a
// host without GPUs keeps the table it had.
std::vector<Column> columns(TableWidth width, bool gpu) {
    bool wide = width == TableWidth::wide;
    std::vector<Column> c;
    c.push_back({"NAME", [](const WorkerView& w) { return w.name + (w.is_protected ? "*" : ""); }});
    c.push_back({"STATE", wide ? Cell(state_with_reason) : Cell(short_state), true});
    c.push_back({"PID", [](const WorkerView& w) {
                     return w.main_pid ? std::to_string(*w.main_pid) : std::string("-");
                 }});
    c.push_back({"UPTIME", [](const WorkerView& w) { return human_uptime(w.uptime_usec); }});
    c.push_back({wide ? "MEMORY" : "MEM",
                 [](const WorkerView& w) { return human_bytes(w.memory_current); }});
    if (wide) c.push_back({"HIGH", [](const WorkerView& w) { return human_limit(w.memory_high); }});
    c.push_back({"MAX", [](const WorkerView& w) { return human_limit(w.memory_max); }});
    if (wide)
        c.push_back({"SWAP", [](const WorkerView& w) { return human_bytes(w.swap_current); }});
    c.push_back(
        {"PSI10", [](const WorkerView& w) { return human_percent(w.memory_pressure_some_avg10); }});
    if (gpu) c.push_back({"GPU", gpu_cell});
    c.push_back({"RESTARTS", [](const WorkerView& w) { return std::to_string(w.restarts); }});
    if (wide) {
        c.push_back({"PROBES", [](const WorkerView& w) { return probes_summary(w.probes); }});
        c.push_back({"LAST EXIT", [](const WorkerView& w) {
                         return w.last_exit.empty() ? std::string("-") : printable(w.last_exit);
                     }});
    }
    return c;
}

void print_row(std::ostream& out, const std::vector<Column>& cols,
               const std::vector<std::string>& cells, const std::vector<std::size_t>& width,
               const char* state_colour_code) {
    for (std::size_t i = 0; i < cols.size(); ++i) {
        bool last = i + 1 == cols.size();
        std::string cell = cells[i];
        if (!last) cell.resize(width[i], ' ');
        if (cols[i].is_state && state_colour_code)
            out << state_colour_code << cell << kColourReset;
        else
            out << cell;
        if (!last) out << "  ";
    }
    out << "\n";
}

// What would change the state, as the command to run; "" when nothing is
// needed.
std::string next_step(const WorkerView& w) {
    const std::string& n = w.name;
    if (w.state == "failed")
        return "fix the cause (see its events and `infervisorctl logs " + n +
               "`), then `infervisorctl start " + n + "`";
    if (w.state == "parked") return "`infervisorctl start " + n + "` starts it again";
    if (w.state == "checkpointed")
        return "`infervisorctl start " + n + "` starts it again from its checkpoint";
    if (w.state == "stopped") return "`infervisorctl start " + n + "`";
    if (w.state == "suspended") return "`infervisorctl resume " + n + "` lets it run on";
    if (w.state == "waiting")
        return "it starts by itself once the host has room; `infervisorctl stop " + n +
               "` ends the wait";
    if (w.state == "backoff")
        return "it restarts by itself (its restart policy); `infervisorctl stop " + n +
               "` stops it";
    if (w.state == "starting") return "its output: `infervisorctl logs " + n + "`";
    return "";
}

}  // namespace

void print_gpu_cards(std::ostream& out, const std::vector<GpuCardView>& cards) {
    if (cards.empty()) return;
    out << "\n";
    for (const GpuCardView& c : cards) {
        out << "GPU " << c.index << " " << printable(c.device);
        if (!c.name.empty()) out << " " << printable(c.name);
        out << ": ";
        if (!c.fault.empty()) {
            out << "in error: " << printable(c.fault) << "\n";
            continue;
        }
        out << human_bytes(c.memory_used) << " of " << human_bytes(c.memory_total) << " used";
        if (c.utilization) out << ", " << human_percent(c.utilization) << "% busy";
        out << "\n";
    }
}

void print_status_table(std::ostream& out, const std::vector<WorkerView>& workers, bool colour,
                        bool legend, TableWidth table_width) {
    auto cols = columns(table_width, any_gpu(workers));
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> head;
    for (const auto& c : cols) head.push_back(c.header);
    rows.push_back(head);
    for (const auto& w : workers) {
        std::vector<std::string> row;
        for (const auto& c : cols) row.push_back(c.cell(w));
        rows.push_back(std::move(row));
    }
    std::vector<std::size_t> width(cols.size(), 0);
    for (const auto& r : rows)
        for (std::size_t i = 0; i < cols.size(); ++i) width[i] = std::max(width[i], r[i].size());
    if (legend) print_row(out, cols, rows[0], width, nullptr);
    for (std::size_t i = 0; i < workers.size(); ++i)
        print_row(out, cols, rows[i + 1], width, colour ? state_colour(workers[i].state) : nullptr);
}

void print_status_notes(std::ostream& out, const std::vector<WorkerView>& workers) {
    bool any = false;
    for (const auto& w : workers) {
        std::string probes = probes_summary(w.probes);
        bool probe_trouble = probes != "-" && probes != "ok";
        if (w.state_reason.empty() && !probe_trouble) continue;
        if (!any) out << "\n";
        any = true;
        out << w.name << ": " << state_with_reason(w)
            << (probe_trouble ? "; probes: " + probes : std::string()) << "\n";
    }
    if (any) out << "(infervisorctl status NAME: why, since when, and what next)\n";
}

std::string event_line(const ControlEvent& e, const std::string& host) {
    std::string line = local_time(e.time_usec) + " " + (host.empty() ? "" : printable(host) + " ") +
                       (e.worker.empty() ? "-" : printable(e.worker)) + " " + printable(e.kind) +
                       ": " + printable(e.message);
    std::string sep = " (";
    for (const auto& [key, val] : e.fields) {
        line += sep + printable(key) + "=" + printable(val);
        sep = ", ";
    }
    if (!e.fields.empty()) line += ")";
    return line;
}

void print_worker_block(std::ostream& out, const WorkerView& w,
                        const std::vector<ControlEvent>& events, bool colour) {
    const char* on = colour ? state_colour(w.state) : "";
    const char* off = colour ? kColourReset : "";
    out << on << "\u25cf" << off << " " << w.name << (w.is_protected ? " (protected)" : "") << " - "
        << on << short_state(w) << off << "\n";
    auto line = [&](const char* label, const std::string& value) {
        out << "  " << label << ": " << value << "\n";
    };
    line("    State",
         state_with_reason(w) + (w.state_age_usec ? " for " + human_uptime(w.state_age_usec) : ""));
    if (auto next = next_step(w); !next.empty()) line("     Next", next);
    if (w.main_pid)
        line("      PID", std::to_string(*w.main_pid) + ", up " + human_uptime(w.uptime_usec) +
                              (w.phase.empty() ? "" : ", " + w.phase));
    line(" Restarts", std::to_string(w.restarts));
    line("   Memory", human_bytes(w.memory_current) + " (high " + human_limit(w.memory_high) +
                          ", max " + human_limit(w.memory_max) + ", peak " +
                          human_bytes(w.memory_peak) + ")");
    line("     Swap", human_bytes(w.swap_current) + " (max " + human_limit(w.swap_max) + ")");
    line(" Pressure", "memory some avg10 " + human_percent(w.memory_pressure_some_avg10));
    if (w.gpu_memory || w.gpu_memory_max) line("      GPU", gpu_line(w));
    line("Last exit", w.last_exit.empty() ? "-" : printable(w.last_exit));
    if (!w.status_text.empty()) line("   Status", printable(w.status_text));
    if (w.checkpoint)
        line("Checkpoint", printable(w.checkpoint->path) + " (" + human_bytes(w.checkpoint->bytes) +
                               ", written " + human_uptime(w.checkpoint->age_usec) + " ago)");
    for (const auto& p : w.probes) line("    Probe", probe_line(p));
    if (events.empty()) return;
    out << "\n";
    for (const auto& e : events) out << event_line(e) << "\n";
}

void print_worker_detail(std::ostream& out, const WorkerDetail& detail,
                         const std::vector<ControlEvent>& events, bool colour) {
    print_worker_block(out, detail.view, events, colour);
    out << "\n  Spec:\n" << dump_json(detail.spec, 2) << "\n";
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
