// SharedTmpGuard on real processes: workers that share the host's /tmp
// (private_tmp: false) hold one file there open and another mapped; a scan
// finds both, protects them (x lines in the generated tmpfiles.d file) with
// one tmp-file-protected event each, and the end of the run releases them.
// A worker with its private /tmp holding the same kind of path is not
// scanned into it (its /tmp is its work dir's). The real systemd-tmpfiles
// reading such a file: tmpfiles_clean_test.cpp; the whole in a VM: 134.
#include "services/shared_tmp_guard.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "supervise/supervisor_fixture.h"
#include "workdir/tmp_file_protection.h"

namespace infervisor::testing {
namespace {

namespace fs = std::filesystem;
using K = EventKind;

class SharedTmpGuardTest : public SupervisorFixture {
  protected:
    void SetUp() override {
        SupervisorFixture::SetUp();
        if (IsSkipped()) return;
        guard_ = std::make_unique<SharedTmpGuard>(*ctx_, *supervisor_);
    }
    void TearDown() override {
        guard_.reset();
        SupervisorFixture::TearDown();
        std::error_code ec;
        for (const auto& path : created_) fs::remove(path, ec);
        if (!outside_tmp_.empty()) fs::remove_all(outside_tmp_, ec);
    }

    // A file name of this test under the host's /tmp.
    std::string host_tmp(const std::string& stem) {
        std::string path = "/tmp/infervisor-guard-" + std::to_string(::getpid()) + "-" + stem;
        created_.push_back(path);
        return path;
    }
    WorkerSpec holder(const std::string& name, const std::string& path, const std::string& how,
                      bool private_tmp) {
        WorkerSpec spec = example(
            name, {"--tmp-file", path, "--hold-tmp-file", how, "--serve-interval-ms", "200"});
        spec.private_tmp = private_tmp;
        if (private_tmp) {
            // The fixture's dirs are under /tmp, which would mean sharing it.
            const char* build = std::getenv("INFERVISOR_BUILD_ROOT");
            outside_tmp_ = fs::path(build ? build : ".") /
                           ("shared-tmp-guard-test-" + std::to_string(::getpid()));
            spec.workdir.workdir = outside_tmp_ / name;
        }
        return spec;
    }
    void scan() {
        bool done = false;
        guard_->scan_now([&] { done = true; });
        run_until([&] { return done; });
    }
    std::string exclusions() const {
        std::ifstream in(ctx_->paths.tmpfiles_dir / kOpenFilesExclusionFile);
        std::stringstream s;
        s << in.rdbuf();
        return s.str();
    }
    const std::set<std::string> none_;
    const std::set<std::string>& protected_of(const std::string& worker) const {
        auto* paths = guard_->protection().paths_of(worker);
        return paths ? *paths : none_;
    }

    // Whether the worker's process has a file whose path ends with `path`
    // open or mapped (its /proc fd links and maps).
    bool holds(const std::string& worker, const std::string& path) const {
        const Worker* w = supervisor_->find(worker);
        if (!w || w->main_pid() <= 0) return false;
        fs::path proc = "/proc/" + std::to_string(w->main_pid());
        std::error_code ec;
        for (const auto& fd : fs::directory_iterator(proc / "fd", ec)) {
            auto target = fs::read_symlink(fd.path(), ec).string();
            if (!ec && target.ends_with(path)) return true;
        }
        std::ifstream maps(proc / "maps");
        for (std::string line; std::getline(maps, line);)
            if (line.ends_with(path)) return true;
        return false;
    }

    std::unique_ptr<SharedTmpGuard> guard_;
    std::vector<std::string> created_;
    fs::path outside_tmp_;
};

TEST_F(SharedTmpGuardTest, ProtectsWhatASharingWorkerHoldsOpenOrMappedUntilItsRunEnds) {
    std::string open_path = host_tmp("open.bin"), mapped_path = host_tmp("mapped.bin"),
                private_path = host_tmp("private.bin");
    supervisor_->apply(config({holder("opener", open_path, "open", false),
                               holder("mapper", mapped_path, "map", false),
                               holder("private", private_path, "open", true)}));
    run_until_event("opener", K::ready);
    run_until_event("mapper", K::ready);
    run_until_event("private", K::ready);
    // These workers do not signal readiness: `ready` comes at their start,
    // maybe before they opened or mapped their file. The scan is what is
    // tested, not that race.
    run_until([&] {
        return holds("opener", open_path) && holds("mapper", mapped_path) &&
               holds("private", private_path.substr(std::string("/tmp/").size()));
    });
    scan();

    EXPECT_EQ(protected_of("opener"), std::set<std::string>{open_path});
    EXPECT_EQ(protected_of("mapper"), std::set<std::string>{mapped_path});
    EXPECT_TRUE(protected_of("private").empty());  // its /tmp is its work dir's tmp
    EXPECT_FALSE(fs::exists(private_path));

    const Event* opened = last("opener", K::tmp_file_protected);
    ASSERT_NE(opened, nullptr);
    EXPECT_EQ(field(*opened, "PATH"), open_path);
    EXPECT_EQ(field(*opened, "HOW"), "open");
    const Event* mapped = last("mapper", K::tmp_file_protected);
    ASSERT_NE(mapped, nullptr);
    EXPECT_EQ(field(*mapped, "PATH"), mapped_path);
    EXPECT_EQ(field(*mapped, "HOW"), "mapped");
    EXPECT_NE(mapped->message.find(mapped_path), std::string::npos) << mapped->message;
    std::string file = exclusions();
    EXPECT_NE(file.find("\nx " + open_path + "\n"), std::string::npos) << file;
    EXPECT_NE(file.find("\nx " + mapped_path + "\n"), std::string::npos) << file;

    // Found again: no second event.
    scan();
    EXPECT_EQ(count("opener", K::tmp_file_protected), 1u);

    // The opener's run ends: its line goes, the mapper's stays.
    bool stopped = false;
    supervisor_->find("opener")->stop([&] { stopped = true; });
    run_until([&] { return stopped; });
    EXPECT_TRUE(protected_of("opener").empty());
    file = exclusions();
    EXPECT_EQ(file.find(open_path), std::string::npos) << file;
    EXPECT_NE(file.find("\nx " + mapped_path + "\n"), std::string::npos) << file;
    // And a scan does not bring back a run that ended.
    scan();
    EXPECT_TRUE(protected_of("opener").empty());
}

}  // namespace
}  // namespace infervisor::testing
