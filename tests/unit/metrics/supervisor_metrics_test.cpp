#include "metrics/supervisor_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "example_metrics.h"

namespace infervisor {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string rendered() {
    SupervisorMetrics m;
    testing::feed_example(m);
    return m.render(testing::example_daemon_stats());
}

TEST(SupervisorMetrics, WorkerSeriesInBaseUnits) {
    std::string text = rendered();
    EXPECT_THAT(text, HasSubstr("infervisor_worker_memory_bytes{worker=\"leaky\"} 44040192\n"));
    EXPECT_THAT(text,
                HasSubstr("infervisor_worker_memory_max_bytes{worker=\"leaky\"} 100663296\n"));
    EXPECT_THAT(text,
                HasSubstr("infervisor_worker_memory_growth_per_minute_ratio{worker=\"leaky\"} "
                          "0.22500000000000001\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_pressure_avg10_ratio{worker=\"leaky\",resource="
                                "\"memory\",kind=\"some\"} 0.125\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_pressure_stalled_seconds_total{worker=\"leaky\","
                                "resource=\"memory\",kind=\"full\"} 1\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_memory_events_total{worker=\"leaky\",event="
                                "\"oom_kill\"} 1\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_cpu_seconds_total{worker=\"leaky\"} 1.5\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_pids{worker=\"leaky\"} 7\n"));
    // cpu.pressure has no "full" line on this sample: no series for it.
    EXPECT_THAT(text, Not(HasSubstr("resource=\"cpu\",kind=\"full\"")));
    // A worker without a limit has no max series, rather than a made-up one.
    EXPECT_THAT(text, Not(HasSubstr("infervisor_worker_memory_max_bytes{worker=\"chat\"}")));
}

TEST(SupervisorMetrics, StateIsOneSeriesPerStateAndExitReasonIsInfo) {
    std::string text = rendered();
    EXPECT_THAT(text, HasSubstr("infervisor_worker_state{worker=\"leaky\",state=\"running\"} 1\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_state{worker=\"leaky\",state=\"parked\"} 0\n"));
    EXPECT_THAT(
        text,
        HasSubstr("infervisor_worker_state{worker=\"odd\\\"name\\\\\",state=\"parked\"} 1\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_last_exit_info{worker=\"leaky\",reason=\"oom-"
                                "killed (memory.max reached)\"} 1\n"));
    EXPECT_THAT(text,
                HasSubstr("reason=\"killed by policy rule \\\"growth\\\"\\nsecond line\"} 1\n"));
    EXPECT_THAT(text, Not(HasSubstr("infervisor_worker_last_exit_info{worker=\"chat\"")));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_oom_kills_total{worker=\"leaky\"} 1\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_oom_kills_total{worker=\"chat\"} 0\n"));
    EXPECT_THAT(text,
                HasSubstr("infervisor_worker_restarts_total{worker=\"odd\\\"name\\\\\"} 5\n"));
}

TEST(SupervisorMetrics, PolicyActionsCountByRuleAndAction) {
    std::string text = rendered();
    EXPECT_THAT(text, HasSubstr("infervisor_policy_actions_total{worker=\"leaky\",rule=\"growth\","
                                "action=\"kill\"} 2\n"));
    EXPECT_THAT(text,
                HasSubstr("infervisor_policy_actions_total{worker=\"leaky\",rule=\"pressure\","
                          "action=\"throttle\"} 1\n"));
    EXPECT_THAT(text,
                HasSubstr("infervisor_policy_actions_total{worker=\"\",rule=\"host-pressure\","
                          "action=\"log\"} 1\n"));
}

TEST(SupervisorMetrics, EveryStateHasItsSeriesSuspendedToo) {
    std::string text = rendered();
    EXPECT_THAT(text,
                HasSubstr("infervisor_worker_state{worker=\"idle\",state=\"suspended\"} 1\n"));
    EXPECT_THAT(text,
                HasSubstr("infervisor_worker_state{worker=\"leaky\",state=\"suspended\"} 0\n"));
}

TEST(SupervisorMetrics, CheckpointsCountWrittenFailedAndRestoredWithTheirSeconds) {
    std::string text = rendered();
    EXPECT_THAT(text, HasSubstr("# TYPE infervisor_worker_checkpoints_total counter\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_checkpoints_total{worker=\"leaky\",result="
                                "\"written\"} 2\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_checkpoints_total{worker=\"leaky\",result="
                                "\"failed\"} 1\n"));
    // Only the requested one has a duration.
    EXPECT_THAT(text, HasSubstr("# TYPE infervisor_worker_checkpoint_duration_seconds summary\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_checkpoint_duration_seconds_sum{worker="
                                "\"leaky\"} 1.5\n"
                                "infervisor_worker_checkpoint_duration_seconds_count{worker="
                                "\"leaky\"} 1\n"));
    EXPECT_THAT(text,
                HasSubstr("infervisor_worker_last_checkpoint_bytes{worker=\"leaky\"} 8192\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_last_checkpoint_timestamp_seconds{worker="
                                "\"leaky\"} 1700000002.5\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_checkpoint_restores_total{worker=\"leaky\","
                                "result=\"restored\"} 1\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_checkpoint_restores_total{worker=\"leaky\","
                                "result=\"failed\"} 0\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_checkpoint_restore_duration_seconds_sum{worker="
                                "\"leaky\"} 0.75\n"));
    // A worker that never checkpointed has no checkpoint series.
    EXPECT_THAT(text, Not(HasSubstr("infervisor_worker_checkpoints_total{worker=\"chat\"")));
}

TEST(SupervisorMetrics, SuspensionsCountWithTheirSecondsAndReclaimedBytes) {
    std::string text = rendered();
    EXPECT_THAT(text, HasSubstr("infervisor_worker_suspensions_total{worker=\"chat\"} 1\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_resumes_total{worker=\"chat\"} 1\n"));
    EXPECT_THAT(text,
                HasSubstr("infervisor_worker_suspended_seconds_total{worker=\"chat\"} 30.5\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_suspend_reclaimed_bytes_total{worker=\"chat\"} "
                                "1048576\n"));
    // Still suspended: counted, its seconds come with the resume.
    EXPECT_THAT(text, HasSubstr("infervisor_worker_suspensions_total{worker=\"idle\"} 1\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_resumes_total{worker=\"idle\"} 0\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_suspended_seconds_total{worker=\"idle\"} 0\n"));
    EXPECT_THAT(text, Not(HasSubstr("infervisor_worker_suspensions_total{worker=\"leaky\"")));
}

TEST(SupervisorMetrics, AdmissionWaitsAndAdmissionsCountWithTheSecondsWaited) {
    std::string text = rendered();
    EXPECT_THAT(text, HasSubstr("infervisor_worker_admission_waits_total{worker=\"chat\"} 2\n"));
    EXPECT_THAT(text,
                HasSubstr("infervisor_worker_admissions_total{worker=\"chat\",how=\"fit\"} 2\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_admissions_total{worker=\"chat\",how="
                                "\"overcommit\"} 1\n"));
    EXPECT_THAT(text,
                HasSubstr("infervisor_worker_admission_wait_seconds_sum{worker=\"chat\"} 12.75\n"));
    EXPECT_THAT(text,
                HasSubstr("infervisor_worker_admission_wait_seconds_count{worker=\"chat\"} 2\n"));
    // Waiting now: counted, no admission yet.
    EXPECT_THAT(text, HasSubstr("infervisor_worker_admission_waits_total{worker=\"idle\"} 1\n"));
    EXPECT_THAT(text,
                HasSubstr("infervisor_worker_admissions_total{worker=\"idle\",how=\"fit\"} 0\n"));
    EXPECT_THAT(text, Not(HasSubstr("infervisor_worker_admission_waits_total{worker=\"leaky\"")));
}

TEST(SupervisorMetrics, NoCheckpointOrSuspensionFamiliesWithoutAny) {
    SupervisorMetrics m;
    m.set_workers({{.name = "w", .state = "running"}});
    std::string text = m.render({});
    EXPECT_THAT(text, Not(HasSubstr("_checkpoint")));  // state="checkpointed" is the state label's
    EXPECT_THAT(text, Not(HasSubstr("suspensions")));
    EXPECT_THAT(text, Not(HasSubstr("resumes")));
    EXPECT_THAT(text, Not(HasSubstr("admission")));
}

TEST(SupervisorMetrics, ExtrasAreSetOnTheLastSampleOfARunningWorker) {
    SupervisorMetrics m;
    testing::feed_example(m);
    m.set_extras("leaky", 99u << 20, 12);
    m.set_extras("odd\"name\\", 1, 1);  // not running: no sample to set them on
    std::string text = m.render({});
    EXPECT_THAT(text,
                HasSubstr("infervisor_worker_memory_peak_bytes{worker=\"leaky\"} 103809024\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_pids{worker=\"leaky\"} 12\n"));
    EXPECT_THAT(text, Not(HasSubstr("infervisor_worker_pids{worker=\"odd")));
}

TEST(SupervisorMetrics, HostAndDaemonSeries) {
    std::string text = rendered();
    EXPECT_THAT(text, HasSubstr("infervisor_host_memory_available_bytes 536870912\n"));
    EXPECT_THAT(text,
                HasSubstr("infervisor_host_pressure_stalled_seconds_total{resource=\"memory\","
                          "kind=\"some\"} 9\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_daemon_resident_memory_bytes 8388608\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_daemon_evaluation_seconds 0.00035\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_daemon_loop_lag_seconds 0.0011999999999999999\n"));
    EXPECT_THAT(text, HasSubstr("infervisor_daemon_evaluations_total 3\n"));
}

TEST(SupervisorMetrics, GpuSeriesPerDeviceWithTheDescriptionOnInfo) {
    std::string text = rendered();
    EXPECT_THAT(text, HasSubstr("# HELP infervisor_gpu_info Always 1; the labels index, vendor, "
                                "name and uuid (NVIDIA, AMD) describe the GPU at the PCI address "
                                "device.\n# TYPE infervisor_gpu_info gauge\n"
                                "infervisor_gpu_info{device=\"0000:03:00.0\",index=\"0\",vendor="
                                "\"nvidia\",name=\"NVIDIA H100 80GB HBM3\",uuid=\"GPU-8f6b2c1e-"
                                "0000-1111-2222-333344445555\"} 1\n"
                                "infervisor_gpu_info{device=\"0000:04:00.0\",index=\"1\",vendor="
                                "\"nvidia\",name=\"NVIDIA H100 80GB HBM3\",uuid=\"GPU-0d1e2f3a-"
                                "0000-1111-2222-333344445555\"} 1\n"));
    // The lost device has no figures: only the answering one's.
    EXPECT_THAT(text, HasSubstr("# TYPE infervisor_gpu_memory_total_bytes gauge\n"
                                "infervisor_gpu_memory_total_bytes{device=\"0000:03:00.0\"} "
                                "85899345920\n# HELP "));
    EXPECT_THAT(text, HasSubstr("# TYPE infervisor_gpu_memory_used_bytes gauge\n"
                                "infervisor_gpu_memory_used_bytes{device=\"0000:03:00.0\"} "
                                "64424509440\n# HELP "));
    EXPECT_THAT(text, HasSubstr("# TYPE infervisor_gpu_utilization_ratio gauge\n"
                                "infervisor_gpu_utilization_ratio{device=\"0000:03:00.0\"} "
                                "0.875\n# HELP "));
    EXPECT_THAT(text, HasSubstr("# TYPE infervisor_gpu_fault gauge\n"
                                "infervisor_gpu_fault{device=\"0000:03:00.0\"} 0\n"
                                "infervisor_gpu_fault{device=\"0000:04:00.0\"} 1\n"));
}

TEST(SupervisorMetrics, GpuSeriesPerWorkerWhereTheGpusAreRead) {
    std::string text = rendered();
    EXPECT_THAT(text, HasSubstr("# TYPE infervisor_worker_gpu_memory_bytes gauge\n"
                                "infervisor_worker_gpu_memory_bytes{worker=\"chat\"} "
                                "38654705664\n"
                                "infervisor_worker_gpu_memory_bytes{worker=\"leaky\"} 0\n"));
    // Only chat has a cap.
    EXPECT_THAT(text, HasSubstr("# TYPE infervisor_worker_gpu_memory_max_bytes gauge\n"
                                "infervisor_worker_gpu_memory_max_bytes{worker=\"chat\"} "
                                "42949672960\n# HELP "));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_gpu_utilization_ratio{worker=\"chat\"} 0.75\n"
                                "infervisor_worker_gpu_utilization_ratio{worker=\"leaky\"} 0\n"));
    // Per card it holds memory on: leaky holds none, so has no series.
    EXPECT_THAT(text, HasSubstr("# TYPE infervisor_worker_gpu_device_memory_bytes gauge\n"
                                "infervisor_worker_gpu_device_memory_bytes{worker=\"chat\","
                                "device=\"0000:03:00.0\"} 38654705664\n# HELP "));
}

TEST(SupervisorMetrics, XidErrorsAreCountedPerDeviceAndCode) {
    std::string text = rendered();
    EXPECT_THAT(text, HasSubstr("# TYPE infervisor_gpu_xid_errors_total counter\n"
                                "infervisor_gpu_xid_errors_total{device=\"0000:04:00.0\","
                                "xid=\"79\"} 1\n"));
    SupervisorMetrics m;
    m.record_round(EvaluationRound{});
    EXPECT_THAT(m.render({}), Not(HasSubstr("xid")));
}

TEST(SupervisorMetrics, NoGpuFamiliesWithoutGpus) {
    SupervisorMetrics m;
    m.set_workers({{.name = "w", .state = "running"}});
    EvaluationRound round;
    WorkerSample s;
    s.memory_current = 1u << 20;
    s.gpu_memory_max = 1u << 30;  // a cap, but no reading of the GPUs
    round.workers.push_back({"w", s, std::nullopt});
    round.host.mem_available = 1u << 30;
    m.record_round(round);
    std::string text = m.render({});
    EXPECT_THAT(text, HasSubstr("infervisor_worker_memory_bytes{worker=\"w\"} 1048576\n"));
    EXPECT_THAT(text, Not(HasSubstr("gpu")));
}

TEST(SupervisorMetrics, AGpuGoneFromTheReadingLosesItsSeries) {
    SupervisorMetrics m;
    testing::feed_example(m);
    EvaluationRound next;
    next.gpus = {testing::example_gpus().front()};
    m.record_round(next);
    std::string text = m.render({});
    EXPECT_THAT(text, HasSubstr("infervisor_gpu_fault{device=\"0000:03:00.0\"} 0\n"));
    EXPECT_THAT(text, Not(HasSubstr("0000:04:00.0")));
    // A stale reading (no GPUs in the round): every GPU series goes.
    m.record_round(EvaluationRound{});
    EXPECT_THAT(m.render({}), Not(HasSubstr("gpu")));
}

TEST(SupervisorMetrics, AStoppedWorkerKeepsItsFactsButNotItsSamples) {
    SupervisorMetrics m;
    testing::feed_example(m);
    EvaluationRound empty;
    empty.time = TimePoint{std::chrono::hours(2)};
    m.record_round(empty);
    std::string text = m.render({});
    EXPECT_THAT(text, Not(HasSubstr("infervisor_worker_memory_bytes{")));
    EXPECT_THAT(text, HasSubstr("infervisor_worker_restarts_total{worker=\"leaky\"} 2\n"));
    EXPECT_THAT(text,
                HasSubstr("infervisor_policy_actions_total{worker=\"leaky\",rule=\"growth\""));
}

TEST(SupervisorMetrics, WorkersLeavingTheConfigLeaveNoSeries) {
    SupervisorMetrics m;
    testing::feed_example(m);
    m.set_workers({{.name = "chat", .state = "running"}});
    EXPECT_THAT(m.render({}), Not(HasSubstr("leaky")));
}

}  // namespace
}  // namespace infervisor
