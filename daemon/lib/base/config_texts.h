// ConfigTexts: a whole configuration as the texts of its files, the main
// file and its drop-ins in the order they are parsed. What one party reads
// and another checks: `infervisorctl config check` reads the caller's files
// (with the caller's rights) and sends their texts over the control socket
// (control/), the daemon checks them in a helper (config/, services/).
// Plain data in base/ so that every layer on that path may carry it.
#pragma once

#include <string>
#include <vector>

namespace infervisor {

// One configuration file's text; `file` names it in errors.
struct ConfigText {
    std::string file;
    std::string text;
};

struct ConfigTexts {
    ConfigText main;
    std::vector<ConfigText> dropins;
};

}  // namespace infervisor
