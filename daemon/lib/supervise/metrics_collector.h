// MetricsCollector: connects SupervisorMetrics to the running daemon. It
// takes each policy round's samples (PolicyRunner's round observer), the
// workers' state from the Supervisor and policy actions from the event bus,
// and hands the text to the outputs the `metrics:` settings name: a file for
// node_exporter's textfile collector (rewritten after every round) and/or
// the HTTP listener (rendered on the first scrape after a round). It also
// keeps each worker's history ring for `infervisorctl history`.
//
// With no output and history: 0 it does not even observe the rounds (no
// cost). memory.peak and pids.current are sampled only while an output is on.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "config/daemon_config.h"
#include "control/supervisor_api.h"
#include "metrics/metrics_http_server.h"
#include "metrics/supervisor_metrics.h"
#include "supervise/policy_runner.h"

namespace infervisor {

class MetricsCollector {
  public:
    MetricsCollector(WorkerContext& ctx, Supervisor& supervisor, PolicyRunner& policy);
    ~MetricsCollector();
    MetricsCollector(const MetricsCollector&) = delete;
    MetricsCollector& operator=(const MetricsCollector&) = delete;

    // Applies `metrics:` (at start and on reload): outputs opened, moved or
    // closed, history length. A listener that cannot bind is logged, not fatal.
    void configure(const Config& config);
    void stop();

    const SupervisorMetrics& metrics() const { return metrics_; }
    // A configured worker's history (for the control socket).
    std::optional<WorkerHistory> history(const std::string& worker) const;
    // The exposition as of the last round (rendered now if not yet).
    std::shared_ptr<const std::string> text();
    // Where the HTTP listener listens, when it does (tests).
    std::optional<boost::asio::ip::tcp::endpoint> listening() const;

  private:
    void on_round(const EvaluationRound& round);
    void on_event(const Event& e);
    void write_textfile();
    void open_listener(const MetricsSettings& settings);

    WorkerContext& ctx_;
    Supervisor& supervisor_;
    PolicyRunner& policy_;
    MetricsSettings settings_;
    Duration sample_interval_{};
    SupervisorMetrics metrics_;
    std::shared_ptr<const std::string> rendered_;  // reset by each round
    std::unique_ptr<MetricsHttpServer> http_;
    std::string last_textfile_error_;
    double start_time_seconds_ = 0;
    EventBus::SinkId subscription_ = 0;
};

}  // namespace infervisor
