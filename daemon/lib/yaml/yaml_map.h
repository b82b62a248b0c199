// YamlMap: strict, typed reading of one YAML mapping.
//
// Contract: every key must be claimed through one of the getters; finish()
// reports each unclaimed key as "unknown key" (with a did-you-mean hint when a
// claimed key is close), and duplicate keys are reported where they stand.
// Getters never throw: a wrong type is recorded in ConfigErrors and the
// target is left at its default. Use it as:
//
//   YamlMap map(node, errors, "worker");
//   map.get_string("name", spec.name, Required::yes);
//   map.get_size("memory_max", spec.memory_max);
//   map.finish();
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/units.h"
#include "yaml/config_errors.h"

namespace infervisor {

enum class Required { no, yes };

class YamlMap {
  public:
    // `what` names the mapping in messages, e.g. "worker 'llama'".
    YamlMap(const YAML::Node& node, ConfigErrors& errors, std::string what);

    bool valid() const { return valid_; }
    const YAML::Node& node() const { return node_; }

    // Claims `key` and returns its node when present.
    std::optional<YAML::Node> take(const std::string& key, Required required = Required::no);

    // Typed getters: return true when the key was present and well-formed.
    bool get_string(const std::string& key, std::string& out, Required r = Required::no);
    bool get_bool(const std::string& key, bool& out, Required r = Required::no);
    bool get_int(const std::string& key, int64_t& out, int64_t min, int64_t max,
                 Required r = Required::no);
    bool get_size(const std::string& key, ByteLimit& out, Required r = Required::no);
    bool get_duration(const std::string& key, Duration& out, Required r = Required::no);
    bool get_string_list(const std::string& key, std::vector<std::string>& out,
                         Required r = Required::no);
    bool get_string_map(const std::string& key, std::map<std::string, std::string>& out,
                        Required r = Required::no);

    // Reports unclaimed keys. Call once, after all getters.
    void finish();

    // Scalar helpers usable on nodes outside a mapping (list items).
    static std::optional<std::string> scalar(const YAML::Node& node, ConfigErrors& errors,
                                             const std::string& what);

  private:
    YAML::Node node_;
    ConfigErrors& errors_;
    std::string what_;
    bool valid_ = false;
    std::map<std::string, YAML::Node> entries_;
    std::map<std::string, YAML::Mark> key_marks_;
    std::set<std::string> claimed_;
};

}  // namespace infervisor
