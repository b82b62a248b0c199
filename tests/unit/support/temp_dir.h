// TempDir: a private mkdtemp directory for one test, removed afterwards.
// Fake kernel trees (cgroupfs, procfs) are built inside it in code.
#pragma once

#include <filesystem>
#include <string_view>

namespace infervisor::testing {

class TempDir {
  public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::filesystem::path& path() const { return path_; }

    // Creates parent directories as needed and writes `content` to path()/rel.
    std::filesystem::path write(const std::filesystem::path& rel, std::string_view content) const;
    std::filesystem::path mkdir(const std::filesystem::path& rel) const;

  private:
    std::filesystem::path path_;
};

// Whole-file read for assertions.
std::string slurp(const std::filesystem::path& path);

}  // namespace infervisor::testing
