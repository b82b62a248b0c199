// The criu(8) command lines infervisord runs for `checkpoint: {method: criu}`,
// and the record it keeps next to a dump. Pure functions: no I/O.
//
// A dump (criu 3.17, Linux 6.1):
//   criu dump -t PID -D IMAGES -o dump.log --manage-cgroups=ignore
//        --external unix[INO]...  (--leave-stopped | --leave-running)
//  - The worker is not a shell job (it runs in a session of its own), so no
//    --shell-job.
//  - Its stdout and stderr are a journal stream: a unix socket whose peer
//    (journald) is outside the dumped tree. criu refuses that unless it is
//    named external; on restore a fresh stream is handed in for it with
//    --inherit-fd. A pipe there needs no option on dump, the same on restore.
//  - --manage-cgroups=ignore: the image holds no cgroup; the restore lands in
//    whatever cgroup criu runs in, which is the fresh cgroup of the new run
//    (with the worker's limits), not the dumped path.
//  - --leave-stopped when the worker is to be stopped afterwards (it is then
//    killed without running on past its checkpoint), --leave-running for a
//    checkpoint that keeps the worker running.
// A restore:
//   criu restore -D IMAGES -o restore.log --manage-cgroups=ignore
//        --restore-detached --restore-sibling --leave-stopped --pidfile PIDFILE
//        --inherit-fd fd[0]:socket:[INO]...
//  - --restore-sibling: the restored root task becomes a child of criu's
//    parent, the daemon, which then watches and reaps it like a spawned one.
//  - The new output stream is criu's own stdin (fd 0): spawning gives a child
//    exactly its three standard fds, and criu never reads its stdin.
//  - --leave-stopped: criu queues SIGSTOP before it detaches, so no restored
//    task runs an instruction before the daemon has checked every file it
//    holds (held_files.h) and sent SIGCONT (criu 3.17 cr-restore.c,
//    finalize_restore()).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "checkpoint/held_files.h"

namespace infervisor {

// The file infervisord writes into a criu dump (root-owned, like the dump):
// it marks the checkpoint as a criu image and records what the restore must
// hand back in.
inline constexpr char kCriuRecordName[] = "infervisor-criu";
inline constexpr char kCriuDumpLog[] = "dump.log";
inline constexpr char kCriuRestoreLog[] = "restore.log";
inline constexpr char kCriuCheckLog[] = "check.log";
// The largest record read back: kMaxHeldFiles lines of at most 64 bytes, and
// the rest.
inline constexpr size_t kMaxCriuRecordBytes = kMaxHeldFiles * 64 + 8192;

// Whom a process runs as: its real uid and gid and its supplementary
// groups (sorted), as /proc/PID/status says.
struct ProcessIdentity {
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;

    // The one way to make one: the groups sorted, so that == compares sets.
    static ProcessIdentity of(uid_t uid, gid_t gid, std::vector<gid_t> groups);

    bool operator==(const ProcessIdentity&) const = default;
    std::string describe() const;  // "uid 61234 gid 61234 groups 44,109"
};

// The Uid:, Gid: and Groups: lines of a /proc/PID/status text; nullopt when
// one is missing or malformed.
std::optional<ProcessIdentity> parse_process_identity(const std::string& status);

// What the daemon records beside a criu image (root's file in root's dir):
// what /proc/PID/fd/{0,1,2} of the dumped main process pointed to
// ("socket:[1732]", "pipe:[88]", "/dev/null"; empty when unknown), and
// whom it ran as. criu restores the identity in the image; the record is how
// the daemon knows it without parsing criu's images, so that an image of
// another identity is never restored as this worker (issue 26, defect 2),
// and every file its processes held (held_files.h), so that a restore hands
// back those very files and nothing a swapped path names (defect 1).
struct CriuRecord {
    std::vector<std::string> stdio;           // index = fd
    std::optional<ProcessIdentity> identity;  // empty in a record of an older daemon
    std::optional<std::set<HeldFile>> held;   // empty in a record of an older daemon
    std::vector<GhostDir> ghost_dirs;         // with `held`: dirs of its deleted files

    bool operator==(const CriuRecord&) const = default;
};

// "stdio0=/dev/null\nstdio1=socket:[1732]\n...uid=..\ngid=..\ngroups=..\n
// held-files=2\nheld=8:1:1234:1733312345.000000000\n...ghost-dirs=1\n
// ghost-dir=8:1:77:1733312000.000000000 /var/lib/w\n". Values with a newline
// are dropped (a path could hold one).
std::string format_criu_record(const CriuRecord& record);
// The inverse; unknown lines are ignored, nullopt when no stdio line is there.
// `held` is set only when held-files= is there and exactly that many distinct
// well-formed held= lines follow it, and as many ghost-dir= lines as
// ghost-dirs= says (a torn record verifies nothing).
std::optional<CriuRecord> parse_criu_record(const std::string& text);

// The inode of "socket:[N]" / "pipe:[N]", if `target` is one of those.
std::optional<unsigned long long> anon_inode_of(const std::string& target, const std::string& kind);

struct CriuDump {
    std::string criu;  // absolute path of the criu binary
    pid_t pid = 0;     // the worker's main process: the root of the dumped tree
    std::filesystem::path images;
    std::vector<std::string> stdio;  // targets of fds 0..2 (CriuRecord::stdio)
    bool leave_running = false;
};
std::vector<std::string> criu_dump_argv(const CriuDump& dump);

struct CriuRestore {
    std::string criu;
    std::filesystem::path images;
    std::filesystem::path pidfile;
    std::vector<std::string> stdio;  // from the record: what to hand fd 0 in for
};
std::vector<std::string> criu_restore_argv(const CriuRestore& restore);

// `criu check`: does this kernel (and this process's sandbox) have what a
// dump and restore need. Its log goes to `log`.
std::vector<std::string> criu_check_argv(const std::string& criu, const std::filesystem::path& log);

// The lines of a criu log that say why it failed ("Error (criu/sk-unix.c:...):
// ..."), at most `max_lines`, joined with "; "; the last non-empty line when
// there is no Error line.
std::string criu_log_errors(const std::string& log_tail, size_t max_lines = 3);

}  // namespace infervisor
