#include "metrics/process_stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <sstream>

#include "base/file_io.h"

namespace infervisor {

DaemonStats read_own_stats(const std::filesystem::path& procfs) {
    DaemonStats s;
    struct rusage usage {};
    if (::getrusage(RUSAGE_SELF, &usage) == 0)
        s.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                        static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    if (auto statm = read_file(procfs / "self/statm")) {
        std::istringstream in(*statm);
        uint64_t size = 0, resident = 0;
        if (in >> size >> resident)
            s.resident_bytes = resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    }
    return s;
}

}  // namespace infervisor
