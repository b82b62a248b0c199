#include "probe/http_head.h"

#include <gtest/gtest.h>

namespace infervisor {
namespace {

using State = HttpHead::State;

TEST(HttpHead, CompleteAnswerGivesItsStatus) {
    auto head = parse_http_head("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n");
    EXPECT_EQ(head.state, State::complete);
    EXPECT_EQ(head.status, 503);
    EXPECT_EQ(parse_http_head("HTTP/1.0 200 OK\r\n\r\nbody").status, 200);
    EXPECT_EQ(parse_http_head("HTTP/1.1 204\n\n").state, State::complete);  // bare LF, no reason
}

TEST(HttpHead, IncompleteUntilTheBlankLine) {
    EXPECT_EQ(parse_http_head("").state, State::incomplete);
    EXPECT_EQ(parse_http_head("HTTP/1.1 2").state, State::incomplete);
    EXPECT_EQ(parse_http_head("HTTP/1.1 200 OK\r\n").state, State::incomplete);
    EXPECT_EQ(parse_http_head("HTTP/1.1 200 OK\r\nA: b\r\n").state, State::incomplete);
    EXPECT_EQ(parse_http_head("HTTP/1.1 200 OK\r\nA: b\r\n\r").state, State::incomplete);
}

TEST(HttpHead, GarbageIsMalformedAsSoonAsItShows) {
    auto head = parse_http_head("SSH-2.0-OpenSSH_9.2\r\n");
    EXPECT_EQ(head.state, State::malformed);
    EXPECT_EQ(head.error, "not an HTTP/1.x status line: 'SSH-2.0-OpenSSH_9.2'");
    // Without a newline too, once twelve bytes cannot start a status line.
    EXPECT_EQ(parse_http_head(std::string(100, '\x01')).state, State::malformed);
    EXPECT_EQ(parse_http_head("HTTP/2 200\r\n\r\n").state, State::malformed);
    EXPECT_EQ(parse_http_head("HTTP/1.1 20x OK\r\n\r\n").state, State::malformed);
    EXPECT_EQ(parse_http_head("HTTP/1.1 2000 OK\r\n\r\n").state, State::malformed);
    EXPECT_EQ(parse_http_head("HTTP/1.1 099 OK\r\n\r\n").state, State::malformed);
    EXPECT_EQ(parse_http_head("HTTP/1.1 200 \x01\x02\r\n\r\n").state, State::complete);
}

TEST(HttpHead, FedByteByByteFindsTheEnd) {
    const std::string answer = "HTTP/1.1 200 OK\r\nServer: x\r\nA: b\r\n\r\n";
    std::string data;
    size_t seen = 0;
    HttpHead head;
    for (char c : answer) {
        data += c;
        head = parse_http_head(data, seen);
        seen = data.size();
        if (data.size() < answer.size()) {
            EXPECT_EQ(head.state, State::incomplete) << data;
        }
    }
    EXPECT_EQ(head.state, State::complete);
    EXPECT_EQ(head.status, 200);
}

TEST(HttpHead, AnEndlessHeaderBlockStaysIncomplete) {
    std::string data = "HTTP/1.1 200 OK\r\n";
    while (data.size() < kMaxHttpHead) data += "X-Filler: aaaaaaaaaaaaaaaaaaaa\r\n";
    EXPECT_EQ(parse_http_head(data).state, State::incomplete);  // the caller's cap ends it
}

}  // namespace
}  // namespace infervisor
