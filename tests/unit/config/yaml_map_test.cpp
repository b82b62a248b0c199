#include "yaml/yaml_map.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace infervisor {
namespace {

TEST(YamlMap, RejectsNonMappings) {
    ConfigErrors errors;
    errors.set_file("f");
    YamlMap map(YAML::Load("[1, 2]"), errors, "'x'");
    EXPECT_FALSE(map.valid());
    EXPECT_EQ(errors.format(), "f:1:1: 'x' must be a mapping, not a list\n");
}

TEST(YamlMap, IntRangesAreChecked) {
    ConfigErrors errors;
    errors.set_file("f");
    YamlMap map(YAML::Load("n: 0\nm: 7"), errors, "'x'");
    int64_t n = 5, m = 0;
    EXPECT_FALSE(map.get_int("n", n, 1, 10));
    EXPECT_TRUE(map.get_int("m", m, 1, 10));
    map.finish();
    EXPECT_EQ(n, 5);
    EXPECT_EQ(m, 7);
    EXPECT_EQ(errors.format(), "f:1:4: 'n' must be between 1 and 10, not 0\n");
}

TEST(YamlMap, BoolsAreStrict) {
    ConfigErrors errors;
    errors.set_file("f");
    YamlMap map(YAML::Load("a: yes\nb: maybe"), errors, "'x'");
    bool a = false, b = false;
    EXPECT_TRUE(map.get_bool("a", a));
    EXPECT_FALSE(map.get_bool("b", b));
    EXPECT_TRUE(a);
    EXPECT_EQ(errors.format(), "f:2:4: 'b' must be true or false, not 'maybe'\n");
}

}  // namespace
}  // namespace infervisor
