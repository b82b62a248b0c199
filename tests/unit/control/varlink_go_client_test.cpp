// A third-party client: varlink-go's bindings for our interface (see
// tests/varlink-go) call List on a real ControlServer over its socket.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "server_fixture.h"

namespace infervisor {
namespace {

using ::testing::HasSubstr;

struct Output {
    int status = -1;
    std::string text;
};

Output run(const std::string& command) {
    Output out;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe) return out;
    char buffer[4096];
    std::size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.text.append(buffer, n);
    out.status = ::pclose(pipe);
    return out;
}

TEST(VarlinkGoClient, ListsTheWorkersThroughGeneratedBindings) {
    const char* client = std::getenv("VARLINK_GO_CLIENT");
    if (!client || !*client)
        GTEST_SKIP() << "varlink-go is not installed (golang-go, varlink-go, "
                        "golang-github-varlink-go-dev; ./run-tests installs them); "
                        "VM scenario 162 runs the same client when it is";
    testing::ServerFixture server;
    auto out = run(std::string(client) + " " + server.socket_path().string() + " 2>&1");
    EXPECT_EQ(out.status, 0) << out.text;
    EXPECT_THAT(out.text, HasSubstr("interface io.infervisor.supervisor\n"));
    EXPECT_THAT(out.text, HasSubstr("llama running\n"));
    EXPECT_THAT(out.text, HasSubstr("whisper stopped\n"));
}

}  // namespace
}  // namespace infervisor
