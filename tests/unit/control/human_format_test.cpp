// infervisorctl's text for people: worker-controlled text is made safe for a
// terminal before it is printed.
#include "human_format.h"

#include <gtest/gtest.h>

namespace infervisor::cli {
namespace {

TEST(Printable, EscapesTerminalControlsAndKeepsTheRest) {
    EXPECT_EQ(printable("serving 3 requests"), "serving 3 requests");
    EXPECT_EQ(printable("modèle 🦙 ok"), "modèle 🦙 ok");              // UTF-8 stays
    EXPECT_EQ(printable("a\x1b]52;c;AAAA\x07z"), "a\\x1b]52;c;AAAA\\x07z");  // OSC 52
    EXPECT_EQ(printable("x\n2026-11-30 info forged"), "x\\x0a2026-11-30 info forged");
    EXPECT_EQ(printable(std::string("\0\x7f", 2)), "\\x00\\x7f");
    EXPECT_EQ(printable("\xc2\x9b"
                        "31m"),
              "\\xc2\\x9b31m");                    // C1 CSI as UTF-8
    EXPECT_EQ(printable("\xc2\xa0"), "\xc2\xa0");  // U+00A0 is text
}

TEST(HumanFormat, SizesAndLimits) {
    EXPECT_EQ(human_bytes(std::nullopt), "-");
    EXPECT_EQ(human_limit(std::nullopt), "max");
    EXPECT_EQ(human_bytes(512ull << 20), "512M");
}

}  // namespace
}  // namespace infervisor::cli
