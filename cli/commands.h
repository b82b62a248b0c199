// Each infervisorctl command registers itself on the CLI11 app; its callback
// runs the command and leaves the exit code in the context.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli_context.h"
#include "option_checks.h"
#include "view/gpu_card_view.h"

namespace infervisor::cli {

void add_status_commands(CLI::App& app, CliContext& ctx);  // status, show
// start, stop, restart, checkpoint, suspend, resume, kill
void add_action_commands(CLI::App& app, CliContext& ctx);
void add_reload_command(CLI::App& app, CliContext& ctx);
void add_remove_workdir_command(CLI::App& app, CliContext& ctx);
void add_checkpoints_command(CLI::App& app, CliContext& ctx);
void add_events_command(CLI::App& app, CliContext& ctx);
void add_logs_command(CLI::App& app, CliContext& ctx);
void add_config_command(CLI::App& app, CliContext& ctx);
void add_top_command(CLI::App& app, CliContext& ctx);
void add_history_command(CLI::App& app, CliContext& ctx);  // history, history --export
void add_simulate_command(CLI::App& app, CliContext& ctx);

// simulate's report (text, or JSON when `as_json`): the recording (the
// daemon's, or the file `from`) replayed with the configuration at `config`
// (empty: the default file) from `since` on (empty: all of it), showing
// `workers` (empty: all). Empty with the failure recorded in `ctx`.
std::optional<std::string> simulation_report(CliContext& ctx, const std::string& config,
                                             const std::string& from, const std::string& since,
                                             const std::vector<std::string>& workers, bool as_json);
void add_drain_commands(CLI::App& app, CliContext& ctx);  // drain, undrain

// The host's GPUs (ListGpus); none from a daemon that reads none, or one
// too old to know the method. An error on a transport failure.
Result<std::vector<GpuCardView>> host_gpus(VarlinkClient& client);

}  // namespace infervisor::cli
