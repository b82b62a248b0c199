// RecordingSink: a ReplySink that keeps every reply, for the service tests
// and the fuzzer.
#pragma once

#include <string>
#include <vector>

#include "control/varlink_service.h"

namespace infervisor::testing {

class RecordingSink : public ReplySink {
  public:
    struct Entry {
        std::string error;  // empty for a reply
        nlohmann::json parameters;
        bool continues = false;
    };

    void reply(const nlohmann::json& parameters, bool continues) override {
        entries.push_back({"", parameters, continues});
    }
    void fail(std::string_view error, const nlohmann::json& parameters) override {
        entries.push_back({std::string(error), parameters, false});
    }
    void hold(Subscription s) override { subscription = std::move(s); }

    const Entry& last() const { return entries.back(); }

    std::vector<Entry> entries;
    Subscription subscription;
};

}  // namespace infervisor::testing
