#include "yaml/document_budget.h"

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace infervisor {

bool check_document_budget(const YAML::Node& root, ConfigErrors& errors, DocumentBudget budget) {
    std::vector<YAML::Node> pending{root};
    std::size_t nodes = 0, bytes = 0;
    while (!pending.empty()) {
        YAML::Node node = pending.back();
        pending.pop_back();
        if (++nodes > budget.max_nodes) {
            errors.add(node.Mark(), "the document expands to more than " +
                                        std::to_string(budget.max_nodes) +
                                        " YAML nodes (counting each use of an alias)");
            return false;
        }
        if (node.IsScalar()) {
            bytes += node.Scalar().size();
            if (bytes > budget.max_scalar_bytes) {
                errors.add(node.Mark(), "the document expands to more than " +
                                            std::to_string(budget.max_scalar_bytes >> 20) +
                                            " MiB of text (counting each use of an alias)");
                return false;
            }
        } else if (node.IsSequence()) {
            for (const auto& item : node) pending.push_back(item);
        } else if (node.IsMap()) {
            for (const auto& kv : node) {
                pending.push_back(kv.first);
                pending.push_back(kv.second);
            }
        }
    }
    return true;
}

}  // namespace infervisor
