// CallParameters: strict, typed reading of a Varlink call's "parameters".
//
// Contract: getters record the first parameter that is missing (when
// required) or of the wrong type; finish() also flags any member no getter
// claimed. bad() names it, for org.varlink.service.InvalidParameter.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace infervisor {

class CallParameters {
  public:
    explicit CallParameters(const nlohmann::json& parameters) : params_(parameters) {}

    void string(const char* key, std::string& out, bool required);
    void optional_string(const char* key, std::optional<std::string>& out);
    // A non-empty array of strings.
    void string_list(const char* key, std::vector<std::string>& out);
    // An array of strings (maybe empty), or null/absent (empty).
    void optional_string_list(const char* key, std::vector<std::string>& out);
    // An array of objects that have exactly the members `fields`, each a
    // string (a record), or null/absent (empty).
    using StringRecord = std::map<std::string, std::string>;
    void optional_string_records(const char* key, const std::vector<std::string>& fields,
                                 std::vector<StringRecord>& out);
    // An integer in [min, max], or null/absent.
    void optional_integer(const char* key, std::optional<int64_t>& out, int64_t min, int64_t max);

    // A boolean, or null/absent (false).
    void optional_bool(const char* key, bool& out);

    // True when every parameter was valid and claimed.
    bool finish();
    const std::string& bad() const { return bad_; }

  private:
    const nlohmann::json* claim(const char* key);
    void reject(const char* key);

    const nlohmann::json& params_;
    std::set<std::string> claimed_;
    std::string bad_;
};

}  // namespace infervisor
