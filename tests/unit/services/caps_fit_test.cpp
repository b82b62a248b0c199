// The overcommit warning: caps that add up to more than RAM + swap.
#include "services/caps_fit.h"

#include <gmock/gmock.h>

namespace infervisor {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t MiB = 1ull << 20;

Config workers_capped_at(std::vector<uint64_t> caps) {
    Config config;
    for (size_t i = 0; i < caps.size(); ++i) {
        WorkerSpec w;
        w.name = "w" + std::to_string(i);
        w.memory.max = caps[i];
        config.workers.push_back(w);
    }
    return config;
}

TEST(CapsFit, SaysByHowMuchTheCapsExceedRamPlusSwap) {
    // The field report's tiny host: 600M + 300M caps, 780M of RAM, no swap.
    auto warning = caps_overcommit_warning(workers_capped_at({600 * MiB, 300 * MiB}),
                                           MemInfo{780 * MiB, 700 * MiB, 0});
    ASSERT_TRUE(warning);
    EXPECT_THAT(*warning, HasSubstr("2 worker(s) add up to 900.0M, 120.0M more than this "
                                    "host's RAM + swap (780.0M)"));
}

TEST(CapsFit, SwapCountsAsRoom) {
    EXPECT_FALSE(caps_overcommit_warning(workers_capped_at({600 * MiB, 300 * MiB}),
                                         MemInfo{780 * MiB, 700 * MiB, 512 * MiB}));
}

TEST(CapsFit, NothingToSayWhenTheHostIsUnknownOrTheCapsFit) {
    EXPECT_FALSE(caps_overcommit_warning(workers_capped_at({600 * MiB}), MemInfo{}));
    EXPECT_FALSE(caps_overcommit_warning(workers_capped_at({600 * MiB}),
                                         MemInfo{1024 * MiB, 900 * MiB, std::nullopt}));
}

}  // namespace
}  // namespace infervisor
