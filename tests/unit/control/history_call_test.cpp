// The History method through VarlinkService: open to unprivileged callers,
// bounded by `limit`, WorkerNotFound for an unknown name.
#include <gtest/gtest.h>

#include "control/varlink_errors.h"
#include "control/varlink_service.h"
#include "fake_supervisor.h"
#include "recording_sink.h"

namespace infervisor {
namespace {

using nlohmann::json;
namespace err = varlink_error;

// A FakeSupervisor with a history of `n` samples for "llama".
class HistorySupervisor : public testing::FakeSupervisor {
  public:
    std::optional<WorkerHistory> history(const std::string& name,
                                         std::size_t limit) const override {
        if (name != "llama") return std::nullopt;
        WorkerHistory h;
        h.interval_usec = 2'000'000;
        for (int i = 0; i < 10; ++i) {
            HistoryPoint p;
            p.time_ms = 1000 * i;
            p.memory_kib = static_cast<uint32_t>(i);
            h.points.push_back(p);
        }
        if (h.points.size() > limit)
            h.points.erase(h.points.begin(), h.points.end() - static_cast<long>(limit));
        h.actions.push_back({9000, "growth", "kill", false});
        return h;
    }
};

class HistoryCallTest : public ::testing::Test {
  protected:
    std::shared_ptr<testing::RecordingSink> call(json params, uid_t uid = 65534) {
        auto sink = std::make_shared<testing::RecordingSink>();
        PeerCredentials peer{uid, uid, 1, {}};
        service.handle({"io.infervisor.supervisor.History", std::move(params), false, false}, peer,
                       sink);
        return sink;
    }

    HistorySupervisor fake;
    VarlinkService service{fake, AccessPolicy{4242}};
};

TEST_F(HistoryCallTest, AnyoneMayReadAWorkersHistory) {
    auto sink = call({{"name", "llama"}});
    ASSERT_EQ(sink->last().error, "");
    const json& reply = sink->last().parameters;
    EXPECT_EQ(reply["interval_usec"], 2'000'000);
    ASSERT_EQ(reply["samples"].size(), 10u);
    EXPECT_EQ(reply["samples"][3]["time_usec"], 3'000'000);
    EXPECT_EQ(reply["samples"][3]["memory_current"], 3 * 1024);
    EXPECT_TRUE(reply["samples"][3]["memory_max"].is_null());
    EXPECT_TRUE(reply["samples"][3]["memory_growth_percent_per_min"].is_null());
    ASSERT_EQ(reply["actions"].size(), 1u);
    EXPECT_EQ(reply["actions"][0]["rule"], "growth");
    EXPECT_EQ(reply["actions"][0]["time_usec"], 9'000'000);
}

TEST_F(HistoryCallTest, LimitKeepsTheNewestAndIsBounded) {
    auto sink = call({{"name", "llama"}, {"limit", 3}});
    ASSERT_EQ(sink->last().parameters["samples"].size(), 3u);
    EXPECT_EQ(sink->last().parameters["samples"][0]["time_usec"], 7'000'000);
    EXPECT_EQ(call({{"name", "llama"}, {"limit", 0}})->last().error, err::kInvalidParameter);
    EXPECT_EQ(call({{"name", "llama"}, {"limit", 100000}})->last().error, err::kInvalidParameter);
}

TEST_F(HistoryCallTest, UnknownWorker) {
    auto sink = call({{"name", "nope"}});
    EXPECT_EQ(sink->last().error, err::kWorkerNotFound);
    EXPECT_EQ(sink->last().parameters["name"], "nope");
}

}  // namespace
}  // namespace infervisor
