// The "did you mean" of error messages: which known word a misspelt one was
// probably meant to be.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace infervisor {

// Levenshtein distance: the fewest one-character insertions, deletions and
// substitutions that turn `a` into `b`. O(|a| x |b|) time, O(|b|) memory.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `word`, when it is near enough to be a typo:
// at most 2 edits, and fewer than the word's length (so that "ab" does not
// suggest "cd"); the first of equally near ones. None for words
// longer than kMaxWordLength (the cost grows with the length) or when
// `word` is itself a candidate.
constexpr std::size_t kMaxWordLength = 64;
std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates);

}  // namespace infervisor
