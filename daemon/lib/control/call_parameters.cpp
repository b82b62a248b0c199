#include "control/call_parameters.h"

namespace infervisor {

const nlohmann::json* CallParameters::claim(const char* key) {
    claimed_.insert(key);
    auto it = params_.find(key);
    if (it == params_.end() || it->is_null()) return nullptr;
    return &*it;
}

void CallParameters::reject(const char* key) {
    if (bad_.empty()) bad_ = key;
}

void CallParameters::string(const char* key, std::string& out, bool required) {
    auto v = claim(key);
    if (!v) {
        if (required) reject(key);
    } else if (!v->is_string()) {
        reject(key);
    } else {
        out = v->get<std::string>();
    }
}

void CallParameters::optional_string(const char* key, std::optional<std::string>& out) {
    auto v = claim(key);
    if (!v) return;
    if (!v->is_string()) return reject(key);
    out = v->get<std::string>();
}

void CallParameters::string_list(const char* key, std::vector<std::string>& out) {
    auto v = claim(key);
    if (!v || !v->is_array() || v->empty()) return reject(key);
    out.clear();
    for (const auto& item : *v) {
        if (!item.is_string()) return reject(key);
        out.push_back(item.get<std::string>());
    }
}

void CallParameters::optional_string_list(const char* key, std::vector<std::string>& out) {
    auto v = claim(key);
    out.clear();
    if (!v) return;
    if (!v->is_array()) return reject(key);
    for (const auto& item : *v) {
        if (!item.is_string()) return reject(key);
        out.push_back(item.get<std::string>());
    }
}

void CallParameters::optional_string_records(const char* key,
                                             const std::vector<std::string>& fields,
                                             std::vector<StringRecord>& out) {
    auto v = claim(key);
    out.clear();
    if (!v) return;
    if (!v->is_array()) return reject(key);
    for (const auto& item : *v) {
        if (!item.is_object() || item.size() != fields.size()) return reject(key);
        StringRecord record;
        for (const auto& field : fields) {
            auto member = item.find(field);
            if (member == item.end() || !member->is_string()) return reject(key);
            record[field] = member->get<std::string>();
        }
        out.push_back(std::move(record));
    }
}

void CallParameters::optional_integer(const char* key, std::optional<int64_t>& out, int64_t min,
                                      int64_t max) {
    auto v = claim(key);
    if (!v) return;
    if (!v->is_number_integer()) return reject(key);
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(max))
        return reject(key);
    auto n = v->get<int64_t>();
    if (n < min || n > max) return reject(key);
    out = n;
}

void CallParameters::optional_bool(const char* key, bool& out) {
    auto v = claim(key);
    if (!v) return;
    if (!v->is_boolean()) return reject(key);
    out = v->get<bool>();
}

bool CallParameters::finish() {
    for (const auto& [key, value] : params_.items()) {
        if (!claimed_.count(key)) {
            if (bad_.empty()) bad_ = key;
            break;
        }
    }
    return bad_.empty();
}

}  // namespace infervisor
