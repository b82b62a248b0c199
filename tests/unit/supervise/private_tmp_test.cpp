// Private /tmp on real processes: a worker that writes under the hard-coded
// paths /tmp and /var/tmp writes into its own work dir's tmp, which the
// daemon protects, and nothing lands in the host's /tmp; with
// private_tmp: false it shares the host's.
#include <gmock/gmock.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "supervisor_fixture.h"

namespace infervisor::testing {
namespace {

namespace fs = std::filesystem;
using K = EventKind;

class PrivateTmp : public SupervisorFixture {
  protected:
    void TearDown() override {
        SupervisorFixture::TearDown();
        std::error_code ec;
        if (!outside_tmp_.empty()) fs::remove_all(outside_tmp_, ec);
    }
    // A work dir outside /tmp (the fixture's dirs are under it, and a work
    // dir under /tmp means sharing the host's /tmp): below the build dir.
    fs::path workdir_outside_tmp(const std::string& name) {
        const char* build = std::getenv("INFERVISOR_BUILD_ROOT");
        if (!build) return {};
        outside_tmp_ = fs::path(build) / ("private-tmp-test-" + std::to_string(::getpid()));
        return outside_tmp_ / name;
    }
    // A worker that writes NAME under /tmp and /var/tmp, then idles.
    WorkerSpec writer(const std::string& name, const std::string& file) {
        WorkerSpec spec = example(name, {});
        spec.workdir.workdir = workdir_outside_tmp(name);
        spec.command = {"/bin/sh", "-c",
                        "echo model > /tmp/" + file + " && (echo cache > /var/tmp/" + file +
                            " || true) && exec sleep 1000"};
        return spec;
    }
    std::string unique(const std::string& stem) const {
        return stem + "-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name();
    }
    fs::path outside_tmp_;
};

TEST_F(PrivateTmp, HardCodedTmpPathsLandInTheWorkDir) {
    const std::string file = unique("infervisor-private-tmp");
    supervisor_->apply(config({writer("cache", file)}));
    run_until_event("cache", K::started);
    fs::path inside = outside_tmp_ / "cache/tmp" / file;
    // /var/tmp is the same private dir: its write, the second, replaces the first.
    auto content = [&] {
        std::ifstream in(inside);
        std::string word;
        in >> word;
        return word;
    };
    run_until([&] { return content() == "cache"; });
    EXPECT_FALSE(fs::exists(fs::path("/tmp") / file));
    EXPECT_FALSE(fs::exists(fs::path("/var/tmp") / file));
    EXPECT_EQ(supervisor_->find("cache")->state(), WorkerState::running);
}

TEST_F(PrivateTmp, FalseSharesTheHostsTmp) {
    const std::string file = unique("infervisor-shared-tmp");
    auto spec = writer("shared", file);
    spec.private_tmp = false;
    supervisor_->apply(config({spec}));
    run_until_event("shared", K::started);
    fs::path outside = fs::path("/tmp") / file;
    run_until([&] { return fs::exists(outside); });
    EXPECT_FALSE(fs::exists(outside_tmp_ / "shared/tmp" / file));
    fs::remove(outside);
    fs::remove(fs::path("/var/tmp") / file);
}

TEST_F(PrivateTmp, AWorkDirUnderTmpMeansSharingTheHostsTmp) {
    // The fixture's work dirs are under /tmp: a private /tmp would hide them.
    const std::string file = unique("infervisor-workdir-in-tmp");
    auto spec = writer("intmp", file);
    spec.workdir.workdir = ctx_->paths.state_dir / "intmp";
    supervisor_->apply(config({spec}));
    run_until_event("intmp", K::started);
    fs::path outside = fs::path("/tmp") / file;
    run_until([&] { return fs::exists(outside); });
    fs::remove(outside);
    fs::remove(fs::path("/var/tmp") / file);
}

}  // namespace
}  // namespace infervisor::testing
