#include "app/systemd_manager.h"

#include <string>
#include <vector>

#include "base/file_io.h"
#include "process/helper_process.h"

namespace infervisor {

namespace {

// The unit types a cgroup below the slices can belong to.
bool names_a_unit(std::string_view name) {
    for (std::string_view type : {".service", ".scope", ".socket", ".mount", ".swap"})
        if (name.size() > type.size() && name.ends_with(type)) return true;
    return false;
}

}  // namespace

Result<UnitState> parse_unit_state(std::string_view answer) {
    UnitState state;
    bool active = false, cgroup = false, job = false;
    while (!answer.empty()) {
        std::size_t end = answer.find('\n');
        std::string_view line = answer.substr(0, end);
        answer.remove_prefix(end == std::string_view::npos ? answer.size() : end + 1);
        std::size_t equals = line.find('=');
        if (equals == std::string_view::npos) continue;
        std::string_view key = line.substr(0, equals), value = line.substr(equals + 1);
        if (key == "ActiveState") {
            state.active_state = value;
            active = true;
        } else if (key == "ControlGroup") {
            state.control_group = value;
            cgroup = true;
        } else if (key == "JobType") {
            state.job_type = value;
            job = true;
        }
    }
    if (!active || !cgroup || !job)
        return plain_error(
            "infervisor-unit-state's answer lacks ActiveState, ControlGroup or JobType");
    return state;
}

Result<UnitState> systemd_unit_state(const std::filesystem::path& program,
                                     const std::string& unit) {
    HelperRequest request;
    request.argv = {program.string(), unit};
    request.deadline = kUnitStateDeadline;
    request.max_output = 16 << 10;
    auto result = run_helper(request);
    if (!result.ok())
        return plain_error("ask systemd about " + unit + ": " + program.string() + " " +
                           result.describe(request));
    return parse_unit_state(result.output);
}

Result<std::string> unit_of_cgroup(std::string_view path) {
    std::string_view rest = path;
    while (!rest.empty()) {
        while (rest.starts_with('/')) rest.remove_prefix(1);
        std::string_view name = rest.substr(0, rest.find('/'));
        rest.remove_prefix(name.size());
        if (name.empty()) break;
        if (name.ends_with(".slice")) continue;
        if (names_a_unit(name)) return std::string(name);
        break;
    }
    return plain_error("cgroup " + std::string(path) + " belongs to no systemd unit");
}

Result<std::string> own_systemd_unit(const std::filesystem::path& procfs) {
    auto file = procfs / "self" / "cgroup";
    auto text = read_file(file);
    if (!text) return plain_error("find this process's systemd unit: " + text.error().message());
    // cgroup v2's line: "0::/system.slice/infervisord.service".
    std::string_view rest(*text);
    while (!rest.empty()) {
        std::size_t end = rest.find('\n');
        std::string_view line = rest.substr(0, end);
        rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
        if (line.starts_with("0::")) return unit_of_cgroup(line.substr(3));
    }
    return plain_error("find this process's systemd unit: " + file.string() +
                       " has no cgroup v2 line");
}

}  // namespace infervisor
