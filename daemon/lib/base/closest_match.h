// The "did you mean" of error messages: which known word a misspelt one was
// probably meant to be.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace infervisor {

// Edit distance with transpositions (optimal string alignment): the fewest
// one-character insertions, deletions, substitutions and swaps of two
// neighbours that turn `a` into `b`. O(|a| x |b|) time, O(|b|) memory.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `word`, when it is near enough to be a typo: one
// edit per three letters of the word, at least one and at most two ("stauts"
// suggests "status", "bogus" does not suggest "logs"); the first of equally
// near ones. None for words longer than kMaxWordLength (the cost grows with
// the length), of one letter, or when `word` is itself a candidate.
constexpr std::size_t kMaxWordLength = 64;
std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates);

}  // namespace infervisor
