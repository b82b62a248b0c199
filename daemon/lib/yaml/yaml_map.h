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

#include <cstddef>
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

// Sizes above this (2^60 bytes, 1E) are no real limit: "max" says that.
inline constexpr uint64_t kMaxConfigSize = uint64_t{1} << 60;
// Durations above this are refused (no timer of the daemon needs more);
// a getter may pass a lower limit for its key.
inline constexpr Duration kMaxConfigDuration = std::chrono::hours(24 * 365);
// Lists and mappings read by the getters hold at most this many items
// unless the caller says otherwise.
inline constexpr std::size_t kMaxConfigItems = 1024;

// True when the sequence or mapping `node` has at most `max` items; else
// records "<what> has N items; at most MAX are allowed" at the node.
bool check_item_count(const YAML::Node& node, std::size_t max, ConfigErrors& errors,
                      const std::string& what);

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
    // A size of at most kMaxConfigSize, or "max".
    bool get_size(const std::string& key, ByteLimit& out, Required r = Required::no);
    // A duration of at most `max`.
    bool get_duration(const std::string& key, Duration& out, Required r = Required::no,
                      Duration max = kMaxConfigDuration);
    // At most `max_items` items; more is an error and `out` is left alone.
    bool get_string_list(const std::string& key, std::vector<std::string>& out,
                         Required r = Required::no, std::size_t max_items = kMaxConfigItems);
    bool get_string_map(const std::string& key, std::map<std::string, std::string>& out,
                        Required r = Required::no, std::size_t max_items = kMaxConfigItems);

    // Reports unclaimed keys. Call once, after all getters. The did-you-mean
    // hint is base/closest_match.h's (none for keys over 64 characters: its
    // cost grows with the key's length).
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
