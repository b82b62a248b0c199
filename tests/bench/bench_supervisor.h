// BenchSupervisor: a Supervisor as the daemon builds it, for benchmark
// programs, on this host's real cgroup2 hierarchy: a cgroup of its own below
// this process's cgroup (removed again by the destructor, once the workers are
// stopped), scratch runtime/state dirs under /tmp, the real clock. Where the
// memory controller is missing (our development hosts) limits are not
// written; have_memory() says which.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>

#include "supervise/supervisor.h"

namespace infervisor::bench {

class BenchSupervisor {
  public:
    // `name` names the cgroup and scratch dir ("idle-bench"). Returns null
    // after printing why when there is no cgroup2 or no right to create one.
    static std::unique_ptr<BenchSupervisor> create(const std::string& name);
    ~BenchSupervisor();

    boost::asio::io_context& io() { return io_; }
    WorkerContext& context() { return ctx_; }
    Supervisor& supervisor() { return supervisor_; }
    EventBus& events() { return bus_; }
    bool have_memory() const { return have_memory_; }
    // Stops every worker and runs the loop until they are down.
    void stop_all();

  private:
    BenchSupervisor(CgroupDir root, std::filesystem::path mount, bool have_memory, Paths paths);

    CgroupDir root_;
    bool have_memory_;
    Paths paths_;
    boost::asio::io_context io_;
    CgroupTree tree_;
    EventBus bus_;
    SteadyClock clock_{io_};
    WorkDirManager workdirs_;
    WorkerContext ctx_;
    Supervisor supervisor_;
};

}  // namespace infervisor::bench
