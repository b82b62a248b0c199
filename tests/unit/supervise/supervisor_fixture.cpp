#include "supervisor_fixture.h"

#include <unistd.h>

#include <chrono>

#include "base/file_io.h"
#include "cgroup/cgroup_discovery.h"

namespace infervisor::testing {

namespace fs = std::filesystem;

void SupervisorFixture::SetUp() {
    if (!std::getenv("INFERVISOR_EXAMPLE_WORKER"))
        GTEST_SKIP() << "INFERVISOR_EXAMPLE_WORKER unset";
    auto own = discover_own_cgroup("/proc");
    if (!own) GTEST_SKIP() << "no cgroup2 on this host: " << own.error().message();
    static int counter = 0;
    cgroup_root_ =
        *own / ("infervisor-test-" + std::to_string(getpid()) + "-" + std::to_string(++counter));
    CgroupDir root(cgroup_root_);
    if (auto r = root.create(); !r)
        GTEST_SKIP() << "cannot create a cgroup (root needed): " << r.error().message();
    ASSERT_TRUE(root.child("workers").create().ok());

    auto mountinfo = read_file("/proc/self/mountinfo");
    auto mount = find_cgroup2_mount(*mountinfo);
    dir_ = std::make_unique<TempDir>();
    Paths paths;
    paths.runtime_dir = dir_->mkdir("run");
    paths.state_dir = dir_->mkdir("state");
    dir_->mkdir("run/notify");
    paths.tmpfiles_dir = dir_->mkdir("run/tmpfiles.d");
    workdirs_ = std::make_unique<WorkDirManager>(paths);
    tree_ = std::make_unique<CgroupTree>(cgroup_root_);
    bus_.subscribe([this](const Event& e) { events_.push_back(e); });
    ctx_ = std::make_unique<WorkerContext>(
        WorkerContext{io_, *tree_, *mount, paths, bus_, *workdirs_, clock_, false,
                      [this](const CgroupDir& dir,
                             const CgroupLimits& limits) -> Result<std::vector<std::string>> {
                          limits_written_[dir.name()] = limits;
                          return std::vector<std::string>{};
                      }});
    supervisor_ = std::make_unique<Supervisor>(*ctx_);
    unlisted_moves_at_start_ = unlisted_moves();
}

void SupervisorFixture::TearDown() {
    if (supervisor_) {
        bool stopped = false;
        supervisor_->stop_all([&] { stopped = true; });
        run_until([&] { return stopped; });
        supervisor_.reset();
    }
    // Every change of state in the test was a move of the lifecycle's table.
    EXPECT_EQ(unlisted_moves(), unlisted_moves_at_start_)
        << "a worker changed state by a move worker_state.h does not list (see the log)";
    if (!cgroup_root_.empty()) {
        CgroupDir root(cgroup_root_);
        for (const auto& child : root.child("workers").children()) {
            CgroupDir worker = root.child("workers").child(child);
            (void)worker.kill();  // its exec probes' cgroups too
            usleep(100000);
            for (const auto& probe : worker.children()) (void)worker.child(probe).remove();
            (void)worker.remove();
        }
        (void)root.child("workers").remove();
        (void)root.remove();
    }
}

WorkerSpec SupervisorFixture::example(const std::string& name,
                                      std::vector<std::string> args) const {
    WorkerSpec spec;
    spec.name = name;
    spec.command = {std::getenv("INFERVISOR_EXAMPLE_WORKER")};
    spec.command.insert(spec.command.end(), args.begin(), args.end());
    spec.user = "root";
    spec.memory.max = 256ull << 20;
    spec.restart.backoff_initial = std::chrono::milliseconds(20);
    spec.restart.backoff_max = std::chrono::milliseconds(80);
    spec.stop_timeout = std::chrono::seconds(30);
    return spec;
}

Config SupervisorFixture::config(std::vector<WorkerSpec> workers) const {
    Config c;
    c.workers = std::move(workers);
    return c;
}

int SupervisorFixture::hang_guard_seconds() {
    const char* env = std::getenv("INFERVISOR_TEST_HANG_GUARD");
    return env ? std::atoi(env) : 180;
}

void SupervisorFixture::run_until(const std::function<bool()>& done) {
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(hang_guard_seconds());
    while (!done()) {
        // A loop out of work stops; what a background thread posts later
        // (a GPU reading) must still be run.
        if (io_.stopped()) io_.restart();
        if (io_.run_one_for(std::chrono::milliseconds(50)) == 0 && fake_time_ &&
            fake_clock_.next_due() && *fake_clock_.next_due() <= fake_clock_.now() + kIdlePoll)
            fake_clock_.fire_next();
        if (std::chrono::steady_clock::now() > give_up) {
            std::string seen;
            for (const auto& e : events_)
                seen +=
                    "\n  " + e.worker + ": [" + std::string(event_name(e.kind)) + "] " + e.message;
            ADD_FAILURE() << "hang guard: condition not reached; events so far:" << seen;
            return;
        }
    }
}

void SupervisorFixture::advance(Duration d) {
    ASSERT_TRUE(fake_time_) << "advance() needs a fixture with fake time";
    fake_clock_.advance(d);
}

void SupervisorFixture::run_until_event(const std::string& worker, EventKind kind, size_t n) {
    run_until([&] { return count(worker, kind) >= n; });
}

size_t SupervisorFixture::count(const std::string& worker, EventKind kind) const {
    size_t n = 0;
    for (const auto& e : events_) n += (e.worker == worker && e.kind == kind);
    return n;
}

std::vector<EventKind> SupervisorFixture::kinds_of(const std::string& worker) const {
    std::vector<EventKind> out;
    for (const auto& e : events_)
        if (e.worker == worker) out.push_back(e.kind);
    return out;
}

const Event* SupervisorFixture::last(const std::string& worker, EventKind kind) const {
    for (auto it = events_.rbegin(); it != events_.rend(); ++it)
        if (it->worker == worker && it->kind == kind) return &*it;
    return nullptr;
}

std::string SupervisorFixture::field(const Event& e, const std::string& key) const {
    for (const auto& [k, v] : e.fields)
        if (k == key) return v;
    return "";
}

}  // namespace infervisor::testing
