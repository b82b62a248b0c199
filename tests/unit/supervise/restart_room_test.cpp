// No restart into the same pressure: the room decision on traces of
// /proc/meminfo, and real workers whose restart after a kill for memory waits
// for a (fixture) /proc/meminfo to show room.
#include "supervise/restart_room.h"

#include <gmock/gmock.h>

#include "gpu/gpu_snapshot.h"
#include "supervisor_fixture.h"
#include "support/byte_units.h"

namespace infervisor::testing {
namespace {

using ::testing::HasSubstr;
using K = EventKind;
using namespace std::chrono_literals;

MemInfo host(uint64_t total, uint64_t available) { return MemInfo{total, available}; }

TEST(RestartRoom, NeedIsTheSmallerOfCapAndPeak) {
    EXPECT_EQ(room_needed(600 * MiB, 450 * MiB), 450 * MiB);
    EXPECT_EQ(room_needed(600 * MiB, 900 * MiB), 600 * MiB);
    EXPECT_EQ(room_needed(std::nullopt, 450 * MiB), 450 * MiB);
    EXPECT_EQ(room_needed(600 * MiB, std::nullopt), 600 * MiB);
    EXPECT_EQ(room_needed(std::nullopt, std::nullopt), std::nullopt);
}

TEST(RestartRoom, WhatARunEndedForMemoryNeeds) {
    // Its own growth (a leak): what it took to serve; never served: its peak.
    EXPECT_EQ(room_needed_after({600 * MiB, 450 * MiB, 200 * MiB, false}), 200 * MiB);
    EXPECT_EQ(room_needed_after({600 * MiB, 450 * MiB, std::nullopt, false}), 450 * MiB);
    // The host ran out with it serving: its peak, at least its baseline.
    EXPECT_EQ(room_needed_after({600 * MiB, 450 * MiB, 200 * MiB, true}), 450 * MiB);
    EXPECT_EQ(room_needed_after({600 * MiB, 150 * MiB, 200 * MiB, true}), 200 * MiB);
    // ... with it still loading: its peak is how far the load got; its cap.
    EXPECT_EQ(room_needed_after({600 * MiB, 346 * MiB, std::nullopt, true}), 600 * MiB);
    EXPECT_EQ(room_needed_after({std::nullopt, 346 * MiB, std::nullopt, true}), 346 * MiB);
    EXPECT_EQ(room_needed_after({std::nullopt, std::nullopt, std::nullopt, true}), std::nullopt);
}

TEST(RestartRoom, WaitsOnATraceUntilNeedPlusReserveIsAvailable) {
    // The tiny host: 1 GiB; the batch worker peaked at 500 MiB when a host
    // rule stopped it. The host recovers as the survivors page back in.
    const uint64_t need = 500 * MiB;
    const uint64_t trace[] = {20 * MiB, 300 * MiB, 550 * MiB, 602 * MiB, 700 * MiB};
    std::vector<bool> fits;
    for (uint64_t available : trace)
        fits.push_back(judge_room(need, host(1 * GiB, available)).fits);
    // 500 MiB + 102.4 MiB reserve: the first reading that fits is 700 MiB.
    EXPECT_THAT(fits, ::testing::ElementsAre(false, false, false, false, true));
    auto v = judge_room(need, host(1 * GiB, 300 * MiB));
    EXPECT_EQ(v.needed, need);
    EXPECT_EQ(v.wanted_available, need + (1 * GiB) / 10);
    EXPECT_EQ(v.available, 300 * MiB);
}

TEST(RestartRoom, ACapAboveWhatTheHostCanOfferIsNotAWaitForever) {
    // 12G cap on an 8G host: it needs at most 80% of RAM, plus the reserve.
    auto v = judge_room(12 * GiB, host(8 * GiB, 8 * GiB - 100 * MiB));
    EXPECT_TRUE(v.fits);
    EXPECT_EQ(v.needed, 8 * GiB / 10 * 8);
}

TEST(RestartRoom, WithoutMeminfoNothingIsHeldBack) {
    EXPECT_TRUE(judge_room(1 * GiB, MemInfo{}).fits);
}

GpuDevice card(const std::string& pci, uint64_t total, uint64_t used, std::string fault = "") {
    GpuDevice d;
    d.vendor = "nvidia";
    d.pci_bus_id = pci;
    d.memory_total = total;
    d.memory_used = used;
    d.fault = std::move(fault);
    return d;
}

TEST(GpuRestartRoom, WaitsUntilItsDevicesTogetherHaveWhatItHeld) {
    GpuRoomNeeded needed{30 * GiB, {"0000:03:00.0", "0000:04:00.0"}};
    auto full = judge_gpu_room(
        needed, {card("0000:03:00.0", 80 * GiB, 70 * GiB), card("0000:04:00.0", 80 * GiB, 70 * GiB),
                 card("0000:05:00.0", 80 * GiB, 0)});  // not its
    EXPECT_FALSE(full.fits);
    EXPECT_EQ(full.available, 20 * GiB);
    EXPECT_THAT(full.why, HasSubstr("20G of GPU memory free on 0000:03:00.0, 0000:04:00.0, less "
                                    "than the 30G it held"));
    EXPECT_TRUE(judge_gpu_room(needed, {card("0000:03:00.0", 80 * GiB, 60 * GiB),
                                        card("0000:04:00.0", 80 * GiB, 70 * GiB)})
                    .fits);
    // A card held whole is not waited for beyond 80% of it.
    GpuRoomNeeded whole{80 * GiB, {"0000:03:00.0"}};
    EXPECT_TRUE(judge_gpu_room(whole, {card("0000:03:00.0", 80 * GiB, 14 * GiB)}).fits);
}

TEST(GpuRestartRoom, NeverOntoACardInErrorAndNoWaitWithoutFigures) {
    GpuRoomNeeded needed{1 * GiB, {"0000:03:00.0"}};
    auto broken = judge_gpu_room(
        needed, {card("0000:03:00.0", 80 * GiB, 0, "the GPU has fallen off the bus")});
    EXPECT_FALSE(broken.fits);
    EXPECT_EQ(broken.why, "0000:03:00.0 is in error: the GPU has fallen off the bus");
    EXPECT_TRUE(judge_gpu_room(needed, {}).fits) << "not in the reading: nothing to judge by";
    GpuDevice unknown = card("0000:03:00.0", 80 * GiB, 0);
    unknown.memory_used.reset();
    EXPECT_TRUE(judge_gpu_room(needed, {unknown}).fits);
}

// Real workers; the host's memory is a fixture /proc/meminfo.
// On fake time: the room is looked for again when the test lets kRoomPoll
// pass (the backoff, under the fixture's kIdlePoll, passes by itself).
class RestartWaitsForRoom : public SupervisorFixture {
  protected:
    RestartWaitsForRoom() : SupervisorFixture(true) {}
    void SetUp() override {
        SupervisorFixture::SetUp();
        if (IsSkipped()) return;
        ctx_->paths.procfs = dir_->path() / "proc";
        set_available(100 * MiB);
    }
    void set_available(uint64_t bytes) {
        // Replaced atomically: the worker may read it at any moment.
        auto next = dir_->write("proc/meminfo.next",
                                "MemTotal:        1048576 kB\nMemFree:           10000 kB\n"
                                "MemAvailable:   " +
                                    std::to_string(bytes / 1024) + " kB\n");
        std::filesystem::rename(next, ctx_->paths.procfs / "meminfo");
    }
    Worker& start_batch() {
        auto spec = example("batch", {});
        spec.memory.max = 600 * MiB;
        spec.restart.mode = RestartMode::always;
        spec.restart.backoff_initial = 100ms;
        supervisor_->apply(config({spec}));
        run_until_event("batch", K::started);
        return *supervisor_->find("batch");
    }
};

TEST_F(RestartWaitsForRoom, AfterAKillForMemoryUntilTheHostHasRoom) {
    Worker& w = start_batch();
    w.expect_memory_room(true);
    ASSERT_TRUE(w.kill_by_policy(Then::worker_policy, "host-memory-low").ok());
    run_until_event("batch", K::restart_waiting_for_memory);
    const Event* wait = last("batch", K::restart_waiting_for_memory);
    EXPECT_EQ(field(*wait, "NEEDED_BYTES"), std::to_string(600 * MiB));  // no memory.peak here
    EXPECT_EQ(field(*wait, "WANTED_AVAILABLE_BYTES"), std::to_string(600 * MiB + GiB / 10));
    EXPECT_EQ(field(*wait, "HOST_MEM_AVAILABLE_BYTES"), std::to_string(100 * MiB));
    EXPECT_THAT(wait->message, HasSubstr("restart waits for memory"));
    EXPECT_EQ(w.state(), WorkerState::backoff);
    EXPECT_EQ(count("batch", K::started), 1u);

    set_available(900 * MiB);  // the room comes back
    advance(kRoomPoll - 1ms);
    EXPECT_EQ(count("batch", K::started), 1u);  // not looked for before its time
    advance(1ms);
    run_until_event("batch", K::started, 2);
    EXPECT_EQ(count("batch", K::restart_waiting_for_memory), 1u);  // said once per wait
    // (Its notify messages are rejected here: the fixture's /proc has no
    // PID/cgroup to prove the sender's cgroup; they do not matter.)
    std::vector<K> lifecycle;
    for (K kind : kinds_of("batch"))
        if (kind != K::notify_rejected) lifecycle.push_back(kind);
    EXPECT_THAT(lifecycle,
                ::testing::ElementsAre(K::started, K::ready, K::exited, K::restarting,
                                       K::restart_waiting_for_memory, K::started, K::ready));
}

TEST_F(RestartWaitsForRoom, AServingWorkerNeedsRoomForItsBaselineNotItsLeak) {
    Worker& w = start_batch();
    w.set_phase("serving", 50 * MiB);  // as PolicyRunner reports it
    w.expect_memory_room(false);
    ASSERT_TRUE(w.kill_by_policy(Then::worker_policy, "near-the-cap").ok());
    run_until_event("batch", K::restart_waiting_for_memory);
    const Event* wait = last("batch", K::restart_waiting_for_memory);
    EXPECT_EQ(field(*wait, "NEEDED_BYTES"), std::to_string(50 * MiB));
    set_available(160 * MiB);  // 50 MiB + 102.4 MiB of reserve
    advance(kRoomPoll);
    run_until_event("batch", K::started, 2);
}

// A host rule ended it because the host ran out with the worker at its
// present size: back at that size the host would run out again, so its
// restart waits for room for its peak (here its memory.max: the fixture's
// cgroup has no memory.peak), not for the smaller size it began serving at.
// (VM 132 saw the batch job restarted at once into the same exhaustion,
// then OOM-killed by the kernel.)
TEST_F(RestartWaitsForRoom, AfterAHostRuleKillTheRoomIsForItsPeakNotItsBaseline) {
    Worker& w = start_batch();
    w.set_phase("serving", 50 * MiB);
    w.expect_memory_room(true);
    ASSERT_TRUE(w.kill_by_policy(Then::worker_policy, "host-memory-low").ok());
    run_until_event("batch", K::restart_waiting_for_memory);
    const Event* wait = last("batch", K::restart_waiting_for_memory);
    EXPECT_EQ(field(*wait, "NEEDED_BYTES"), std::to_string(600 * MiB));
    EXPECT_EQ(count("batch", K::started), 1u);
}

// No kill loop: a worker the host runs out with three times within the
// window is parked, not restarted into the same host once more; an
// operator's start counts afresh.
TEST_F(RestartWaitsForRoom, TheThirdHostKillWithinTheWindowParksIt) {
    set_available(900 * MiB);  // room for each restart at once
    Worker& w = start_batch();
    for (size_t kill = 1; kill <= kHostKillsToPark; ++kill) {
        run_until_event("batch", K::ready, kill);
        w.expect_memory_room(true);
        ASSERT_TRUE(w.kill_by_policy(Then::worker_policy, "host-memory-low").ok());
        run_until_event("batch", K::exited, kill);
    }
    run_until_event("batch", K::parked);
    EXPECT_EQ(w.state(), WorkerState::parked);
    EXPECT_EQ(count("batch", K::started), kHostKillsToPark);
    const Event* parked = last("batch", K::parked);
    EXPECT_THAT(parked->message,
                HasSubstr("the host ran out of memory with it 3 times within 30m (the last: rule "
                          "'host-memory-low', killed by SIGKILL)"));
    EXPECT_THAT(parked->message, HasSubstr("infervisorctl start batch"));
    EXPECT_EQ(field(*parked, "HOST_KILLS"), "3");
    EXPECT_EQ(field(*parked, "LAST_RULE"), "host-memory-low");
    // No rule parked it: resume_when leaves it to the operator.
    EXPECT_EQ(field(*parked, "RULE"), "");
    EXPECT_EQ(w.policy_rule(), "");
    EXPECT_EQ(w.state_reason(), "the host ran out of memory with it 3 times within 30m");

    w.start();  // the operator's: it runs, and the count starts over
    run_until_event("batch", K::ready, kHostKillsToPark + 1);
    w.expect_memory_room(true);
    ASSERT_TRUE(w.kill_by_policy(Then::worker_policy, "host-memory-low").ok());
    run_until_event("batch", K::started, kHostKillsToPark + 2);
    EXPECT_EQ(count("batch", K::parked), 1u);
}

// Kills for something else never count toward it.
TEST_F(RestartWaitsForRoom, KillsForTheWorkersOwnGrowthAreNoHostKills) {
    set_available(900 * MiB);
    Worker& w = start_batch();
    for (size_t kill = 1; kill <= kHostKillsToPark; ++kill) {
        run_until_event("batch", K::ready, kill);
        w.expect_memory_room(false);
        ASSERT_TRUE(w.kill_by_policy(Then::worker_policy, "near-the-cap").ok());
        run_until_event("batch", K::started, kill + 1);
    }
    EXPECT_EQ(count("batch", K::parked), 0u);
}

// A kill by a rule on GPU memory: the restart waits for its card to have
// the room its run held (the GPU reading is the context's gpu_devices).
TEST_F(RestartWaitsForRoom, AfterAKillForGpuMemoryUntilItsCardHasRoom) {
    std::vector<GpuDevice> host = {card("0000:03:00.0", 80 * GiB, 75 * GiB)};
    ctx_->gpu_devices = [&]() -> Result<std::vector<GpuDevice>> { return host; };
    set_available(900 * MiB);  // RAM is not what it waits for
    Worker& w = start_batch();
    w.set_gpu_use(20 * GiB, 50.0, {{"0000:03:00.0", 20 * GiB}});
    w.expect_gpu_room();
    ASSERT_TRUE(w.kill_by_policy(Then::worker_policy, "gpu-near-the-cap").ok());
    run_until_event("batch", K::restart_waiting_for_memory);
    const Event* wait = last("batch", K::restart_waiting_for_memory);
    EXPECT_THAT(wait->message, HasSubstr("restart waits for GPU memory"));
    EXPECT_EQ(field(*wait, "GPU_NEEDED_BYTES"), std::to_string(20 * GiB));
    EXPECT_EQ(field(*wait, "GPU_AVAILABLE_BYTES"), std::to_string(5 * GiB));
    EXPECT_EQ(field(*wait, "GPU_DEVICES"), "0000:03:00.0");
    EXPECT_EQ(w.state(), WorkerState::backoff);

    host[0].memory_used = 40 * GiB;  // the stray process that held it is gone
    advance(kRoomPoll);
    run_until_event("batch", K::started, 2);
    EXPECT_EQ(count("batch", K::restart_waiting_for_memory), 1u);
}

TEST_F(RestartWaitsForRoom, AKillForSomethingElseRestartsOnTheClock) {
    Worker& w = start_batch();
    ASSERT_TRUE(w.kill_by_policy(Then::worker_policy, "runtime-limit").ok());
    run_until_event("batch", K::started, 2);
    EXPECT_EQ(count("batch", K::restart_waiting_for_memory), 0u);
}

TEST_F(RestartWaitsForRoom, AnExplicitStartDoesNotWait) {
    Worker& w = start_batch();
    w.expect_memory_room(true);
    ASSERT_TRUE(w.kill_by_policy(Then::worker_policy, "host-memory-low").ok());
    run_until_event("batch", K::restart_waiting_for_memory);
    w.start();
    run_until_event("batch", K::started, 2);
    EXPECT_EQ(w.state(), WorkerState::running);
}

}  // namespace
}  // namespace infervisor::testing
