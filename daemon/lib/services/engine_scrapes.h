// EngineScrapes: the metrics scrape (engine/metrics_scrape.h) of each run of
// a worker that has engine.metrics and rules that read engine series
// (engine.NAME, engine.rate(NAME); policy/condition.h), for the
// PolicyRunner's samples.
//
// Contract: a scrape lives from the run's start (or adoption) to its exit:
// open() and close(), called by the PolicyRunner with its signal watches.
// take() gives a sample its reading (policy/samples.h: the last scrape's
// values, none after a failed or a late one, late meaning begun a sample
// interval ago and still under way) and begins the next scrape, at most one
// per half interval. It asks for the series the worker's effective rules
// name (set_rules() after a reload). The api_key is read from the worker's
// credential file once per run. A series the rules name that a successful
// scrape does not show is journaled once per run and series
// (engine-series-absent, SERIES=, ENGINE_METRICS=); a scrape that fails
// after one that did not is logged with why, and so is the recovery; the
// run's first failure once it is ready (a server still loading may refuse)
// is journaled too (engine-metrics-failed, ENGINE_METRICS=, ERROR=), since
// the rules on it then never act. What
// a scrape reads is kept for the rules only: nothing of it goes to our own
// /metrics.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/metrics_scrape.h"
#include "policy/rule_spec.h"
#include "policy/samples.h"
#include "supervise/worker.h"
#include "supervise/worker_context.h"

namespace infervisor {

class EngineScrapes {
  public:
    explicit EngineScrapes(WorkerContext& ctx) : ctx_(ctx) {}

    // The run of `worker` started (or was adopted): a scrape when its
    // engine has metrics and `rules` read engine series.
    void open(const Worker& worker, const std::vector<RuleSpec>& rules);
    void close(const std::string& worker);
    void clear() { scrapes_.clear(); }
    // The worker's effective rules changed (a reload): the series asked for.
    void set_rules(const std::string& worker, const std::vector<RuleSpec>& rules);

    // Fills `sample.engine` and begins the next scrape.
    void take(const std::string& worker, WorkerSample& sample, Duration interval);

    bool scraping(const std::string& worker) const { return scrapes_.contains(worker); }

  private:
    struct Scrape {
        std::unique_ptr<MetricsScrape> scrape;
        bool failing = false;            // the last scrape failed (logged once until it recovers)
        bool failure_journaled = false;  // engine-metrics-failed said for this run
        bool ready = false;              // the run is ready (a server still loading may not answer)
    };
    void ended(const std::string& worker, const std::string& target,
               const MetricsScrape::Ended& ended);

    WorkerContext& ctx_;
    std::map<std::string, Scrape> scrapes_;
};

// The engine series `rules` read, each once.
PrometheusWanted engine_series_wanted(const std::vector<RuleSpec>& rules);

}  // namespace infervisor
