// The host-fit warnings: caps that add up to more than RAM + swap, and a
// memory.reserve that can never fit.
#include "services/caps_fit.h"

#include <gmock/gmock.h>

#include "support/byte_units.h"

namespace infervisor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

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

TEST(HostFit, SaysByHowMuchTheCapsExceedRamPlusSwap) {
    // The field report's tiny host: 600M + 300M caps, 780M of RAM, no swap.
    auto warnings = host_fit_warnings(workers_capped_at({600 * MiB, 300 * MiB}),
                                      MemInfo{780 * MiB, 700 * MiB, 0});
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_THAT(warnings[0], HasSubstr("2 worker(s) add up to 900M, 120M more than this "
                                       "host's RAM + swap (780M)"));
}

TEST(HostFit, SwapCountsAsRoom) {
    EXPECT_TRUE(host_fit_warnings(workers_capped_at({600 * MiB, 300 * MiB}),
                                  MemInfo{780 * MiB, 700 * MiB, 512 * MiB})
                    .empty());
}

TEST(HostFit, NothingToSayWhenTheHostIsUnknownOrTheConfigFits) {
    EXPECT_TRUE(host_fit_warnings(workers_capped_at({600 * MiB}), MemInfo{}).empty());
    EXPECT_TRUE(host_fit_warnings(workers_capped_at({600 * MiB}),
                                  MemInfo{1024 * MiB, 900 * MiB, std::nullopt})
                    .empty());
}

// Issue 27, point 7: a reserve of 800G on a 22G host waited for ever, and
// neither --check-config nor reload said so.
TEST(HostFit, AReserveLargerThanTheHostsRamCanNeverFit) {
    auto config = workers_capped_at({1 * GiB, 1 * GiB, 1 * GiB});
    config.workers[0].memory.reserve = 800 * GiB;
    config.workers[1].memory.reserve = 800 * GiB;
    config.workers[1].overcommit = true;  // starts anyway: nothing to warn about
    config.workers[2].memory.reserve = 2 * GiB;
    MemInfo host{22 * GiB + 900 * MiB, 20 * GiB, 0};
    EXPECT_THAT(host_fit_warnings(config, host),
                ElementsAre("worker 'w0': memory.reserve 800G can never fit on this host (RAM "
                            "22.9G): it would wait for room forever; lower it, or set admission: "
                            "overcommit"));
}

}  // namespace
}  // namespace infervisor
