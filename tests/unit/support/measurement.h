// measurement(d, key): the value a decision (Decision, ResumeDecision,
// AdmissionVerdict: anything with `measurements`, key/value pairs) gave
// `key`, or "<absent>".
#pragma once

#include <string>

namespace infervisor {

template <class WithMeasurements>
std::string measurement(const WithMeasurements& d, const std::string& key) {
    for (const auto& [k, v] : d.measurements)
        if (k == key) return v;
    return "<absent>";
}

}  // namespace infervisor
