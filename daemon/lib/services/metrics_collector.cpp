#include "services/metrics_collector.h"

#include <spdlog/spdlog.h>

#include <charconv>

#include "metrics/process_stats.h"
#include "metrics/textfile_writer.h"
#include "policy/sampler.h"
#include "supervise/worker_view_of.h"

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

// A number field of an event ("12.345", "1048576"); empty when absent or not a number.
std::optional<double> seconds_field(const Event& e, std::string_view key) {
    std::string text = field(e, key);
    double v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return v;
}

std::optional<uint64_t> bytes_field(const Event& e, std::string_view key) {
    std::string text = field(e, key);
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return v;
}

}  // namespace

MetricsCollector::MetricsCollector(WorkerContext& ctx, Supervisor& supervisor, PolicyRunner& policy)
    : ctx_(ctx), supervisor_(supervisor), policy_(policy) {
    start_time_seconds_ = static_cast<double>(realtime_ms()) / 1000;
    subscription_ = ctx_.events.subscribe([this](const Event& e) { on_event(e); });
}

MetricsCollector::~MetricsCollector() {
    ctx_.events.unsubscribe(subscription_);
    policy_.set_round_observer({});
}

void MetricsCollector::configure(const Config& config) {
    wanted_ = config.daemon.metrics;
    sample_interval_ = config.daemon.sample_interval;
    if (running_) apply();
}

void MetricsCollector::start() {
    if (running_) return;
    running_ = true;
    apply();
}

void MetricsCollector::apply() {
    const MetricsSettings& wanted = wanted_;
    // The rounds feed only what is exported (`infervisorctl history` reads
    // the policy's recording instead, metrics/worker_history.h).
    if (wanted.exported())
        policy_.set_round_observer([this](const EvaluationRound& r) { on_round(r); });
    else
        policy_.set_round_observer({});
    if (wanted.listen_address != settings_.listen_address ||
        wanted.listen_port != settings_.listen_port || (!http_ && !wanted.listen_address.empty()))
        open_listener(wanted);
    if (wanted.textfile != settings_.textfile && !settings_.textfile.empty()) {
        // The old file would go stale; node_exporter would export it forever.
        std::error_code ec;
        std::filesystem::remove(settings_.textfile, ec);
    }
    if (!wanted.textfile.empty() && (wanted.textfile != settings_.textfile ||
                                     wanted.textfile_interval != settings_.textfile_interval))
        spdlog::info("metrics: writing {} every {}", wanted.textfile.string(),
                     format_duration(std::max(wanted.textfile_interval, sample_interval_)));
    if (wanted.textfile != settings_.textfile) textfile_written_.reset();
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
    running_ = false;
    policy_.set_round_observer({});
    http_.reset();
    settings_ = {};  // the next start() opens what is configured then
}

std::optional<boost::asio::ip::tcp::endpoint> MetricsCollector::listening() const {
    if (!http_) return std::nullopt;
    return http_->local_endpoint();
}

void MetricsCollector::on_round(const EvaluationRound& round) {
    if (workers_changed()) gather_views();
    metrics_.record_round(round);
    rendered_.reset();
    if (settings_.textfile.empty()) return;
    // Due once textfile_interval has passed, give or take half a round (the
    // rounds' times jitter), so "16s" with 2 s rounds is every 8th round.
    if (textfile_written_ &&
        round.time - *textfile_written_ + sample_interval_ / 2 < settings_.textfile_interval)
        return;
    textfile_written_ = round.time;
    write_textfile();
}

bool MetricsCollector::workers_changed() const {
    const auto& workers = supervisor_.workers();
    if (workers.size() != worker_names_.size()) return true;
    for (size_t i = 0; i < workers.size(); ++i)
        if (workers[i]->name() != worker_names_[i]) return true;
    return false;
}

void MetricsCollector::gather_views() {
    std::vector<WorkerView> views;
    worker_names_.clear();
    const TimePoint now = ctx_.clock.now();
    for (const Worker* w : supervisor_.workers()) {
        // The use is in the rounds' samples: the view reads no cgroup file.
        views.push_back(view_of(*w, now, ViewReads::none));
        worker_names_.push_back(w->name());
        if (w->state() != WorkerState::running && w->state() != WorkerState::starting) continue;
        WorkerSample extras;
        sample_worker_extras(w->cgroup().path(), extras);
        metrics_.set_extras(w->name(), extras.memory_peak, extras.pids_current);
    }
    metrics_.set_workers(std::move(views));
}

std::shared_ptr<const std::string> MetricsCollector::text() {
    if (!rendered_) {
        ++renders_;
        gather_views();
        DaemonStats stats = read_own_stats(ctx_.paths.procfs);
        stats.start_time_seconds = start_time_seconds_;
        rendered_ = std::make_shared<const std::string>(metrics_.render(stats));
    }
    return rendered_;
}

void MetricsCollector::write_textfile() {
    ++textfile_writes_;
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
    int64_t at = e.realtime_usec ? static_cast<int64_t>(e.realtime_usec / 1000) : realtime_ms();
    switch (e.kind) {
        case EventKind::oom_killed:
            metrics_.record_oom_kill(e.worker);
            break;
        case EventKind::policy_action:
            metrics_.record_action(e.worker, field(e, "RULE"), field(e, "ACTION"));
            break;
        case EventKind::checkpoint_written:
            metrics_.record_checkpoint(e.worker, true, seconds_field(e, "CHECKPOINT_SECONDS"),
                                       bytes_field(e, "CHECKPOINT_BYTES"), at);
            break;
        case EventKind::checkpoint_failed:
            // A criu image that could not be restored, or llama-server slots
            // that were not (OPERATION=restore), is a failed restore, not checkpoint.
            if (field(e, "REASON") == "criu-restore-failed" || field(e, "OPERATION") == "restore")
                metrics_.record_restore(e.worker, false, std::nullopt);
            else
                metrics_.record_checkpoint(e.worker, false, std::nullopt, std::nullopt, at);
            break;
        case EventKind::checkpoint_restored:
            metrics_.record_restore(e.worker, true, seconds_field(e, "RESTORE_SECONDS"));
            break;
        case EventKind::suspended:
            metrics_.record_suspension(e.worker, bytes_field(e, "BYTES_RECLAIMED"));
            break;
        case EventKind::resumed:
            metrics_.record_resume(e.worker, seconds_field(e, "SUSPENDED_SECONDS"));
            break;
        case EventKind::waiting:
            metrics_.record_admission_wait(e.worker);
            break;
        case EventKind::admitted: {
            auto waited_ms = bytes_field(e, "WAITED_MS");
            metrics_.record_admission(
                e.worker, field(e, "OVERCOMMIT") == "1",
                waited_ms ? std::optional<double>(*waited_ms / 1000.0) : std::nullopt);
            break;
        }
        default:
            return;
    }
    rendered_.reset();
}

}  // namespace infervisor
