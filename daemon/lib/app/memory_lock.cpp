#include "app/memory_lock.h"

#include <link.h>
#include <linux/capability.h>
#include <malloc.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "base/capabilities.h"
#include "base/file_io.h"

namespace infervisor {

namespace {

constexpr int kOwnMappingBytes = 128 << 10;

struct OwnSegments {
    std::size_t bytes = 0;
    int error = 0;  // the first mlock() errno, 0 when all were locked
};

// Where the executable's unwind tables start: its .eh_frame_hdr (the
// PT_GNU_EH_FRAME segment), which the linker places after the constant
// data, followed by .eh_frame and .gcc_except_table to the end of that
// load segment. 0 when there is none.
std::uintptr_t unwind_tables_start(const dl_phdr_info* info) {
    for (int i = 0; i < info->dlpi_phnum; ++i)
        if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
            return info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
    return 0;
}

// dl_iterate_phdr calls this for the executable first (its dlpi_name is
// empty), then for each shared library; only the executable is wanted.
int lock_executable_segments(dl_phdr_info* info, std::size_t, void* data) {
    auto& segments = *static_cast<OwnSegments*>(data);
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const std::uintptr_t unwind = unwind_tables_start(info);
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& header = info->dlpi_phdr[i];
        if (header.p_type != PT_LOAD || header.p_memsz == 0) continue;
        std::uintptr_t start = info->dlpi_addr + header.p_vaddr;
        std::uintptr_t end = start + header.p_memsz;
        // The unwind tables are read only when an exception is thrown: they
        // stay locked on fault, like the libraries.
        if (unwind > start && unwind < end) end = unwind;
        start &= ~(page - 1);
        end = (end + page - 1) & ~(page - 1);
        // mlock() reads the range in and pins it, whatever mlockall's
        // MCL_ONFAULT says for the rest.
        if (::mlock(reinterpret_cast<void*>(start), end - start) < 0) {
            if (segments.error == 0) segments.error = errno;
            continue;
        }
        segments.bytes += end - start;
    }
    return 1;  // the executable only: stop here
}

// One mapping of /proc/self/smaps, as far as dropping its pages needs.
struct Mapping {
    std::uintptr_t start = 0, end = 0;
    bool droppable = false;  // private, read-only, backed by a file
    long anonymous_kib = -1;
    std::string_view path;  // into the smaps text; empty for an anonymous mapping
};

// A mapping's header line starts with "start-end" in hex; its fields
// ("Rss:", "Anonymous:") with a name and a colon.
bool is_mapping_header(std::string_view line) {
    std::string_view range = line.substr(0, line.find(' '));
    std::size_t dash = range.find('-');
    if (dash == 0 || dash == std::string_view::npos || dash + 1 == range.size()) return false;
    for (std::size_t i = 0; i < range.size(); ++i)
        if (i != dash && !std::isxdigit(static_cast<unsigned char>(range[i]))) return false;
    return true;
}

// Takes the mapping a header line of smaps describes ("start-end perms
// offset dev inode path").
Mapping parse_mapping_header(std::string_view line) {
    Mapping m;
    char* next = nullptr;
    m.start = std::strtoull(line.data(), &next, 16);
    m.end = std::strtoull(next + 1, &next, 16);
    std::string_view rest = line.substr(static_cast<std::size_t>(next - line.data()));
    // " r--p 00000000 08:01 1234   /usr/lib/...": perms, then the path.
    bool read_only_private = rest.size() > 5 && rest[2] != 'w' && rest[4] == 'p';
    std::size_t path = rest.find('/');
    m.droppable = read_only_private && path != std::string_view::npos;
    if (path != std::string_view::npos) m.path = rest.substr(path);
    return m;
}

// Calls `visit` with each mapping of /proc/self/smaps, its Anonymous: field
// read; with none when smaps cannot be read.
template <typename Visit>
void for_each_mapping(Visit visit) {
    auto smaps = read_file("/proc/self/smaps");
    if (!smaps) return;
    Mapping current;
    bool any = false;
    std::string_view rest(*smaps);
    while (!rest.empty()) {
        std::size_t end = rest.find('\n');
        std::string_view line = rest.substr(0, end);
        rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
        if (line.empty()) continue;
        if (is_mapping_header(line)) {
            if (any) visit(current);
            current = parse_mapping_header(line);
            any = true;
        } else if (line.starts_with("Anonymous:")) {
            current.anonymous_kib = std::strtol(line.data() + 10, nullptr, 10);
        }
    }
    if (any) visit(current);
}

// Whether a mapping's pages are the file's own (read-only, private, none
// written): they can be unmapped and read again from the file.
bool clean_file_pages(const Mapping& m) {
    // Anonymous pages of a read-only file mapping are ones written before
    // it was made read-only (the dynamic linker's relocations of RELRO):
    // dropping them would bring back the file's unrelocated bytes.
    return m.droppable && m.anonymous_kib == 0 && m.end > m.start;
}

// An NSS module's mapping (libnss_systemd, libnss_files, ...).
bool of_user_lookup_module(const Mapping& m) {
    std::string_view name = m.path.substr(m.path.rfind('/') + 1);
    return !m.path.empty() && name.starts_with("libnss_") && m.end > m.start;
}

// What start-up's one pass over its mappings did and found.
struct StartMappings {
    std::size_t dropped = 0;                      // bytes of mappings whose pages were unmapped
    std::vector<AddressRange> user_lookup;        // every mapping of the NSS modules
    std::vector<AddressRange> user_lookup_clean;  // those of them that can be dropped again
};

// Unmaps from this process the pages of its read-only file mappings (the
// shared libraries' code, constants and symbol tables, which the dynamic
// linker and the start-up read) that it holds unmodified copies of. They
// stay in the page cache; the next read maps them again, from then on
// locked. Only before mlockall: a locked mapping refuses MADV_DONTNEED.
// Notes the NSS modules' mappings on the way, for unlocking after it.
StartMappings drop_clean_file_pages() {
    StartMappings out;
    for_each_mapping([&](const Mapping& m) {
        bool clean = clean_file_pages(m);
        if (of_user_lookup_module(m)) {
            out.user_lookup.push_back({m.start, m.end});
            if (clean) out.user_lookup_clean.push_back({m.start, m.end});
        }
        if (clean &&
            ::madvise(reinterpret_cast<void*>(m.start), m.end - m.start, MADV_DONTNEED) == 0)
            out.dropped += m.end - m.start;
    });
    return out;
}

// The NSS modules of the user and group lookups (libnss_systemd) are
// loaded on the first lookup that reaches them. Loading a library has the
// dynamic linker look up its symbols in every library loaded, which reads
// their symbol tables; after the lock those pages would be pinned for good.
// A lookup of a name no one has goes through every module, so they are all
// loaded here, before the drop. (The daemon's own userdb service is not
// asked: run_daemon sets SYSTEMD_BYPASS_USERDB first.)
void load_user_lookup_modules() {
    passwd entry{};
    passwd* found = nullptr;
    char buffer[1024];
    (void)::getpwnam_r("infervisor-memory-lock-probe", &entry, buffer, sizeof buffer, &found);
}

}  // namespace

Result<LockedMemory> lock_own_memory() {
    rlimit limit{};
    bool unlimited = ::getrlimit(RLIMIT_MEMLOCK, &limit) == 0 && limit.rlim_cur == RLIM_INFINITY;
    if (!unlimited && !has_effective_capability(CAP_IPC_LOCK))
        return plain_error("RLIMIT_MEMLOCK is " + std::to_string(limit.rlim_cur) +
                           " bytes and CAP_IPC_LOCK is missing (run through infervisord.service, "
                           "which sets LimitMEMLOCK=infinity)");
    // Before any thread exists, so that every thread allocates from the
    // main arena. Fixed thresholds also stop glibc from raising them as
    // large blocks are freed.
    ::mallopt(M_ARENA_MAX, 1);
    ::mallopt(M_MMAP_THRESHOLD, kOwnMappingBytes);
    ::mallopt(M_TRIM_THRESHOLD, kOwnMappingBytes);
    // A transparent huge page would pin 2 MiB where the daemon touched a few
    // pages of a thread's stack or of a large block (VM 102 once saw two).
    if (::prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) < 0)
        return errno_error("prctl(PR_SET_THP_DISABLE)");
    load_user_lookup_modules();
    // Single-threaded here, so no other code runs while its pages go.
    StartMappings start = drop_clean_file_pages();
    if (::mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) < 0)
        return errno_error("mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT)");
    OwnSegments segments;
    ::dl_iterate_phdr(lock_executable_segments, &segments);
    if (segments.error != 0) {
        errno = segments.error;
        return errno_error("mlock of the daemon's executable");
    }
    // The NSS modules come out of the lock (their clean pages were dropped
    // above): what later lookups map of them is not pinned.
    for (const auto& r : start.user_lookup)
        (void)::munlock(reinterpret_cast<void*>(r.start), r.end - r.start);
    return LockedMemory{segments.bytes, start.dropped, std::move(start.user_lookup_clean)};
}

void release_unlocked_code(const std::vector<AddressRange>& ranges) {
    for (const auto& r : ranges)
        (void)::madvise(reinterpret_cast<void*>(r.start), r.end - r.start, MADV_DONTNEED);
}

long long pinned_bytes() {
    auto smaps = read_file("/proc/self/smaps");
    if (!smaps) return -1;
    long long total_kib = 0, rss_kib = 0;
    std::string_view rest(*smaps);
    while (!rest.empty()) {
        std::size_t end = rest.find('\n');
        std::string_view line = rest.substr(0, end);
        rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
        if (line.starts_with("Rss:")) rss_kib = std::strtoll(line.data() + 4, nullptr, 10);
        if (line.starts_with("VmFlags:") && line.find(" lo") != std::string_view::npos)
            total_kib += rss_kib;
    }
    return total_kib << 10;
}

}  // namespace infervisor
