// libFuzzer target: configuration text as `infervisorctl config check` sends
// it over the control socket (Validate), where any local user may supply it.
//
// load_config_text parses with yaml-cpp and validates; whatever the text, it
// must not crash, hang or throw, and every problem it reports must carry a
// message and a place inside the document.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "config/config_loader.h"

using namespace infervisor;

namespace {

void check_errors(const ConfigErrors& errors) {
    for (const auto& error : errors.all()) {
        if (error.message.empty() || error.line < 0 || error.column < 0) std::abort();
        if (error.format().empty()) std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto loaded = load_config_text(text, "fuzz.yaml");
    check_errors(loaded.errors);
    return 0;
}
