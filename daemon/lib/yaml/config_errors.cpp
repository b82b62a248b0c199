#include "yaml/config_errors.h"

#include <yaml-cpp/yaml.h>

namespace infervisor {

std::string ConfigError::format() const {
    if (line <= 0) return file + ": " + message;
    return file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message;
}

void ConfigErrors::add(const YAML::Mark& at, std::string message) {
    // yaml-cpp marks are 0-based, and -1 for nodes it made up itself.
    if (at.line < 0) return add_unplaced(std::move(message));
    errors_.push_back({file_, at.line + 1, at.column + 1, std::move(message)});
}

void ConfigErrors::add_at(std::string file, int line, int column, std::string message) {
    errors_.push_back({std::move(file), line, column, std::move(message)});
}

void ConfigErrors::add_unplaced(std::string message) {
    errors_.push_back({file_, 0, 0, std::move(message)});
}

std::string ConfigErrors::format() const {
    std::string out;
    for (const auto& e : errors_) out += e.format() + "\n";
    return out;
}

}  // namespace infervisor
