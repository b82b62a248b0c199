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
    block_sizes_.push_back(bytes);
    total_ += bytes;
}

unsigned long ResidentMemory::touch() const {
    const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    unsigned long sum = 0;
    for (size_t b = 0; b < blocks_.size(); ++b) {
        const volatile char* bytes = blocks_[b].get();
        size_t size = block_sizes_[b];
        for (size_t at = 0; at < size; at += page) sum += static_cast<unsigned char>(bytes[at]);
    }
    return sum;
}

void ResidentMemory::clear() {
    blocks_.clear();
    block_sizes_.clear();
    total_ = 0;
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
