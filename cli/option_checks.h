// Options whose errors say what is wanted: "--lines: expected a whole number
// from 0 to 10000, not 'abc'" (CLI11's own checks print "Value abc not in
// range", or a range of 300 digits for a bound of "any").
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace infervisor::cli {

// An integer option within [min, max].
CLI::Option* add_count_option(CLI::App* command, const std::string& names, int& out,
                              const std::string& help, int min, int max);

}  // namespace infervisor::cli
