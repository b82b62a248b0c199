// Supervisor: the set of workers, kept in line with the configuration.
//
// Contract: apply() makes the running set match a validated Config — new
// workers start, removed ones stop (their cgroups removed), workers whose spec
// changed restart with the new spec, unchanged ones are not touched. It may be
// called again while earlier changes are still stopping workers; the latest
// configuration wins. Runs on the event loop thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/daemon_config.h"
#include "supervise/worker.h"

namespace infervisor {

class Supervisor {
public:
    explicit Supervisor(WorkerContext& ctx) : ctx_(ctx) {}

    // Kills and removes worker cgroups left by an earlier daemon run (after a
    // crash, say), so that every configured worker then runs exactly once.
    // Blocking; call once at start-up, before apply().
    void reap_leftovers();

    void apply(const Config& config);

    // Stops every worker; `done` runs when all are down.
    void stop_all(std::function<void()> done);

    Worker* find(const std::string& name);
    std::vector<const Worker*> workers() const;
    // "3 workers: 2 running, 1 failed", for STATUS= and logs.
    std::string summary() const;

private:
    void retire(const std::string& name);
    void create_and_start(const WorkerSpec& spec);
    // Drops the worker's locks and tmpfiles exclusions; removes its work dir
    // when configured to (the worker is stopped by then).
    void release_workdir(const WorkerSpec& spec);

    WorkerContext& ctx_;
    std::map<std::string, WorkerSpec> desired_;
    std::map<std::string, std::unique_ptr<Worker>> workers_;
    std::map<std::string, std::unique_ptr<Worker>> retiring_;
    bool stopping_all_ = false;
};

}  // namespace infervisor
