// parse_prometheus_text: the series a worker's rules name, read from the
// Prometheus text exposition format (version 0.0.4) an inference server
// serves at its metrics endpoint — llama-server's `--metrics`, vLLM's
// /metrics (prometheus_client), anything else that speaks the format.
//
//   # HELP llamacpp:tokens_predicted_total Number of generation tokens processed
//   # TYPE llamacpp:tokens_predicted_total counter
//   llamacpp:tokens_predicted_total 3469
//   vllm:num_requests_waiting{model_name="m",engine="0"} 2.0 1712345678000
//
// Contract: the text is untrusted (the worker writes it). Pure and linear in
// its length; memory bounded by the names asked for, never by the text:
// label values are checked (their escapes, \\ \" \n) but not kept, and only
// the samples of a `wanted` name are kept, summed over their label sets (a
// metric exposed per engine or per model is read as one number). A line
// longer than limits.max_line, or more than limits.max_names names asked
// for, is an error, as is any line that is not a comment, a HELP or TYPE
// line or a sample: the error names its line ("line 12: ..."), and no value
// of a text with an error is used. Values: decimal or exponent notation,
// NaN, +Inf, -Inf (as the format's Go ParseFloat reads them); a sample's
// optional timestamp (integer milliseconds) is checked and ignored.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "base/result.h"

namespace infervisor {

struct PrometheusLimits {
    size_t max_line = 64 * 1024;  // bytes of one line, its newline not counted
    size_t max_names = 256;       // names asked for
};

// Name -> the sum of its samples over all label sets; a name asked for that
// the text does not show is absent.
using PrometheusValues = std::map<std::string, double, std::less<>>;

using PrometheusWanted = std::set<std::string, std::less<>>;

Result<PrometheusValues> parse_prometheus_text(std::string_view text,
                                               const PrometheusWanted& wanted,
                                               const PrometheusLimits& limits = {});

// [a-zA-Z_:][a-zA-Z0-9_:]* — also what a rule may name after `engine.`.
bool is_prometheus_metric_name(std::string_view name);

}  // namespace infervisor
