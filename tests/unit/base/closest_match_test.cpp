#include "base/closest_match.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace infervisor {
namespace {

TEST(EditDistance, CountsInsertionsDeletionsAndSubstitutions) {
    EXPECT_EQ(edit_distance("", ""), 0u);
    EXPECT_EQ(edit_distance("status", "status"), 0u);
    EXPECT_EQ(edit_distance("statu", "status"), 1u);    // an insertion
    EXPECT_EQ(edit_distance("statuss", "status"), 1u);  // a deletion
    EXPECT_EQ(edit_distance("statos", "status"), 1u);   // a substitution
    EXPECT_EQ(edit_distance("statsu", "status"), 1u);   // a swap of neighbours
    EXPECT_EQ(edit_distance("ab", "ba"), 1u);
    EXPECT_EQ(edit_distance("bogus", "logs"), 2u);
    EXPECT_EQ(edit_distance("", "abc"), 3u);
    EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

const std::vector<std::string> kCommands = {"start", "stop", "status", "restart", "reload"};

TEST(ClosestMatch, SuggestsTheNearestWordWithinTwoEdits) {
    EXPECT_EQ(closest_match("statsu", kCommands), "status");
    EXPECT_EQ(closest_match("strat", kCommands), "start");
    EXPECT_EQ(closest_match("relaod", kCommands), "reload");
    EXPECT_EQ(closest_match("stpo", kCommands), "stop");
    EXPECT_EQ(closest_match("rsetrat", kCommands), "restart");  // 2 edits in 7 letters
}

TEST(ClosestMatch, SuggestsNothingForAFarOrKnownWord) {
    EXPECT_EQ(closest_match("frobnicate", kCommands), std::nullopt);
    EXPECT_EQ(closest_match("status", kCommands), std::nullopt);  // not a typo
    EXPECT_EQ(closest_match("", kCommands), std::nullopt);
    EXPECT_EQ(closest_match("x", {"y"}), std::nullopt);    // every letter changed
    EXPECT_EQ(closest_match("ab", {"cd"}), std::nullopt);  // likewise
    EXPECT_EQ(closest_match("statu", {}), std::nullopt);
}

TEST(ClosestMatch, TakesTheFirstOfEquallyNearOnes) {
    EXPECT_EQ(closest_match("stat", {"start", "state"}), "start");
    EXPECT_EQ(closest_match("stat", {"state", "start"}), "state");
}

TEST(ClosestMatch, LongWordsCostNothing) {
    std::string long_word(100000, 'a');
    EXPECT_EQ(closest_match(long_word, {long_word.substr(1)}), std::nullopt);
    EXPECT_EQ(closest_match("aaa", {long_word}), std::nullopt);
}

}  // namespace
}  // namespace infervisor
