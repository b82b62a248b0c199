// Document budget: how large a parsed YAML document may be once its aliases
// are expanded. An alias (*name) shares the anchored node in memory, but
// every use of it is read again by the parsers above (and its scalars copied
// into the configuration), so a small text can stand for an exponential
// amount of work ("billion laughs"). Checking the expanded size once, before
// anything reads the document, bounds every later walk over it.
//
// Contract: walks the document iteratively (no recursion, whatever its
// depth), stops as soon as a limit is passed, and then records one error at
// the node where it was passed. Returns true when the document is within
// both limits.
#pragma once

#include <cstddef>

#include "yaml/config_errors.h"

namespace YAML {
class Node;
}

namespace infervisor {

struct DocumentBudget {
    std::size_t max_nodes = 1'000'000;        // nodes visited, aliases counted per use
    std::size_t max_scalar_bytes = 16 << 20;  // bytes of scalars, per use
};

bool check_document_budget(const YAML::Node& root, ConfigErrors& errors,
                           DocumentBudget budget = {});

}  // namespace infervisor
