// Byte units for the sizes tests write: 512 * MiB.
#pragma once

#include <cstdint>

namespace infervisor {

inline constexpr uint64_t KiB = 1ull << 10;
inline constexpr uint64_t MiB = 1ull << 20;
inline constexpr uint64_t GiB = 1ull << 30;

}  // namespace infervisor
