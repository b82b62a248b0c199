#include "support/hostile_config.h"

namespace infervisor::testing {

namespace {

constexpr char kWorkerHead[] =
    "workers:\n"
    "  - name: w\n"
    "    command: [/bin/true]\n"
    "    memory: {max: 1G}\n";

}  // namespace

std::string config_with_extra_dirs(std::size_t n) {
    std::string out = kWorkerHead;
    out += "    extra_dirs: [";
    for (std::size_t i = 0; i < n; ++i)
        out += (i ? ", {path: /s/d" : "{path: /s/d") + std::to_string(i) + "}";
    return out + "]\n";
}

std::string config_with_repeated_extra_dir(std::size_t n) {
    std::string out = kWorkerHead;
    out += "    extra_dirs:\n";
    for (std::size_t i = 0; i < n; ++i) out += "      - path: /srv/models/x\n";
    return out;
}

std::string config_with_unknown_groups(std::size_t n) {
    std::string out = kWorkerHead;
    out += "    supplementary_groups:\n";
    for (std::size_t i = 0; i < n; ++i) out += "      - nosuchgroup" + std::to_string(i) + "\n";
    return out;
}

std::string config_with_workers(std::size_t n) {
    std::string out = "workers:\n";
    for (std::size_t i = 0; i < n; ++i)
        out += "  - {name: w" + std::to_string(i) + ", command: [/bin/true], memory: {max: 1G}}\n";
    return out;
}

std::string config_with_shared_workdir(std::size_t n) {
    std::string out = "workers:\n";
    for (std::size_t i = 0; i < n; ++i)
        out += "  - {name: w" + std::to_string(i) +
               ", command: [/bin/true], memory: {max: 1G}, workdir: /srv/shared}\n";
    return out;
}

std::string config_with_environment(std::size_t n) {
    std::string out = kWorkerHead;
    out += "    environment: {";
    for (std::size_t i = 0; i < n; ++i) out += (i ? ", V" : "V") + std::to_string(i) + ": x";
    return out + "}\n";
}

std::string config_with_long_unknown_key(std::size_t n) {
    std::string out = kWorkerHead;
    out += "    ? " + std::string(n, 'k') + "\n    : 1\n";  // explicit: no 1024-char limit
    return out;
}

}  // namespace infervisor::testing
