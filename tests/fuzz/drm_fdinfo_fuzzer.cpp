// libFuzzer target: the DRM client usage stats (/proc/PID/fdinfo/FD) the
// daemon reads for the processes of its workers on AMD and Intel GPUs
// (gpu/drm_fdinfo.h). The kernel writes these files, but the processes whose
// files they are choose what they allocate, and a bug in a driver's printing
// must not crash a daemon running as root.
//
// Whatever the bytes, parse_drm_fdinfo and parse_drm_size must not crash
// (nor overflow: UBSan), and:
//  - drm-pdev is kept only as a lower-case PCI address ("0000:03:00.0");
//  - an engine capacity is never 0 (it divides);
//  - a line without a drm- key changes nothing (fdinfo has pos:, flags:...);
//  - "N KiB" and "N MiB" are N times 1024 and 1024^2, or nothing on overflow.
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>

#include "gpu/drm_fdinfo.h"

using namespace infervisor;

namespace {

bool same(const DrmClientInfo& a, const DrmClientInfo& b) {
    return a.driver == b.driver && a.pdev == b.pdev && a.client_id == b.client_id &&
           a.device_memory == b.device_memory && a.engine_ns == b.engine_ns &&
           a.engine_capacity == b.engine_capacity && a.cycles == b.cycles &&
           a.total_cycles == b.total_cycles;
}

void check_pdev(const std::string& pdev) {
    if (pdev.empty()) return;
    if (pdev.size() != 12 || pdev[4] != ':' || pdev[7] != ':' || pdev[10] != '.') std::abort();
    for (char c : pdev)
        if (c >= 'A' && c <= 'F') std::abort();
}

// The first line as a size: a plain number's KiB and MiB forms scale it.
void check_size(std::string_view text) {
    std::string_view first = text.substr(0, text.find('\n'));
    auto plain = parse_drm_size(first);
    if (!plain || first.empty() || first.find_first_not_of("0123456789") != std::string_view::npos)
        return;
    constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
    const std::string number(first);
    for (uint64_t multiplier : {uint64_t{1} << 10, uint64_t{1} << 20}) {
        auto scaled = parse_drm_size(number + (multiplier == 1024 ? " KiB" : " MiB"));
        if (*plain > kMax / multiplier) {
            if (scaled) std::abort();
        } else if (!scaled || *scaled != *plain * multiplier) {
            std::abort();
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    DrmClientInfo info = parse_drm_fdinfo(text);
    check_pdev(info.pdev);
    for (const auto& [engine, capacity] : info.engine_capacity)
        if (capacity == 0) std::abort();
    std::string more(text);
    if (!more.empty() && more.back() != '\n') more += '\n';
    more += "pos:\t0\nflags:\t02100002\n";
    if (!same(info, parse_drm_fdinfo(more))) std::abort();
    check_size(text);
    return 0;
}
