#include "yaml/config_errors.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <tuple>

namespace infervisor {

namespace {

// Cuts what may quote the file to kMaxMessageBytes.
void bound(ConfigError& error) {
    if (error.file.size() > ConfigErrors::kMaxMessageBytes)
        error.file.resize(ConfigErrors::kMaxMessageBytes);
    if (error.message.size() > ConfigErrors::kMaxMessageBytes) {
        error.message.resize(ConfigErrors::kMaxMessageBytes);
        error.message += "... (cut)";
    }
}

}  // namespace

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

void ConfigErrors::set_file(std::string file) {
    rank_of(file);
    file_ = std::move(file);
}

std::size_t ConfigErrors::rank_of(const std::string& file) {
    auto known = std::find(files_.begin(), files_.end(), file);
    if (known != files_.end()) return static_cast<std::size_t>(known - files_.begin());
    files_.push_back(file);
    return files_.size() - 1;
}

void ConfigErrors::keep(ConfigError error) {
    bound(error);
    bool full = errors_.size() >= kMaxKept;
    bool file_known = std::find(files_.begin(), files_.end(), error.file) != files_.end();
    // Full: one of a file not named yet would come after every kept error
    // (and ranking its file would cost memory): only counted.
    if (full && !file_known) {
        ++dropped_;
        return;
    }
    auto place = [this](const ConfigError& e) {
        return std::tuple(rank_of(e.file), e.line, e.column);
    };
    auto at = place(error);
    if (full && !(at < place(errors_.back()))) {
        ++dropped_;
        return;
    }
    auto after =
        std::upper_bound(errors_.begin(), errors_.end(), at,
                         [&](const auto& p, const ConfigError& e) { return p < place(e); });
    errors_.insert(after, std::move(error));
    if (errors_.size() > kMaxKept) {
        errors_.pop_back();
        ++dropped_;
    }
}

void ConfigErrors::warn_at(std::string file, int line, int column, std::string message) {
    if (warnings_.size() >= kMaxKept) return;
    ConfigError warning{std::move(file), line, column, std::move(message)};
    bound(warning);
    warnings_.push_back(std::move(warning));
}

std::vector<std::string> ConfigErrors::warning_lines() const {
    std::vector<std::string> out;
    out.reserve(warnings_.size());
    for (const auto& w : warnings_) out.push_back(w.format());
    return out;
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
