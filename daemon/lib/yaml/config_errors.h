// ConfigErrors: collects every problem found in the configuration, each with
// the place it was found, so that one run of --check-config reports them all.
#pragma once

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
    // The file that later add() calls refer to.
    void set_file(std::string file) { file_ = std::move(file); }
    const std::string& file() const { return file_; }

    void add(const YAML::Mark& at, std::string message);
    void add_at(std::string file, int line, int column, std::string message);
    void add_unplaced(std::string message);

    bool empty() const { return errors_.empty(); }
    const std::vector<ConfigError>& all() const { return errors_; }
    // All errors, one per line.
    std::string format() const;

  private:
    std::string file_;
    std::vector<ConfigError> errors_;
};

}  // namespace infervisor
