// The scan of a worker's open and mapped files under /tmp and /var/tmp: the
// parsers on their own, then scan_open_tmp_files() on a fake /proc tree (fd
// links and ns/mnt are plain symlinks there, maps a plain file) for the
// filtering, the caps and vanished pids, and once on the real /proc with a
// child that holds a file open and another mapped.
#include "workdir/open_tmp_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "support/temp_dir.h"

namespace infervisor {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

constexpr char kOurNs[] = "mnt:[4026531841]";

TEST(SharedTmpPath, KeepsFilesStrictlyBelowTmpAndVarTmp) {
    EXPECT_EQ(shared_tmp_path("/tmp/model.bin"), "/tmp/model.bin");
    EXPECT_EQ(shared_tmp_path("/var/tmp/cache/w.gguf"), "/var/tmp/cache/w.gguf");
    EXPECT_EQ(shared_tmp_path("/tmp/with space\nand newline"), "/tmp/with space\nand newline");
    for (const char* no :
         {"/tmp", "/tmp/", "/var/tmp", "/var/tmp/", "/tmpfoo/x", "/var/tmpx/y", "/home/u/tmp/x",
          "tmp/x", "socket:[1234]", "pipe:[99]", "anon_inode:[eventfd]", "/dev/null",
          "/tmp/gone.bin (deleted)", "/tmp/../etc/shadow", "/tmp/./x", "/tmp//x", "/tmp/dir/", ""})
        EXPECT_EQ(shared_tmp_path(no), std::nullopt) << no;
}

TEST(MapsLinePath, TakesThePathAfterFiveFieldsAndDecodesNewlines) {
    EXPECT_EQ(maps_line_path("7f1c2a000000-7f1c2b000000 r--s 00000000 08:01 1234567"
                             "                    /tmp/model.bin"),
              "/tmp/model.bin");
    EXPECT_EQ(maps_line_path("00400000-00452000 r-xp 00000000 08:02 173521      "
                             "/tmp/a b  c (deleted)"),
              "/tmp/a b  c (deleted)");
    EXPECT_EQ(maps_line_path("00400000-00452000 r-xp 00000000 08:02 1 /tmp/new\\012line"),
              "/tmp/new\nline");
    EXPECT_EQ(maps_line_path("7ffd5d1e1000-7ffd5d202000 rw-p 00000000 00:00 0    [stack]"),
              std::nullopt);
    EXPECT_EQ(maps_line_path("7f1c2a000000-7f1c2b000000 rw-p 00000000 00:00 0"), std::nullopt);
    EXPECT_EQ(maps_line_path("garbage"), std::nullopt);
    EXPECT_EQ(maps_line_path(""), std::nullopt);
}

// A fake /proc: PID/ns/mnt, PID/fd/N links, PID/maps.
struct FakeProc {
    TempDir root;

    void process(pid_t pid, const std::string& ns = kOurNs) const {
        fs::create_directories(dir(pid) / "fd");
        fs::create_directories(dir(pid) / "ns");
        fs::create_symlink(ns, dir(pid) / "ns/mnt");
    }
    void fd(pid_t pid, int n, const std::string& target) const {
        fs::create_symlink(target, dir(pid) / "fd" / std::to_string(n));
    }
    void maps(pid_t pid, const std::vector<std::string>& paths) const {
        std::ofstream out(dir(pid) / "maps");
        unsigned long start = 0x7f0000000000;
        for (const auto& path : paths) {
            out << std::hex << start << '-' << start + 0x1000 << std::dec
                << " r--s 00000000 08:01 42                         " << path << '\n';
            start += 0x1000;
        }
    }
    fs::path dir(pid_t pid) const { return root.path() / std::to_string(pid); }
};

TEST(ScanOpenTmpFiles, FindsOpenAndMappedFilesUnderTheSharedTmpOnly) {
    FakeProc proc;
    proc.process(100);
    proc.fd(100, 0, "/dev/null");
    proc.fd(100, 1, "pipe:[4242]");
    proc.fd(100, 3, "/tmp/model.bin");
    proc.fd(100, 4, "/tmp/old.bin (deleted)");
    proc.fd(100, 5, "socket:[77]");
    proc.fd(100, 6, "/var/tmp/kv/cache.0");
    proc.fd(100, 7, "/tmp");
    proc.maps(100, {"/usr/lib/x86_64-linux-gnu/libc.so.6", "/tmp/weights.gguf", "/tmp/weights.gguf",
                    "/tmp/odd\\012name", "[heap]", "/memfd:x (deleted)"});
    proc.process(101);
    proc.fd(101, 3, "/tmp/model.bin");  // also held by another process: one entry
    proc.fd(101, 4, "/tmp/second.bin");

    auto scan = scan_open_tmp_files(proc.root.path(), {100, 101}, kOurNs);
    ASSERT_EQ(scan.files.size(), 5u);
    EXPECT_EQ(scan.files.at("/tmp/model.bin").pid, 100);
    EXPECT_FALSE(scan.files.at("/tmp/model.bin").mapped);
    EXPECT_EQ(scan.files.at("/var/tmp/kv/cache.0").pid, 100);
    EXPECT_TRUE(scan.files.at("/tmp/weights.gguf").mapped);
    EXPECT_TRUE(scan.files.at("/tmp/odd\nname").mapped);
    EXPECT_EQ(scan.files.at("/tmp/second.bin").pid, 101);
    EXPECT_EQ(scan.pids, 2u);
    EXPECT_EQ(scan.pids_elsewhere, 0u);
    EXPECT_EQ(scan.fds, 9u);
    EXPECT_FALSE(scan.truncated);
}

TEST(ScanOpenTmpFiles, SkipsProcessesInAnotherMountNamespaceAndVanishedPids) {
    FakeProc proc;
    proc.process(200, "mnt:[4026532999]");  // e.g. a private /tmp: its paths are not ours
    proc.fd(200, 3, "/tmp/model.bin");
    proc.process(201);
    proc.fd(201, 3, "/tmp/mine.bin");
    // 202 exited before the scan reached it: no directory.
    auto scan = scan_open_tmp_files(proc.root.path(), {200, 202, 201}, kOurNs);
    ASSERT_EQ(scan.files.size(), 1u);
    EXPECT_TRUE(scan.files.count("/tmp/mine.bin"));
    EXPECT_EQ(scan.pids_elsewhere, 2u);
    // Without our own namespace known, nothing is trusted.
    EXPECT_TRUE(scan_open_tmp_files(proc.root.path(), {201}, "").files.empty());
}

TEST(ScanOpenTmpFiles, EveryCapBoundsTheScan) {
    FakeProc proc;
    for (pid_t pid = 300; pid < 310; ++pid) {
        proc.process(pid);
        for (int n = 0; n < 20; ++n)
            proc.fd(pid, n, "/tmp/f-" + std::to_string(pid) + "-" + std::to_string(n));
    }
    std::vector<pid_t> pids;
    for (pid_t pid = 300; pid < 310; ++pid) pids.push_back(pid);

    auto by_pids =
        scan_open_tmp_files(proc.root.path(), pids, kOurNs, {.max_pids = 3, .max_paths = 1000});
    EXPECT_EQ(by_pids.pids, 3u);
    EXPECT_EQ(by_pids.files.size(), 60u);
    EXPECT_TRUE(by_pids.truncated);

    auto by_fds =
        scan_open_tmp_files(proc.root.path(), pids, kOurNs, {.max_fds = 25, .max_paths = 1000});
    EXPECT_EQ(by_fds.fds, 25u);
    EXPECT_EQ(by_fds.files.size(), 25u);
    EXPECT_TRUE(by_fds.truncated);

    auto by_paths = scan_open_tmp_files(proc.root.path(), pids, kOurNs, {.max_paths = 7});
    EXPECT_EQ(by_paths.files.size(), 7u);
    EXPECT_TRUE(by_paths.truncated);
    EXPECT_LE(by_paths.fds, 8u);  // it stops reading once nothing more can be kept

    auto all = scan_open_tmp_files(proc.root.path(), pids, kOurNs, {.max_paths = 1000});
    EXPECT_EQ(all.files.size(), 200u);
    EXPECT_FALSE(all.truncated);
}

TEST(ScanOpenTmpFiles, MapsAreReadUpToTheByteCapAndAPartialLineIsDropped) {
    FakeProc proc;
    proc.process(400);
    std::vector<std::string> paths;
    for (int i = 1000; i < 2000; ++i) paths.push_back("/tmp/shard-" + std::to_string(i));
    proc.maps(400, paths);
    auto line_size = fs::file_size(proc.dir(400) / "maps") / paths.size();

    auto scan =
        scan_open_tmp_files(proc.root.path(), {400}, kOurNs,
                            {.max_maps_bytes = line_size * 10 + line_size / 2, .max_paths = 1000});
    EXPECT_EQ(scan.files.size(), 10u);
    EXPECT_TRUE(scan.truncated);
    EXPECT_LE(scan.maps_bytes, line_size * 11);
    for (const auto& [path, file] : scan.files) EXPECT_EQ(path.rfind("/tmp/shard-", 0), 0u);
}

// The real /proc: a child holds one file open and has another mapped, both
// under a directory the test makes below /tmp; the scan of its pid finds both.
TEST(ScanOpenTmpFiles, FindsWhatARealProcessHoldsOpenAndMapped) {
    char tmpl[] = "/tmp/infervisor-open-tmp-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    fs::path dir = tmpl;
    std::string held = (dir / "held.bin").string(), mapped = (dir / "mapped.bin").string();
    for (const auto& path : {held, mapped}) std::ofstream(path) << std::string(8192, 'w');
    int ready[2], release[2];
    ASSERT_EQ(::pipe(ready), 0);
    ASSERT_EQ(::pipe(release), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        int fd = ::open(held.c_str(), O_RDONLY);
        int mfd = ::open(mapped.c_str(), O_RDONLY);
        void* map = ::mmap(nullptr, 8192, PROT_READ, MAP_SHARED, mfd, 0);
        ::close(mfd);  // only the mapping keeps it
        char c = (fd >= 0 && map != MAP_FAILED) ? 'y' : 'n';
        (void)!::write(ready[1], &c, 1);
        (void)!::read(release[0], &c, 1);
        ::_exit(0);
    }
    char c = 0;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);
    ASSERT_EQ(c, 'y');

    auto ns = own_mount_namespace("/proc");
    ASSERT_FALSE(ns.empty());
    auto scan = scan_open_tmp_files("/proc", {child}, ns);
    (void)!::write(release[1], "x", 1);
    ::waitpid(child, nullptr, 0);
    fs::remove_all(dir);

    ASSERT_TRUE(scan.files.count(held)) << "scanned " << scan.fds << " fds";
    EXPECT_FALSE(scan.files.at(held).mapped);
    ASSERT_TRUE(scan.files.count(mapped)) << "read " << scan.maps_bytes << " maps bytes";
    EXPECT_TRUE(scan.files.at(mapped).mapped);
    EXPECT_EQ(scan.files.at(mapped).pid, child);
}

}  // namespace
}  // namespace infervisor
