#include "confirm.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <iostream>

namespace infervisor::cli {

std::optional<bool> ask_yes_no(const std::string& question) {
    if (::isatty(STDIN_FILENO) != 1) return std::nullopt;
    std::cerr << question << " [y/N] " << std::flush;
    std::string answer;
    if (!std::getline(std::cin, answer)) {
        std::cerr << "\n";
        return false;
    }
    std::transform(answer.begin(), answer.end(), answer.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    return answer == "y" || answer == "yes";
}

}  // namespace infervisor::cli
