#include "option_checks.h"

#include <charconv>

namespace infervisor::cli {

CLI::Option* add_count_option(CLI::App* command, const std::string& names, int& out,
                              const std::string& help, int min, int max) {
    auto in_range = [min, max](const std::string& text) -> std::string {
        int value = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec == std::errc() && end == text.data() + text.size() && value >= min && value <= max)
            return {};
        return "expected a whole number from " + std::to_string(min) + " to " +
               std::to_string(max) + ", not '" + text + "'";
    };
    return command->add_option(names, out, help)->check(CLI::Validator(in_range, "", ""));
}

}  // namespace infervisor::cli
