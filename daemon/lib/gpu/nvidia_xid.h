// NvidiaXid: a short meaning for the Xid codes an inference host meets most,
// for the journal (gpu-xid) and the log.
//
// Contract: xid_meaning(code) is a few words from NVIDIA's Xid catalog
// ("XID Errors", docs.nvidia.com/deploy/xid-errors), or empty for a code not
// in this small table (the catalog has hundreds; the kernel log's
// "NVRM: Xid" line has the driver's own details). The table is not a
// verdict: whether a card is in error comes from the state NVML keeps
// (gpu/nvml_library.h), not from an Xid.
#pragma once

#include <cstdint>
#include <string_view>

namespace infervisor {

std::string_view xid_meaning(uint64_t xid);

}  // namespace infervisor
