#include "config/daemon_config.h"

namespace infervisor {

std::string SourceLocation::format() const {
    return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

const SourceLocation& WorkerSource::of(const std::string& key) const {
    auto it = keys.find(key);
    return it == keys.end() ? item : it->second;
}

Duration effective_growth_window(const DaemonSettings& settings) {
    if (settings.growth_window > Duration::zero()) return settings.growth_window;
    return 15 * settings.sample_interval;
}

const WorkerSpec* Config::find(const std::string& name) const {
    for (const auto& w : workers)
        if (w.name == name) return &w;
    return nullptr;
}

}  // namespace infervisor
