// TmpFileProtection: files under the host's /tmp and /var/tmp that running
// workers hold open or mapped (open_tmp_files.h), kept out of
// systemd-tmpfiles aging for as long as the worker's run lasts.
//
// How: one `x PATTERN` line per file in <tmpfiles_dir>/infervisor-open-files.conf
// (PATTERN from tmpfiles_exact_pattern(): the path itself, or a '?' glob for
// a name tmpfiles cannot take verbatim). tmpfiles skips an entry whose path
// has a line of its own while aging its parent, files as well as dirs; a
// file's dir is then not empty and survives too. (DirLock, the work dirs'
// other protection, is a lock on a directory and cannot cover a file.)
//
// Contract: a path once added stays protected until release(worker) (the
// run ended), even if the worker closes it meanwhile: a model read at start
// and re-read later must not go in between. Caps: at most `per_worker`
// paths for one worker and `total` for all, so that a hostile worker cannot
// grow the file (or the set) without bound; what is refused is counted.
// The file is written as tmpfiles_exclusions.h writes its own (whole,
// atomically; removed when empty) and only when the set changed.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/result.h"

namespace infervisor {

inline constexpr char kOpenFilesExclusionFile[] = "infervisor-open-files.conf";

// The file's content for `paths`: a comment header and one sorted x line per
// path. Empty when `paths` is.
std::string render_open_file_exclusions(const std::set<std::string>& paths);

class TmpFileProtection {
  public:
    static constexpr size_t kPerWorker = 128;
    static constexpr size_t kTotal = 1024;

    explicit TmpFileProtection(std::filesystem::path tmpfiles_dir, size_t per_worker = kPerWorker,
                               size_t total = kTotal)
        : dir_(std::move(tmpfiles_dir)), per_worker_(per_worker), total_(total) {}

    struct Added {
        std::vector<std::string> paths;  // newly protected, in order
        size_t refused = 0;              // new ones over a cap
    };
    // Protects those of `found` not yet protected for `worker`, within the caps.
    Added add(const std::string& worker, const std::vector<std::string>& found);
    // Ends the worker's protection; false if it had none.
    bool release(const std::string& worker);
    // Forgets every worker (the file is emptied by the next write()).
    void clear() { by_worker_.clear(); }

    // Writes the file if the protected set changed since the last write
    // (always the first time: it replaces what an earlier daemon left).
    Result<void> write();

    const std::set<std::string>* paths_of(const std::string& worker) const;
    std::set<std::string> all_paths() const;
    std::vector<std::string> workers() const;
    size_t total() const;

  private:
    std::filesystem::path dir_;
    size_t per_worker_, total_;
    std::map<std::string, std::set<std::string>> by_worker_;
    std::optional<std::set<std::string>> written_;
};

}  // namespace infervisor
