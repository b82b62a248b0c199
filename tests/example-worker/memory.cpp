#include "memory.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace example_worker {

void ResidentMemory::add(size_t bytes) {
    if (bytes == 0) return;
    auto block = std::make_unique_for_overwrite<char[]>(bytes);
    // Non-zero, so that no page can be deduplicated or stay the shared zero page.
    std::memset(block.get(), 0x5a, bytes);
    blocks_.push_back(std::move(block));
    total_ += bytes;
}

long rss_mib() {
    FILE* statm = std::fopen("/proc/self/statm", "re");
    if (!statm) return -1;
    long size = 0, resident = 0;
    int fields = std::fscanf(statm, "%ld %ld", &size, &resident);
    std::fclose(statm);
    if (fields != 2) return -1;
    return resident * ::sysconf(_SC_PAGESIZE) / static_cast<long>(kMiB);
}

}  // namespace example_worker
