#include "heap_peak.h"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<size_t> held{0};
std::atomic<size_t> peak{0};

void* counted_new(size_t n) {
    void* p = std::malloc(n ? n : 1);
    if (!p) throw std::bad_alloc();
    size_t now = held.fetch_add(malloc_usable_size(p)) + malloc_usable_size(p);
    size_t seen = peak.load();
    while (now > seen && !peak.compare_exchange_weak(seen, now)) {
    }
    return p;
}

void counted_delete(void* p) noexcept {
    if (!p) return;
    held.fetch_sub(malloc_usable_size(p));
    std::free(p);
}

}  // namespace

void* operator new(size_t n) { return counted_new(n); }
void* operator new[](size_t n) { return counted_new(n); }
void operator delete(void* p) noexcept { counted_delete(p); }
void operator delete[](void* p) noexcept { counted_delete(p); }
void operator delete(void* p, size_t) noexcept { counted_delete(p); }
void operator delete[](void* p, size_t) noexcept { counted_delete(p); }

namespace infervisor::testing {

HeapPeak::HeapPeak() : start_(held.load()) { peak.store(start_); }

size_t HeapPeak::above_start() const {
    size_t p = peak.load();
    return p > start_ ? p - start_ : 0;
}

}  // namespace infervisor::testing
