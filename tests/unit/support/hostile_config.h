// Configuration texts built to hit the slow paths of parsing and validation
// (issue 10, defect 1): what a hostile local user could send to `Validate`
// (`infervisorctl config check`). Shared by the config tests, the config
// check benchmark and the VM scenario's generator.
#pragma once

#include <cstddef>
#include <string>

namespace infervisor::testing {

// One worker with `n` distinct extra dirs (/s/dN, a flow list: 50,000 fit
// in 1 MiB).
std::string config_with_extra_dirs(std::size_t n);
// One worker naming the same extra dir `n` times.
std::string config_with_repeated_extra_dir(std::size_t n);
// One worker with `n` supplementary groups that do not exist.
std::string config_with_unknown_groups(std::size_t n);
// `n` small valid workers.
std::string config_with_workers(std::size_t n);
// `n` workers that all share one work dir (one error per pair before the fix).
std::string config_with_shared_workdir(std::size_t n);
// One worker whose environment has `n` variables (a flow mapping).
std::string config_with_environment(std::size_t n);
// One worker with one unknown key of `n` characters (did-you-mean hint cost).
std::string config_with_long_unknown_key(std::size_t n);

}  // namespace infervisor::testing
