// The terminal drawing of `infervisorctl history NAME`: the history's JSON
// (history_json.h, as --json prints it) as lines of text.
//
//   memory  a column chart, one column per time slice (the slice's highest
//           sample), scaled to memory.max (or the highest sample), with
//           memory.max drawn as ━ and memory.high as ╌ across it
//   psi     memory pressure some avg10, 0-100 %, as ▁▂▃▄▅▆▇█
//   swap    swap in use, scaled to the highest, same blocks
//   actions the first letter of each policy action (K kill, T throttle,
//           F freeze, C checkpoint, L log; lower case for a dry run) in the
//           slice it happened
// followed by a time axis and one line per action. Plain UTF-8, no colour.
// The CSV form has one row per sample, the columns of HistorySample.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace infervisor::cli {

struct ChartSize {
    int width = 72;  // columns of the chart itself (the labels add 9)
    int height = 10;
};

std::vector<std::string> draw_history(const std::string& worker, const nlohmann::json& reply,
                                      ChartSize size);
std::string history_csv(const nlohmann::json& reply);

}  // namespace infervisor::cli
