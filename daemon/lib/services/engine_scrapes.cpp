#include "services/engine_scrapes.h"

#include <spdlog/spdlog.h>

#include "policy/condition.h"
#include "supervise/worker_credentials.h"

namespace infervisor {

namespace {

// The secret the engine's api_key names, read from the credential's source
// file; empty (and logged) when it cannot be read: the scrape goes without,
// and a server that wants one answers 401, which the scrape reports.
std::string api_key_of(const WorkerSpec& spec) {
    if (!spec.engine || spec.engine->api_key.empty()) return {};
    auto source = spec.credentials.find(spec.engine->api_key);
    if (source == spec.credentials.end()) return {};  // the validator refuses this
    auto secret = read_credential_secret(source->second);
    if (!secret) {
        spdlog::warn("{}: engine api_key '{}': {}", spec.name, spec.engine->api_key,
                     secret.error().message());
        return {};
    }
    return std::move(*secret);
}

}  // namespace

PrometheusWanted engine_series_wanted(const std::vector<RuleSpec>& rules) {
    PrometheusWanted wanted;
    for (const RuleSpec& rule : rules)
        for (auto& name : engine_series_of(rule.when)) wanted.insert(std::move(name));
    return wanted;
}

void EngineScrapes::open(const Worker& worker, const std::vector<RuleSpec>& rules) {
    const WorkerSpec& spec = worker.spec();
    scrapes_.erase(spec.name);
    PrometheusWanted wanted = engine_series_wanted(rules);
    if (!spec.engine || !spec.engine->metrics || wanted.empty()) return;
    MetricsScrape::Settings settings{*spec.engine, api_key_of(spec), std::move(wanted)};
    const std::string name = spec.name;
    const std::string target = *spec.engine->metrics;
    scrapes_[name].scrape = std::make_unique<MetricsScrape>(
        ctx_.io, ctx_.clock, std::move(settings),
        [this, name, target](const MetricsScrape::Ended& e) { ended(name, target, e); });
}

void EngineScrapes::close(const std::string& worker) { scrapes_.erase(worker); }

void EngineScrapes::set_rules(const std::string& worker, const std::vector<RuleSpec>& rules) {
    auto it = scrapes_.find(worker);
    if (it != scrapes_.end()) it->second.scrape->set_wanted(engine_series_wanted(rules));
}

void EngineScrapes::take(const std::string& worker, WorkerSample& sample, Duration interval) {
    auto it = scrapes_.find(worker);
    if (it == scrapes_.end()) return;
    MetricsScrape& scrape = *it->second.scrape;
    it->second.ready = sample.ready_at.has_value();
    if (auto reading = scrape.reading(interval))
        sample.engine = EngineReading{reading->time, std::move(reading->series)};
    scrape.begin(interval / 2);
}

void EngineScrapes::ended(const std::string& worker, const std::string& target,
                          const MetricsScrape::Ended& e) {
    auto it = scrapes_.find(worker);
    if (it == scrapes_.end()) return;
    if (!e.ok && !it->second.failing)
        spdlog::warn("{}: engine metrics {}: {}; engine.* comparisons are false until it answers",
                     worker, target, e.error);
    if (!e.ok && it->second.ready && !it->second.failure_journaled) {
        it->second.failure_journaled = true;
        ctx_.events.emit(Event{EventKind::engine_metrics_failed,
                               worker,
                               "engine metrics " + target + ": " + e.error +
                                   "; the rules on engine.* cannot act until it answers",
                               {{"ENGINE_METRICS", target}, {"ERROR", e.error}}});
    }
    if (e.ok && it->second.failing)
        spdlog::info("{}: engine metrics {} answer again", worker, target);
    it->second.failing = !e.ok;
    for (const auto& series : e.newly_absent)
        ctx_.events.emit(
            Event{EventKind::engine_series_absent,
                  worker,
                  "engine metrics " + target + " do not show " + series +
                      ", which a rule reads: its comparisons are false while it is missing",
                  {{"SERIES", series}, {"ENGINE_METRICS", target}}});
}

}  // namespace infervisor
