// Memory the worker makes resident on purpose: the "model" and the "leak".
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace example_worker {

class ResidentMemory {
  public:
    // Allocates `bytes` and writes to every page, so they count in RSS and
    // memory.current at once (untouched allocations would not).
    void add(size_t bytes);
    size_t total_bytes() const { return total_; }
    // Reads one byte of every page, so pages swapped out fault back in.
    // Returns their sum, so that the reads cannot be optimised away.
    unsigned long touch() const;
    // Frees it all (large blocks go back to the kernel: glibc mmaps them).
    void clear();

  private:
    std::vector<std::unique_ptr<char[]>> blocks_;
    std::vector<size_t> block_sizes_;
    size_t total_ = 0;
};

// This process's resident set size in MiB, from /proc/self/statm; -1 if unreadable.
long rss_mib();

constexpr size_t kMiB = 1024 * 1024;

}  // namespace example_worker
