#include "gpu/nvidia_xid.h"

#include <utility>

namespace infervisor {

namespace {

// From NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors), shortened.
constexpr std::pair<uint64_t, std::string_view> kXidMeanings[] = {
    {13, "graphics engine exception (often the application's bad memory access)"},
    {31, "GPU memory page fault (often the application's bad memory access)"},
    {43, "GPU stopped processing (a context was reset; often the application)"},
    {45, "preemptive cleanup after earlier errors (a context was torn down)"},
    {48, "double-bit ECC error (reset the GPU)"},
    {61, "internal micro-controller breakpoint or warning"},
    {62, "internal micro-controller halt"},
    {63, "ECC page retirement or row remapping recorded"},
    {64, "ECC page retirement or row remapping recording failed"},
    {74, "NVLink error"},
    {79, "GPU has fallen off the bus"},
    {92, "high single-bit ECC error rate"},
    {94, "contained ECC error (the application that met it must restart)"},
    {95, "uncontained ECC error (every application on the GPU is affected; reset the GPU)"},
    {119, "GSP RPC timeout"},
    {120, "GSP error"},
};

}  // namespace

std::string_view xid_meaning(uint64_t xid) {
    for (const auto& [code, meaning] : kXidMeanings)
        if (code == xid) return meaning;
    return {};
}

}  // namespace infervisor
