// MetricsCollector: connects SupervisorMetrics to the running daemon. It
// takes each policy round's samples (PolicyRunner's round observer), the
// workers' state from the Supervisor and policy actions, OOM kills,
// checkpoints and suspensions from the event bus, and hands the text to the
// outputs the `metrics:` settings name: a file for node_exporter's textfile
// collector and/or the HTTP listener. (`infervisorctl history` reads the
// policy's recording, metrics/worker_history.h, not these.)
//
// Cost (issue 15: the idle bench must not grow by more than 10 % CPU): a
// round only records its samples (the values of the next render); the text is rendered only when
// someone reads it — a scrape, or the textfile when it is due (textfile_interval, not every round)
// — and at most once per round. Only then are the workers' views gathered (view_of,
// supervise/worker_view_of.h, as the control socket's; without its cgroup
// reads) and memory.peak and pids.current (which the policy does not use)
// read.
//
// With no output it does not even observe the rounds (no cost).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/daemon_config.h"
#include "control/supervisor_api.h"
#include "metrics/metrics_http_server.h"
#include "metrics/supervisor_metrics.h"
#include "services/policy_runner.h"
#include "services/service.h"

namespace infervisor {

class MetricsCollector final : public Service {
  public:
    MetricsCollector(WorkerContext& ctx, Supervisor& supervisor, PolicyRunner& policy);
    ~MetricsCollector() override;
    MetricsCollector(const MetricsCollector&) = delete;
    MetricsCollector& operator=(const MetricsCollector&) = delete;

    std::string_view name() const override { return "metrics"; }
    // Takes `metrics:` (at start and on reload); while running, applies it at
    // once: outputs opened, moved or closed.
    void configure(const Config& config) override;
    // Opens the configured outputs and records every policy round. A
    // listener that cannot bind is logged, not fatal.
    void start() override;
    // Closes the listener and stops recording rounds (the textfile stays).
    void stop() override;

    const SupervisorMetrics& metrics() const { return metrics_; }
    // The exposition as of the last round (rendered now if not yet).
    std::shared_ptr<const std::string> text();
    // Where the HTTP listener listens, when it does (tests).
    std::optional<boost::asio::ip::tcp::endpoint> listening() const;

    // Renderings of the text and textfile writes so far (tests).
    size_t renders() const { return renders_; }
    size_t textfile_writes() const { return textfile_writes_; }

  private:
    void on_round(const EvaluationRound& round);
    void on_event(const Event& e);
    void apply();  // wanted_ and sample_interval_, while running
    void write_textfile();
    void open_listener(const MetricsSettings& settings);
    // The configured workers' names changed: counters of workers gone are dropped.
    bool workers_changed() const;
    // The workers' views (view_of, without the cgroup reads: the rounds have
    // the use), and memory.peak/pids.current, as of now.
    void gather_views();

    WorkerContext& ctx_;
    Supervisor& supervisor_;
    PolicyRunner& policy_;
    MetricsSettings wanted_;    // configured
    MetricsSettings settings_;  // applied (empty while stopped)
    bool running_ = false;
    Duration sample_interval_{};
    SupervisorMetrics metrics_;
    std::shared_ptr<const std::string> rendered_;  // reset by each round
    std::unique_ptr<MetricsHttpServer> http_;
    std::string last_textfile_error_;
    std::optional<TimePoint> textfile_written_;  // the round it was last written after
    size_t renders_ = 0;
    size_t textfile_writes_ = 0;
    std::vector<std::string> worker_names_;  // as of the last gather_views()
    double start_time_seconds_ = 0;
    EventBus::SinkId subscription_ = 0;
};

}  // namespace infervisor
