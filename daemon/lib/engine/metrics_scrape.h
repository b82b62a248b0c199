// MetricsScrape: the scrapes of one run of a worker's metrics endpoint
// (engine.metrics, engine_spec.h), for the policy's samples — one request at
// a time through the daemon's HTTP client (probe/http_exchange.h), each
// bounded by the engine's timeout and by max_body, its answer read by the
// exposition parser (prometheus_text.h) for the series the worker's rules
// name.
//
// Contract: begin() starts a scrape at a sample unless one is under way or
// one began less than `min_gap` ago (wake-ups between two ticks do not
// multiply requests). reading() is what a sample carries: the values of the
// last scrape that ended, when it succeeded (status 200 and a text that
// parses) — unless the scrape under way began `late_after` ago or more:
// then it is late, and the sample carries nothing, as after a failure. So a
// sample carries the values of the scrape begun at the sample before it. An
// ended scrape is reported to `on_ended` (on the event loop, never from
// within begin()): whether it succeeded, why not, and which series it did
// not show that no earlier scrape of this run was reported without (each
// name once per run: the caller journals them); `on_ended` must not destroy
// the scrape. Destroying the scrape cancels the request under way;
// `on_ended` is not called after that.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"
#include "engine/engine_spec.h"
#include "engine/prometheus_text.h"
#include "probe/http_exchange.h"

namespace infervisor {

// A scrape's answer may be this long at most (vLLM's /metrics, histograms
// of every engine, is some 100K); a longer one fails the scrape.
inline constexpr size_t kMaxMetricsBody = 4 << 20;

class MetricsScrape {
  public:
    struct Settings {
        EngineSpec engine;    // host, port, tls, timeout; `metrics` is the target
        std::string api_key;  // the secret itself (Authorization: Bearer), or empty
        PrometheusWanted wanted;
        size_t max_body = kMaxMetricsBody;
    };
    struct Reading {
        TimePoint time{};  // when its answer was read
        PrometheusValues series;
    };
    struct Ended {
        bool ok = false;
        std::string error;                      // !ok: why, for people
        std::vector<std::string> newly_absent;  // ok: wanted, not shown, not reported before
    };
    using OnEnded = std::function<void(const Ended&)>;

    MetricsScrape(boost::asio::io_context& io, const Clock& clock, Settings settings,
                  OnEnded on_ended);
    ~MetricsScrape();
    MetricsScrape(const MetricsScrape&) = delete;
    MetricsScrape& operator=(const MetricsScrape&) = delete;

    void begin(Duration min_gap);
    std::optional<Reading> reading(Duration late_after) const;
    // The names the next scrapes keep (a reload changed the rules).
    void set_wanted(PrometheusWanted wanted) { settings_.wanted = std::move(wanted); }
    const PrometheusWanted& wanted() const { return settings_.wanted; }

  private:
    HttpRequest request() const;
    void on_answer(HttpAnswer answer);
    Ended judge(const HttpAnswer& answer);

    boost::asio::io_context& io_;
    const Clock& clock_;
    Settings settings_;
    OnEnded on_ended_;
    std::shared_ptr<HttpExchange> exchange_;  // the scrape under way
    std::optional<TimePoint> began_;          // of the last scrape begun
    std::optional<Reading> last_;             // of the last scrape that ended, if it succeeded
    std::set<std::string, std::less<>> reported_absent_;
};

}  // namespace infervisor
