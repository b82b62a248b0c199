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
    keep({file_, at.line + 1, at.column + 1, std::move(message)});
}

void ConfigErrors::add_at(std::string file, int line, int column, std::string message) {
    keep({std::move(file), line, column, std::move(message)});
}

void ConfigErrors::add_unplaced(std::string message) { keep({file_, 0, 0, std::move(message)}); }

void ConfigErrors::keep(ConfigError error) {
    if (errors_.size() >= kMaxKept) {
        ++dropped_;
        return;
    }
    if (error.message.size() > kMaxMessageBytes) {
        error.message.resize(kMaxMessageBytes);
        error.message += "... (cut)";
    }
    if (error.file.size() > kMaxMessageBytes) error.file.resize(kMaxMessageBytes);
    errors_.push_back(std::move(error));
}

std::vector<std::string> ConfigErrors::lines() const {
    std::vector<std::string> out;
    out.reserve(errors_.size() + 1);
    for (const auto& e : errors_) out.push_back(e.format());
    if (dropped_)
        out.push_back("... and " + std::to_string(dropped_) +
                      " more error(s) not shown (only the first " + std::to_string(kMaxKept) +
                      " are reported)");
    return out;
}

std::string ConfigErrors::format() const {
    std::string out;
    for (const auto& line : lines()) out += line + "\n";
    return out;
}

}  // namespace infervisor
