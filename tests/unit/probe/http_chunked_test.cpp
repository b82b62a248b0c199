// De-chunking a chunked body: whole, in any pieces, and every way a hostile
// server can get it wrong.
#include "probe/http_chunked.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace infervisor {
namespace {

using ChunkState = ChunkedBody::State;
using ::testing::HasSubstr;

const std::string kWellFormed =
    "4\r\nWiki\r\n7;name=value\r\npedia i\r\nB\r\nn \r\nchunks.\r\n0\r\nExpires: never\r\n\r\n";

TEST(ChunkedBody, DecodesAWholeBody) {
    ChunkedBody body(1024);
    EXPECT_EQ(body.feed(kWellFormed), ChunkState::done);
    EXPECT_EQ(body.body(), "Wikipedia in \r\nchunks.");
}

TEST(ChunkedBody, AnyPiecesGiveTheSameBody) {
    for (size_t piece = 1; piece <= kWellFormed.size(); ++piece) {
        ChunkedBody body(1024);
        ChunkState state = ChunkState::more;
        for (size_t at = 0; at < kWellFormed.size(); at += piece) {
            ASSERT_EQ(state, ChunkState::more) << piece;
            state = body.feed(std::string_view(kWellFormed).substr(at, piece));
        }
        EXPECT_EQ(state, ChunkState::done) << piece;
        EXPECT_EQ(body.body(), "Wikipedia in \r\nchunks.") << piece;
    }
}

TEST(ChunkedBody, BareLineFeedsAndNoTrailer) {
    ChunkedBody body(16);
    EXPECT_EQ(body.feed("3\nabc\n0\n\n"), ChunkState::done);
    EXPECT_EQ(body.body(), "abc");
}

TEST(ChunkedBody, IncompleteUntilTheLastChunksBlankLine) {
    ChunkedBody body(16);
    EXPECT_EQ(body.feed("3\r\nabc\r\n0\r\n"), ChunkState::more);
    EXPECT_EQ(body.feed("\r\n"), ChunkState::done);
}

TEST(ChunkedBody, OverTheLimitIsAnErrorNotATruncation) {
    ChunkedBody body(5);
    EXPECT_EQ(body.feed("3\r\nabc\r\n3\r\n"), ChunkState::error);
    EXPECT_EQ(body.error(), "chunked body: body longer than 5 bytes");
    ChunkedBody exact(6);
    EXPECT_EQ(exact.feed("3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n"), ChunkState::done);
    EXPECT_EQ(exact.body(), "abcdef");
}

TEST(ChunkedBody, MalformedSizesAreErrors) {
    for (const char* text : {"\r\n", "x\r\n", "-1\r\n", "3 x\r\n", "3\rx", "0x10\r\n",
                             "fffffffffffffffff\r\n", "1\r\naXY"}) {
        ChunkedBody body(1 << 20);
        EXPECT_EQ(body.feed(text), ChunkState::error) << text;
        EXPECT_THAT(body.error(), ::testing::StartsWith("chunked body: ")) << text;
    }
    ChunkedBody huge(1 << 20);
    EXPECT_EQ(huge.feed("ffffffffffffff\r\n"), ChunkState::error);  // 2^56: fits, but not the limit
    EXPECT_THAT(huge.error(), HasSubstr("longer than"));
}

TEST(ChunkedBody, EndlessExtensionsAndTrailersAreCut) {
    ChunkedBody extension(16);
    EXPECT_EQ(extension.feed("1;" + std::string(kMaxChunkLine, 'x')), ChunkState::error);
    EXPECT_THAT(extension.error(), HasSubstr("chunk-size line longer than"));
    ChunkedBody trailer(16);
    std::string endless = "0\r\n";
    while (endless.size() < kMaxChunkTrailer + 64) endless += "X-Filler: aaaaaaaaaaaa\r\n";
    EXPECT_EQ(trailer.feed(endless), ChunkState::error);
    EXPECT_THAT(trailer.error(), HasSubstr("trailer longer than"));
}

TEST(ChunkedBody, NothingIsLookedAtAfterTheEnd) {
    ChunkedBody body(16);
    EXPECT_EQ(body.feed("1\r\na\r\n0\r\n\r\ngarbage"), ChunkState::done);
    EXPECT_EQ(body.feed("more garbage"), ChunkState::done);
    EXPECT_EQ(body.body(), "a");
}

}  // namespace
}  // namespace infervisor
