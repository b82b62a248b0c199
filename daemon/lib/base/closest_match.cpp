#include "base/closest_match.h"

#include <algorithm>

namespace infervisor {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    // Three rows: a transposition looks two rows back.
    std::vector<std::size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                cur[j] = std::min(cur[j], before[j - 2] + 1);
        }
        std::swap(before, prev);
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates) {
    if (word.size() < 2 || word.size() > kMaxWordLength) return std::nullopt;
    // One edit per three letters, at least one and at most two.
    std::size_t limit = std::clamp<std::size_t>(word.size() / 3, 1, 2);
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
