// libFuzzer target: the Prometheus text exposition an inference server
// serves at its metrics endpoint, which the daemon scrapes at every sample
// (untrusted input, see engine/prometheus_text.h).
//
// Whatever the bytes, parse_prometheus_text must not crash, and:
//  - only names asked for come back;
//  - an error names its line ("line N...") and has no control characters
//    (it goes into the journal);
//  - each line is judged alone: the first line fails alone exactly when the
//    whole text fails there, with the same error.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "engine/prometheus_text.h"

using namespace infervisor;

namespace {

const PrometheusWanted kWanted = {"a", "llamacpp:tokens_predicted_total",
                                  "llamacpp:requests_processing", "vllm:num_requests_waiting",
                                  "vllm:generation_tokens_total"};

void check_error(const Result<PrometheusValues>& result) {
    if (result.ok()) return;
    const std::string& what = result.error().what;
    if (!what.starts_with("line ")) std::abort();
    for (char c : what)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    PrometheusLimits limits{.max_line = 512, .max_names = 8};
    auto whole = parse_prometheus_text(text, kWanted, limits);
    check_error(whole);
    if (whole.ok())
        for (const auto& [name, value] : *whole)
            if (!kWanted.contains(name)) std::abort();
    size_t cut = text.find('\n');
    if (cut == std::string_view::npos) return 0;
    auto first = parse_prometheus_text(text.substr(0, cut + 1), kWanted, limits);
    check_error(first);
    if (first.ok()) return 0;
    if (whole.ok() || whole.error().what != first.error().what) std::abort();
    return 0;
}
