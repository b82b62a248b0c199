// memory_lock: keep the daemon's own pages in RAM, and no more of them than
// it uses.
//
// The daemon is needed most when the host thrashes, and a supervisor whose
// code or heap was reclaimed waits on the same swap and disk it is meant to
// relieve: each page fault of its event loop queues behind the thrash, its
// actions come late, the thrash lasts longer, and systemd's watchdog may end
// up killing it (and with it every worker). earlyoom and oomd lock
// themselves in memory for the same reason. On the 1 GB hosts the seeds
// describe, every locked megabyte is taken from the model, so what is locked
// is what the daemon runs, not every page it maps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/result.h"

namespace infervisor {

// A range of this process's address space, [start, end).
struct AddressRange {
    std::uintptr_t start = 0, end = 0;
};

struct LockedMemory {
    std::size_t own_code_bytes = 0;  // the executable's segments, read in and pinned
    // The size of the read-only file mappings whose pages were unmapped
    // before the lock (see below): what start-up touched of them is not
    // pinned unless the daemon reads it again.
    std::size_t dropped_bytes = 0;
    // The user and group lookup modules' clean mappings, left unlocked (see
    // below), for release_unlocked_code().
    std::vector<AddressRange> unlocked_code;
};

// First lets go of what only the start read: the pages of the read-only
// file mappings (the libraries' code, constants and symbol tables) are
// unmapped from the process (MADV_DONTNEED; they stay in the page cache),
// unless one of them was written (the relocated RELRO data, which is kept).
// Under MCL_CURRENT they would all be pinned: the dynamic linker's symbol
// lookups alone read most of libcrypto's and libstdc++'s symbol tables
// (1.4 MiB), and parsing the configuration runs yaml-cpp, which the loop
// never calls. Called before any thread exists, so no code runs while its
// pages go. The libraries' calls must be bound by then (LD_BIND_NOW=1, which
// infervisord.service sets): a call bound lazily, on its first use, has the
// dynamic linker read every library's symbol tables again, and after the
// lock what it reads stays pinned (0.9 MiB natively).
//
// Then locks in two parts:
//  - The daemon's own executable (every loadable segment: its code, constant
//    data and globals) is read in and pinned now, all of it but its unwind
//    tables. Every action the daemon takes in a thrash (a rule's kill, the
//    exit handling, the restart) is code of this file, and most of it has
//    never run before the thrash: it must not have to be read from disk
//    then. The unwind tables (.eh_frame_hdr, .eh_frame, .gcc_except_table,
//    the end of the constant data: 0.5 MiB at -O2) are read only when an
//    exception is thrown, which the daemon's loop does not do in its work;
//    they are locked on fault, like the libraries.
//  - Everything else (the shared libraries, the heap, thread stacks, later
//    mappings) is locked on fault: a page is pinned once the daemon has
//    touched it, and pages it never touches cost nothing. libcrypto (4.7 MB
//    mapped) costs what the TLS code that ran used, libstdc++ what the
//    daemon calls of it. The library code a thrash needs is what the loop
//    runs every tick (reading files, writing to the journal and cgroup
//    files, polling) and what the rest of the start runs after the lock
//    (its log lines, the journal events, the workers' start), which is
//    touched, and so pinned, before any thrash; library code that only the
//    start ran before the lock and a thrash runs again is read from the
//    page cache then (VM 85 checks that the daemon takes no major fault in
//    a thrash).
// One part is left out of the lock: the NSS modules (libnss_systemd and
// the like), which the daemon calls for its user and group lookups (each
// dynamic user's uid is checked against them at a worker's start). Those
// are not what a thrash needs, and at the kernel's fault-around of 64 KiB
// a few lookups had 0.3 MiB of libnss_systemd's code pinned for good. Their
// pages are ordinary page cache instead; release_unlocked_code() unmaps
// them from the daemon again after use.
// Needs CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK (the unit has both):
// with a finite limit, MCL_FUTURE would turn later allocations into failures
// once the limit is reached, so nothing is locked then and the error says
// why.
//
// A locked page cannot be given back with madvise (MADV_DONTNEED fails on a
// locked mapping), only by unmapping it. So the heap is set up to unmap what
// it frees: one malloc arena (the main one, whose free top is given back
// with brk; a thread's arena could only madvise, which does nothing here),
// trimmed above 128 KiB, and blocks of 128 KiB or more get mappings of their
// own, unmapped when freed. Memory used for a moment (a large reply, a
// thread's work) does not stay locked. Transparent huge pages are off for
// the daemon (PR_SET_THP_DISABLE; its children get the host's setting back,
// process/child_setup.cpp): on a host that has them always on, the first
// touch of a thread's stack or of a large block could fault in, and pin, a
// 2 MiB page where the daemon uses a few KiB.
Result<LockedMemory> lock_own_memory();

// Unmaps the pages of `ranges` (LockedMemory::unlocked_code) from the
// process: what a lookup read of the NSS modules leaves the daemon's RSS
// and stays in the page cache. Safe while another thread runs code there:
// the pages are the file's own, and the next use maps them again. (glibc
// never unloads an NSS module; were anything else mapped there later, it
// would be locked by MCL_FUTURE, and a locked mapping refuses the madvise.)
void release_unlocked_code(const std::vector<AddressRange>& ranges);

// What of this process is pinned now, in bytes: the Rss of each mapping
// whose VmFlags say "lo" (/proc/self/smaps). VmLck counts a mapping locked
// on fault whole, touched or not; smaps' "Locked:" is proportional (a page
// shared with another process counts as a fraction). -1 when smaps cannot
// be read. For tests and benchmarks: it reads the whole smaps.
long long pinned_bytes();

}  // namespace infervisor
