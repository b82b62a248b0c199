// The spec as `infervisorctl show --json` and Varlink's Show give it: what
// the daemon enforces, not only what the file says.
#include <gtest/gtest.h>

#include "services/supervisor_service.h"

namespace infervisor {
namespace {

using namespace std::chrono_literals;

TEST(SpecJson, TheWatchdogSaysWhetherItIsLearned) {
    WorkerSpec unset;  // no `watchdog:`: one it sends unasked is held to its pace
    EXPECT_EQ(spec_to_json(unset)["watchdog"], "learned");
    WorkerSpec off;
    off.learn_watchdog = false;  // `watchdog: 0s`
    EXPECT_EQ(spec_to_json(off)["watchdog"], "0s");
    WorkerSpec given;
    given.watchdog = 30s;
    given.learn_watchdog = false;
    EXPECT_EQ(spec_to_json(given)["watchdog"], "30s");
}

TEST(SpecJson, TheSuspendMethodIsShown) {
    WorkerSpec plain;
    EXPECT_EQ(spec_to_json(plain)["suspend"]["method"], "freeze");
    WorkerSpec vllm;
    vllm.suspend = {SuspendMethod::vllm_sleep, 2};
    EXPECT_EQ(spec_to_json(vllm)["suspend"]["method"], "vllm-sleep");
    EXPECT_EQ(spec_to_json(vllm)["suspend"]["level"], 2);
}

}  // namespace
}  // namespace infervisor
