// How much heap a piece of code held at most, for tests that bound a walk's
// memory: the workdir test binary replaces the global operator new and
// delete (heap_peak.cpp) to count the bytes held and their peak.
#pragma once

#include <cstddef>

namespace infervisor::testing {

class HeapPeak {
  public:
    HeapPeak();  // counts from now
    // The most bytes held at once since construction, above what was held
    // then (all threads together).
    size_t above_start() const;

  private:
    size_t start_;
};

}  // namespace infervisor::testing
