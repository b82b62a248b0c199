#include "config/daemon_config.h"

namespace infervisor {

std::string SourceLocation::format() const {
    return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

const WorkerSpec* Config::find(const std::string& name) const {
    for (const auto& w : workers)
        if (w.name == name) return &w;
    return nullptr;
}

}  // namespace infervisor
