#include "engine/metrics_scrape.h"

#include "engine/engine_request.h"
#include "engine/json_answer.h"

namespace infervisor {

MetricsScrape::MetricsScrape(boost::asio::io_context& io, const Clock& clock, Settings settings,
                             OnEnded on_ended)
    : io_(io), clock_(clock), settings_(std::move(settings)), on_ended_(std::move(on_ended)) {}

MetricsScrape::~MetricsScrape() {
    if (exchange_) exchange_->cancel();
}

HttpRequest MetricsScrape::request() const {
    return engine_request(settings_.engine, settings_.api_key,
                          settings_.engine.metrics.value_or("/metrics"), settings_.max_body);
}

void MetricsScrape::begin(Duration min_gap) {
    const TimePoint now = clock_.now();
    if (exchange_ || (began_ && now - *began_ < min_gap)) return;
    began_ = now;
    // The exchange never calls back after cancel(), which the destructor
    // does: `this` outlives every call.
    exchange_ = start_http_exchange(io_, request(), settings_.engine.timeout,
                                    [this](HttpAnswer answer) { on_answer(std::move(answer)); });
}

std::optional<MetricsScrape::Reading> MetricsScrape::reading(Duration late_after) const {
    if (exchange_ && began_ && clock_.now() - *began_ >= late_after) return std::nullopt;
    return last_;
}

MetricsScrape::Ended MetricsScrape::judge(const HttpAnswer& answer) {
    Ended ended;
    if (!answer.complete) {
        ended.error = answer.error;
        return ended;
    }
    if (answer.status != 200) {
        ended.error = "HTTP " + std::to_string(answer.status);
        if (!answer.body.empty()) ended.error += ": " + shown_text(answer.body);
        return ended;
    }
    auto values = parse_prometheus_text(answer.body, settings_.wanted);
    if (!values) {
        ended.error = "not Prometheus text: " + values.error().message();
        return ended;
    }
    for (const auto& name : settings_.wanted)
        if (!values->contains(name) && reported_absent_.insert(name).second)
            ended.newly_absent.push_back(name);
    ended.ok = true;
    last_ = Reading{clock_.now(), std::move(*values)};
    return ended;
}

void MetricsScrape::on_answer(HttpAnswer answer) {
    exchange_.reset();
    Ended ended = judge(answer);
    if (!ended.ok) last_.reset();
    if (on_ended_) on_ended_(ended);
}

}  // namespace infervisor
