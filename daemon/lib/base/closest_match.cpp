#include "base/closest_match.h"

#include <algorithm>

namespace infervisor {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates) {
    if (word.empty() || word.size() > kMaxWordLength) return std::nullopt;
    std::size_t limit = std::min<std::size_t>(2, word.size() - 1);
    std::optional<std::string> best;
    std::size_t best_distance = limit + 1;
    for (const auto& candidate : candidates) {
        if (candidate == word) return std::nullopt;
        // Lengths further apart than the limit cannot be within it.
        std::size_t gap = candidate.size() > word.size() ? candidate.size() - word.size()
                                                         : word.size() - candidate.size();
        if (gap >= best_distance || candidate.size() > kMaxWordLength) continue;
        std::size_t d = edit_distance(word, candidate);
        if (d < best_distance) {
            best_distance = d;
            best = candidate;
        }
    }
    return best;
}

}  // namespace infervisor
