#include "bench_supervisor.h"

#include <unistd.h>

#include <cstdio>

#include "base/file_io.h"
#include "cgroup/cgroup_discovery.h"

namespace infervisor::bench {

namespace {

Result<std::vector<std::string>> record_only(const CgroupDir&, const CgroupLimits&) {
    return std::vector<std::string>{};
}

}  // namespace

std::unique_ptr<BenchSupervisor> BenchSupervisor::create(const std::string& name) {
    auto own = discover_own_cgroup("/proc");
    auto mount = find_cgroup2_mount(read_file("/proc/self/mountinfo").value_or(""));
    if (!own || !mount) {
        std::fprintf(stderr, "no cgroup2 here\n");
        return nullptr;
    }
    CgroupDir root(*own / ("infervisor-" + name + "-" + std::to_string(getpid())));
    if (auto r = root.create(); !r) {
        std::fprintf(stderr, "%s\n", r.error().message().c_str());
        return nullptr;
    }
    bool have_memory = CgroupDir(*own).controllers().value_or({}).count("memory") > 0;
    // Inner nodes may not hold processes once controllers are enabled.
    if (have_memory) (void)root.enable_controllers(CgroupTree::worker_controllers());
    (void)root.child("workers").create();
    if (have_memory)
        (void)root.child("workers").enable_controllers(CgroupTree::worker_controllers());

    std::string scratch = "/tmp/infervisor-" + name + ".XXXXXX";
    Paths paths;
    paths.runtime_dir = ::mkdtemp(scratch.data());
    paths.state_dir = paths.runtime_dir / "state";
    paths.tmpfiles_dir = paths.runtime_dir / "tmpfiles.d";
    std::filesystem::create_directories(paths.runtime_dir / "notify");
    std::filesystem::create_directories(paths.tmpfiles_dir);
    return std::unique_ptr<BenchSupervisor>(
        new BenchSupervisor(std::move(root), *mount, have_memory, std::move(paths)));
}

BenchSupervisor::BenchSupervisor(CgroupDir root, std::filesystem::path mount, bool have_memory,
                                 Paths paths)
    : root_(std::move(root)),
      have_memory_(have_memory),
      paths_(std::move(paths)),
      tree_(root_.path()),
      workdirs_(paths_),
      ctx_{io_,    tree_, std::move(mount),
           paths_, bus_,  workdirs_,
           clock_, false, have_memory ? WorkerContext::LimitsWriter(apply_limits) : record_only},
      supervisor_(ctx_) {}

void BenchSupervisor::stop_all() {
    bool done = false;
    supervisor_.stop_all([&] { done = true; });
    while (!done) io_.run_one();
}

BenchSupervisor::~BenchSupervisor() {
    (void)root_.child("workers").remove();
    (void)root_.remove();
    std::error_code ignored;
    std::filesystem::remove_all(paths_.runtime_dir, ignored);
}

}  // namespace infervisor::bench
