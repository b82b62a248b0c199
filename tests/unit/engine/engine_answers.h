// What the engine adapters' tests feed their parsers: a fixture as a server
// writes it (tests/unit/engine/fixtures, see its README), and a complete
// HTTP answer with a JSON body, as the HTTP exchange hands it over.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "probe/http_exchange.h"
#include "support/temp_dir.h"

namespace infervisor::testing {

inline std::string engine_fixture(const std::string& name) {
    const char* root = std::getenv("INFERVISOR_SOURCE_ROOT");
    EXPECT_NE(root, nullptr) << "INFERVISOR_SOURCE_ROOT is not set";
    return slurp(std::filesystem::path(root ? root : ".") / "tests/unit/engine/fixtures" / name);
}

inline HttpAnswer json_answer(int status, std::string body,
                              std::string type = "application/json; charset=utf-8") {
    HttpAnswer a;
    a.complete = true;
    a.status = status;
    a.content_type = std::move(type);
    a.body = std::move(body);
    return a;
}

}  // namespace infervisor::testing
