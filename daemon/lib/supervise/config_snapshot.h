// ConfigSnapshots: copies of the configuration files that running workers'
// specs came from, under <runtime_dir>/state/.config/ID/, so that a daemon
// that starts while workers of an earlier one still run can tell whether a
// worker's spec changed while no daemon watched. The copy is parsed and
// validated by the same loader, and the specs compared with the same
// equality a reload uses: no second description of a spec to keep in step.
//
// Contract: the ID is a hash (FNV-1a, 64 bit, hex) of the files' names and
// contents, so the same configuration gets the same snapshot and is written
// once; a snapshot appears whole (written in a temporary dir, then renamed)
// or not at all. Worker state files (persisted_worker.h) name the ID of the
// configuration their run was started or last confirmed under; prune()
// removes the snapshots no one names. Root's own files, but a missing,
// unreadable or invalid snapshot is only "spec unknown" to the caller.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/result.h"
#include "config/daemon_config.h"

namespace infervisor {

class ConfigSnapshots {
  public:
    explicit ConfigSnapshots(std::filesystem::path dir) : dir_(std::move(dir)) {}

    // Copies `files` (the main file first, as Config::files lists them) and
    // returns the snapshot's ID. No files (a Config built in code): "".
    Result<std::string> save(const std::vector<std::filesystem::path>& files);
    // The configuration of snapshot `id`, loaded as the daemon loads its own
    // (cached). An error when it is missing or no longer valid.
    Result<const Config*> load(const std::string& id);
    // Removes every snapshot whose ID is not in `keep`.
    void prune(const std::set<std::string>& keep);

  private:
    std::filesystem::path dir_;
    std::map<std::string, std::shared_ptr<Config>> loaded_;
};

}  // namespace infervisor
