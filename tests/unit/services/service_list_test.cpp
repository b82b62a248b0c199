// ServiceList: the daemon's services walked in one order for start and
// configure, in the reverse order for stop (services/service.h).
#include "services/service_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace infervisor {
namespace {

using ::testing::ElementsAre;

class RecordingService final : public Service {
  public:
    RecordingService(std::string name, std::vector<std::string>& log)
        : name_(std::move(name)), log_(log) {}
    std::string_view name() const override { return name_; }
    void configure(const Config& config) override {
        log_.push_back("configure " + name_ + " " + std::to_string(config.workers.size()));
    }
    void start() override { log_.push_back("start " + name_); }
    void stop() override { log_.push_back("stop " + name_); }

  private:
    std::string name_;
    std::vector<std::string>& log_;
};

TEST(ServiceList, ConfiguresAndStartsInOrderAndStopsInReverse) {
    std::vector<std::string> log;
    RecordingService policy("policy", log), metrics("metrics", log), control("control", log);
    ServiceList list;
    list.add(policy);
    list.add(metrics);
    list.add(control);
    Config config;
    config.workers.resize(2);
    list.configure(config);
    list.start();
    list.stop();
    list.start();  // a re-execution that failed: the same walk again
    EXPECT_THAT(log, ElementsAre("configure policy 2", "configure metrics 2", "configure control 2",
                                 "start policy", "start metrics", "start control", "stop control",
                                 "stop metrics", "stop policy", "start policy", "start metrics",
                                 "start control"));
}

}  // namespace
}  // namespace infervisor
