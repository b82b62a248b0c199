#include "checkpoint/criu_command.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <sstream>

namespace infervisor {

namespace {

std::string id_list(const std::vector<gid_t>& ids) {
    std::string out;
    for (gid_t id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
    return out;
}

// Decimal ids separated by any of `seps` (blanks in /proc, commas in the
// record); nullopt when any is not a 32-bit id. At most 65536 (NGROUPS_MAX).
std::optional<std::vector<gid_t>> parse_ids(std::string_view text, std::string_view seps) {
    std::vector<gid_t> out;
    for (size_t pos = text.find_first_not_of(seps); pos != std::string_view::npos;
         pos = text.find_first_not_of(seps, pos)) {
        size_t end = std::min(text.find_first_of(seps, pos), text.size());
        uint32_t id = 0;
        auto [ptr, ec] = std::from_chars(text.data() + pos, text.data() + end, id);
        if (ec != std::errc() || ptr != text.data() + end || out.size() == 65536)
            return std::nullopt;
        out.push_back(static_cast<gid_t>(id));
        pos = end;
    }
    return out;
}

}  // namespace

ProcessIdentity ProcessIdentity::of(uid_t uid, gid_t gid, std::vector<gid_t> groups) {
    std::sort(groups.begin(), groups.end());
    return ProcessIdentity{uid, gid, std::move(groups)};
}

std::string ProcessIdentity::describe() const {
    return "uid " + std::to_string(uid) + " gid " + std::to_string(gid) + " groups " +
           (groups.empty() ? "none" : id_list(groups));
}

std::optional<ProcessIdentity> parse_process_identity(const std::string& status) {
    std::optional<std::vector<gid_t>> uids, gids, groups;
    std::istringstream in(status);
    std::string line;
    while (std::getline(in, line)) {
        std::string_view l = line;
        if (l.starts_with("Uid:")) uids = parse_ids(l.substr(4), " \t");
        if (l.starts_with("Gid:")) gids = parse_ids(l.substr(4), " \t");
        if (l.starts_with("Groups:")) groups = parse_ids(l.substr(7), " \t");
    }
    if (!uids || uids->empty() || !gids || gids->empty() || !groups) return std::nullopt;
    return ProcessIdentity::of(uids->front(), gids->front(), std::move(*groups));
}

std::string format_criu_record(const CriuRecord& record) {
    std::string out;
    for (size_t fd = 0; fd < record.stdio.size(); ++fd) {
        const std::string& target = record.stdio[fd];
        if (target.find('\n') != std::string::npos) continue;
        out += "stdio" + std::to_string(fd) + "=" + target + "\n";
    }
    if (const auto& id = record.identity)
        out += "uid=" + std::to_string(id->uid) + "\ngid=" + std::to_string(id->gid) +
               "\ngroups=" + id_list(id->groups) + "\n";
    if (record.held) {
        out += "held-files=" + std::to_string(record.held->size()) + "\n";
        for (const HeldFile& file : *record.held) out += "held=" + format_held_file(file) + "\n";
        out += "ghost-dirs=" + std::to_string(record.ghost_dirs.size()) + "\n";
        for (const GhostDir& d : record.ghost_dirs)
            out += "ghost-dir=" + format_held_file(d.dir) + " " + d.path + "\n";
    }
    return out;
}

std::optional<CriuRecord> parse_criu_record(const std::string& text) {
    CriuRecord record;
    bool any = false;
    std::istringstream in(text);
    std::string line;
    std::optional<std::vector<gid_t>> uid, gid, groups;
    std::optional<size_t> held_count, ghost_count;
    std::set<HeldFile> held;
    bool held_torn = false;
    while (std::getline(in, line)) {
        std::string_view l = line;
        if (l.starts_with("held-files=")) {
            size_t n = 0;
            auto [ptr, ec] = std::from_chars(l.data() + 11, l.data() + l.size(), n);
            if (ec == std::errc() && ptr == l.data() + l.size() && !held_count)
                held_count = n;
            else
                held_torn = true;
        }
        if (l.starts_with("held=")) {
            auto file = parse_held_file(l.substr(5));
            if (!file || !held.insert(*file).second) held_torn = true;
        }
        if (l.starts_with("ghost-dirs=")) {
            size_t n = 0;
            auto [ptr, ec] = std::from_chars(l.data() + 11, l.data() + l.size(), n);
            if (ec == std::errc() && ptr == l.data() + l.size() && !ghost_count)
                ghost_count = n;
            else
                held_torn = true;
        }
        if (l.starts_with("ghost-dir=")) {
            size_t space = l.find(' ');
            auto dir = space == std::string_view::npos ? std::nullopt
                                                       : parse_held_file(l.substr(10, space - 10));
            std::string_view path = space == std::string_view::npos ? "" : l.substr(space + 1);
            if (!dir || !path.starts_with('/'))
                held_torn = true;
            else
                record.ghost_dirs.push_back({std::string(path), *dir});
        }
        if (l.starts_with("uid=")) uid = parse_ids(l.substr(4), ",");
        if (l.starts_with("gid=")) gid = parse_ids(l.substr(4), ",");
        if (l.starts_with("groups=")) groups = parse_ids(l.substr(7), ",");
        if (line.size() < 7 || line.compare(0, 5, "stdio") != 0 || line[6] != '=') continue;
        if (line[5] < '0' || line[5] > '2') continue;
        size_t fd = static_cast<size_t>(line[5] - '0');
        if (record.stdio.size() <= fd) record.stdio.resize(fd + 1);
        record.stdio[fd] = line.substr(7);
        any = true;
    }
    if (!any) return std::nullopt;
    // All three, one id each for uid and gid, or no identity at all.
    if (uid && gid && groups && uid->size() == 1 && gid->size() == 1)
        record.identity = ProcessIdentity::of(uid->front(), gid->front(), std::move(*groups));
    if (held_count && ghost_count && !held_torn && *held_count == held.size() &&
        *ghost_count == record.ghost_dirs.size())
        record.held = std::move(held);
    else
        record.ghost_dirs.clear();
    return record;
}

std::optional<unsigned long long> anon_inode_of(const std::string& target,
                                                const std::string& kind) {
    std::string prefix = kind + ":[";
    if (target.size() <= prefix.size() + 1 || target.compare(0, prefix.size(), prefix) != 0 ||
        target.back() != ']')
        return std::nullopt;
    std::string digits = target.substr(prefix.size(), target.size() - prefix.size() - 1);
    if (digits.empty() || digits.size() > 20 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
        return std::nullopt;
    try {
        return std::stoull(digits);
    } catch (...) {
        return std::nullopt;
    }
}

namespace {

// The distinct socket inodes among the stdio targets, in fd order.
std::vector<unsigned long long> stdio_sockets(const std::vector<std::string>& stdio) {
    std::vector<unsigned long long> out;
    std::set<unsigned long long> seen;
    for (const auto& target : stdio)
        if (auto ino = anon_inode_of(target, "socket"); ino && seen.insert(*ino).second)
            out.push_back(*ino);
    return out;
}

}  // namespace

std::vector<std::string> criu_dump_argv(const CriuDump& dump) {
    std::vector<std::string> argv = {dump.criu,
                                     "dump",
                                     "--tree",
                                     std::to_string(dump.pid),
                                     "--images-dir",
                                     dump.images.string(),
                                     "--log-file",
                                     kCriuDumpLog,
                                     "--manage-cgroups=ignore"};
    for (unsigned long long ino : stdio_sockets(dump.stdio)) {
        argv.push_back("--external");
        argv.push_back("unix[" + std::to_string(ino) + "]");
    }
    argv.push_back(dump.leave_running ? "--leave-running" : "--leave-stopped");
    return argv;
}

std::vector<std::string> criu_restore_argv(const CriuRestore& restore) {
    std::vector<std::string> argv = {restore.criu,
                                     "restore",
                                     "--images-dir",
                                     restore.images.string(),
                                     "--log-file",
                                     kCriuRestoreLog,
                                     "--manage-cgroups=ignore",
                                     "--restore-detached",
                                     "--restore-sibling",
                                     "--leave-stopped",
                                     "--pidfile",
                                     restore.pidfile.string()};
    // One new stream stands in for every socket or pipe the dumped stdio
    // pointed to (stdout and stderr share one journal stream).
    // The key is the link text of the dumped fd ("socket:[1732]"; criu's
    // man page spells it without the colon, which criu 3.17 does not match).
    std::set<std::string> seen;
    for (const auto& target : restore.stdio) {
        if (!anon_inode_of(target, "socket") && !anon_inode_of(target, "pipe")) continue;
        if (!seen.insert(target).second) continue;
        argv.push_back("--inherit-fd");
        argv.push_back("fd[0]:" + target);
    }
    return argv;
}

std::vector<std::string> criu_check_argv(const std::string& criu,
                                         const std::filesystem::path& log) {
    return {criu, "check", "--log-file", log.string()};
}

std::string criu_log_errors(const std::string& log_tail, size_t max_lines) {
    std::vector<std::string> errors;
    std::string last;
    std::istringstream in(log_tail);
    std::string line;
    while (std::getline(in, line)) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        last = line;
        if (line.find("Error") != std::string::npos) errors.push_back(line);
    }
    if (errors.empty()) return last;
    std::string out;
    size_t first = errors.size() > max_lines ? errors.size() - max_lines : 0;
    for (size_t i = first; i < errors.size(); ++i) {
        if (!out.empty()) out += "; ";
        out += errors[i];
    }
    return out;
}

}  // namespace infervisor
