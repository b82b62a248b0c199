// ConfigErrors: collects the problems found in the configuration, each with
// the place it was found, so that one run of --check-config reports them all,
// in the order a reader meets them: file by file in the order the files are
// read (the main file, then the drop-ins), and by line and column within a
// file (an error without a line first), whichever check found it first.
// Up to a limit: the first kMaxKept in that order are kept, the rest only
// counted (format() ends with "... and N more error(s)"), and each message
// is cut at kMaxMessageBytes (it may quote text from the file). So a
// configuration built to produce millions of errors costs a bounded amount
// of memory, and the reply to `infervisorctl config check` stays small.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace YAML {
class Mark;
}

namespace infervisor {

struct ConfigError {
    std::string file;
    int line = 0;    // 1-based; 0 when the problem has no single place
    int column = 0;  // 1-based
    std::string message;

    // "file:line:column: message" (or "file: message" without a place).
    std::string format() const;
};

class ConfigErrors {
  public:
    static constexpr std::size_t kMaxKept = 100;
    static constexpr std::size_t kMaxMessageBytes = 1024;

    // The file that later add() calls refer to; files come in the order
    // they are read, which is the order their errors are listed in.
    void set_file(std::string file);
    const std::string& file() const { return file_; }

    void add(const YAML::Mark& at, std::string message);
    void add_at(std::string file, int line, int column, std::string message);
    void add_unplaced(std::string message);
    // Counts `n` errors found elsewhere (a check in a helper process) but
    // not kept.
    void add_dropped(std::size_t n) { dropped_ += n; }

    bool empty() const { return errors_.empty(); }
    // The errors kept (the first kMaxKept).
    const std::vector<ConfigError>& all() const { return errors_; }
    // All errors found, kept or not.
    std::size_t count() const { return errors_.size() + dropped_; }
    // Errors found beyond kMaxKept, counted only.
    std::size_t dropped() const { return dropped_; }
    // The kept errors in order, one per line, then "... and N more error(s)" if any
    // were dropped.
    std::string format() const;
    // The same as lines (no newlines), for replies.
    std::vector<std::string> lines() const;

    // Warnings: what is valid but will likely fail (a command that does not
    // exist yet may be installed before the worker starts). They do not make
    // the configuration invalid. In the order found, the first kMaxKept.
    void warn_at(std::string file, int line, int column, std::string message);
    const std::vector<ConfigError>& warnings() const { return warnings_; }
    // "file:line:column: message", one per warning kept (printers add
    // "warning: " in front, as for the daemon's other warnings).
    std::vector<std::string> warning_lines() const;

  private:
    void keep(ConfigError error);
    // The file's place in the reading order (files first named by an error
    // go after those named before).
    std::size_t rank_of(const std::string& file);

    std::string file_;
    std::vector<std::string> files_;   // in reading order; at most kMaxKept + the files read
    std::vector<ConfigError> errors_;  // sorted: file rank, line, column, then arrival
    std::vector<ConfigError> warnings_;
    std::size_t dropped_ = 0;
};

}  // namespace infervisor
