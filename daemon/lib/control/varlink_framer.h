// VarlinkFramer: splits a Varlink byte stream into messages, each ended by a
// NUL byte, holding at most a bounded number of unconsumed bytes.
//
// Contract: feed() appends what was read; next() hands out complete messages
// in order. When the unconsumed input (complete messages not yet taken plus
// the unfinished tail) would exceed the limit, feed() returns false and the
// framer stays overflowed: the connection is to be closed, since a client
// that sends more than the limit in one message or far ahead of its replies
// is broken or hostile. Each byte is searched for the NUL once, however
// many reads a long message arrives in (linear, not quadratic, in its size).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace infervisor {

class VarlinkFramer {
  public:
    explicit VarlinkFramer(std::size_t max_buffered) : max_buffered_(max_buffered) {}

    // False when the limit was exceeded (now or before).
    bool feed(std::string_view bytes);

    // The next complete message without its NUL, or nullopt.
    std::optional<std::string> next();

    bool overflowed() const { return overflowed_; }
    // Unconsumed bytes, complete or not.
    std::size_t buffered() const { return buffer_.size() - start_; }
    // True when an unfinished message is pending (input ended mid-message).
    bool has_partial() const;

  private:
    std::size_t max_buffered_;
    std::string buffer_;
    std::size_t start_ = 0;    // first unconsumed byte
    std::size_t scanned_ = 0;  // [start_, scanned_) holds no NUL
    bool overflowed_ = false;
};

}  // namespace infervisor
