// QuotaWatch: when a work dir's usage crossing its quota is worth a warning.
//
// Contract: update() is fed each measurement; it returns true exactly when
// usage has risen above the quota and no warning was given for this crossing
// yet. The warning is re-armed only once usage falls below kQuotaRearmPercent
// of the quota (hysteresis: a dir hovering around its quota warns once, not at
// every scan). Changing the quota (a reload) re-arms. No quota: never warns.
#pragma once

#include <cstdint>
#include <optional>

namespace infervisor {

inline constexpr uint64_t kQuotaRearmPercent = 90;

class QuotaWatch {
  public:
    bool update(uint64_t usage, std::optional<uint64_t> quota);
    bool over() const { return warned_; }

  private:
    std::optional<uint64_t> quota_;
    bool warned_ = false;
};

}  // namespace infervisor
