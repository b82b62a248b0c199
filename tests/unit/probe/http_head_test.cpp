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

using Framing = HttpHead::Framing;

TEST(HttpHead, ACompleteHeadSaysWhereTheBodyStartsAndHowItEnds) {
    const std::string head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
        "content-length: 12\r\n\r\n";
    auto parsed = parse_http_head(head + "body follows");
    ASSERT_EQ(parsed.state, State::complete);
    EXPECT_EQ(parsed.size, head.size());
    EXPECT_EQ(parsed.framing, Framing::length);
    EXPECT_EQ(parsed.content_length, 12u);
    EXPECT_EQ(parsed.content_type, "text/plain; version=0.0.4");
}

TEST(HttpHead, ChunkedOverridesContentLength) {
    auto parsed = parse_http_head(
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding:  Chunked \r\n\r\n");
    EXPECT_EQ(parsed.framing, Framing::chunked);
}

TEST(HttpHead, NoLengthMeansToTheEndOfTheConnection) {
    auto parsed = parse_http_head("HTTP/1.0 200 OK\nServer: x\n\n");
    EXPECT_EQ(parsed.state, State::complete);
    EXPECT_EQ(parsed.framing, Framing::to_end);
    EXPECT_EQ(parsed.content_type, "");
}

TEST(HttpHead, AnUnreadableFramingIsSaidButTheStatusStands) {
    for (const char* field : {"Content-Length: -1", "Content-Length: 1e3", "Content-Length: ",
                              "Content-Length: 99999999999999999999", "Content-Length: 5, 5",
                              "Transfer-Encoding: gzip, chunked", "Transfer-Encoding: gzip"}) {
        auto parsed = parse_http_head("HTTP/1.1 200 OK\r\n" + std::string(field) + "\r\n\r\n");
        EXPECT_EQ(parsed.state, State::complete) << field;
        EXPECT_EQ(parsed.status, 200) << field;
        EXPECT_EQ(parsed.framing, Framing::invalid) << field;
        EXPECT_FALSE(parsed.framing_error.empty()) << field;
    }
    auto twice =
        parse_http_head("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n");
    EXPECT_EQ(twice.framing_error, "two different Content-Length headers");
    auto same =
        parse_http_head("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n");
    EXPECT_EQ(same.framing, Framing::length);
    auto shown = parse_http_head("HTTP/1.1 200 OK\r\nContent-Length: \x01x\r\n\r\n");
    EXPECT_EQ(shown.framing_error, "bad Content-Length '?x'");
}

TEST(HttpHead, ContentTypeIsBoundedAndPrintable) {
    auto parsed = parse_http_head("HTTP/1.1 200 OK\r\nContent-Type: a\x7f" +
                                  std::string(1000, 'b') + "\r\n\r\n");
    EXPECT_EQ(parsed.content_type.size(), kMaxHttpContentType);
    EXPECT_EQ(parsed.content_type.substr(0, 3), "a?b");
}

TEST(HttpHead, StatusesWithoutABody) {
    EXPECT_TRUE(http_status_has_no_body(100));
    EXPECT_TRUE(http_status_has_no_body(204));
    EXPECT_TRUE(http_status_has_no_body(304));
    EXPECT_FALSE(http_status_has_no_body(200));
    EXPECT_FALSE(http_status_has_no_body(404));
}

}  // namespace
}  // namespace infervisor
