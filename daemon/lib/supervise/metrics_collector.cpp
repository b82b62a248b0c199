#include "supervise/metrics_collector.h"

#include <spdlog/spdlog.h>

#include "metrics/process_stats.h"
#include "metrics/textfile_writer.h"

namespace infervisor {

namespace {

int64_t realtime_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string field(const Event& e, std::string_view key) {
    for (const auto& [k, v] : e.fields)
        if (k == key) return v;
    return {};
}

}  // namespace

MetricsCollector::MetricsCollector(WorkerContext& ctx, Supervisor& supervisor, PolicyRunner& policy)
    : ctx_(ctx), supervisor_(supervisor), policy_(policy) {
    start_time_seconds_ = static_cast<double>(realtime_ms()) / 1000;
    subscription_ = ctx_.events.subscribe([this](const Event& e) { on_event(e); });
}

MetricsCollector::~MetricsCollector() {
    ctx_.events.unsubscribe(subscription_);
    policy_.set_round_observer({}, false);
}

void MetricsCollector::configure(const Config& config) {
    const MetricsSettings& wanted = config.daemon.metrics;
    sample_interval_ = config.daemon.sample_interval;
    size_t points = static_cast<size_t>(wanted.history / sample_interval_);
    metrics_.set_history_points(std::max<size_t>(points, 1));
    bool observe = wanted.exported() || points > 0;
    if (observe)
        policy_.set_round_observer([this](const EvaluationRound& r) { on_round(r); },
                                   wanted.exported());
    else
        policy_.set_round_observer({}, false);
    if (wanted.listen_address != settings_.listen_address ||
        wanted.listen_port != settings_.listen_port || (!http_ && !wanted.listen_address.empty()))
        open_listener(wanted);
    if (wanted.textfile != settings_.textfile && !settings_.textfile.empty()) {
        // The old file would go stale; node_exporter would export it forever.
        std::error_code ec;
        std::filesystem::remove(settings_.textfile, ec);
    }
    if (wanted.textfile != settings_.textfile && !wanted.textfile.empty())
        spdlog::info("metrics: writing {} after every evaluation (every {})",
                     wanted.textfile.string(), format_duration(sample_interval_));
    settings_ = wanted;
    last_textfile_error_.clear();
}

void MetricsCollector::open_listener(const MetricsSettings& settings) {
    http_.reset();
    if (settings.listen_address.empty()) return;
    http_ = std::make_unique<MetricsHttpServer>(ctx_.io, [this] { return text(); });
    boost::asio::ip::tcp::endpoint at(boost::asio::ip::make_address(settings.listen_address),
                                      settings.listen_port);
    if (auto r = http_->start(at); !r) {
        spdlog::error("{}; metrics are not served over HTTP", r.error().message());
        http_.reset();
        return;
    }
    spdlog::info("metrics: serving http://{}:{}/metrics", settings.listen_address,
                 http_->local_endpoint().port());
}

void MetricsCollector::stop() {
    policy_.set_round_observer({}, false);
    http_.reset();
}

std::optional<boost::asio::ip::tcp::endpoint> MetricsCollector::listening() const {
    if (!http_) return std::nullopt;
    return http_->local_endpoint();
}

void MetricsCollector::on_round(const EvaluationRound& round) {
    std::vector<WorkerFacts> facts;
    for (const Worker* w : supervisor_.workers())
        facts.push_back(
            {w->name(), std::string(state_name(w->state())), w->restarts(), w->last_exit()});
    metrics_.set_workers(std::move(facts));
    metrics_.record_round(round, realtime_ms());
    rendered_.reset();
    if (!settings_.textfile.empty()) write_textfile();
}

std::optional<WorkerHistory> MetricsCollector::history(const std::string& worker) const {
    bool configured = false;
    for (const Worker* w : supervisor_.workers()) configured = configured || w->name() == worker;
    if (!configured) return std::nullopt;
    WorkerHistory h;
    h.interval_usec = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(sample_interval_).count());
    if (const HistoryRing* ring = metrics_.history(worker)) {
        h.points = ring->points();
        h.actions.assign(ring->actions().begin(), ring->actions().end());
    }
    return h;
}

std::shared_ptr<const std::string> MetricsCollector::text() {
    if (!rendered_) {
        DaemonStats stats = read_own_stats(ctx_.paths.procfs);
        stats.start_time_seconds = start_time_seconds_;
        rendered_ = std::make_shared<const std::string>(metrics_.render(stats));
    }
    return rendered_;
}

void MetricsCollector::write_textfile() {
    auto r = write_textfile_atomically(settings_.textfile, *text());
    if (r) {
        if (!last_textfile_error_.empty())
            spdlog::info("metrics: {} written again", settings_.textfile.string());
        last_textfile_error_.clear();
        return;
    }
    // Once per distinct error, not after every round.
    if (r.error().message() != last_textfile_error_)
        spdlog::warn("metrics: {}", r.error().message());
    last_textfile_error_ = r.error().message();
}

void MetricsCollector::on_event(const Event& e) {
    if (e.kind == EventKind::oom_killed) {
        metrics_.record_oom_kill(e.worker);
        rendered_.reset();
    }
    if (e.kind != EventKind::policy_action) return;
    int64_t at = e.realtime_usec ? static_cast<int64_t>(e.realtime_usec / 1000) : realtime_ms();
    metrics_.record_action(e.worker, field(e, "RULE"), field(e, "ACTION"),
                           field(e, "DRY_RUN") == "1", at);
    rendered_.reset();
}

}  // namespace infervisor
