// TraceRecorder: the daemon's recording of what its policy engine was given
// (policy/policy_trace.h), for `infervisorctl simulate` and `history
// --export`. Bounded: encoded blocks of about kBlockBytes (or a quarter of
// `keep`), the oldest
// dropped once the recording spans more than `keep` (the metrics' history,
// 1h by default) or holds more than `max_bytes`. A closed block is shrunk
// to its size, so what is held is what was recorded (about 10 bytes a
// steady worker's sample: 20 workers for an hour at 2s are some 400 KiB).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "base/clock.h"
#include "policy/policy_trace.h"

namespace infervisor {

class TraceRecorder {
  public:
    static constexpr size_t kBlockBytes = 32u << 10;
    static constexpr size_t kDefaultMaxBytes = 4u << 20;

    struct Block {
        uint64_t sequence = 0;
        std::string bytes;
    };
    struct Chunk {
        std::vector<Block> blocks;  // oldest first
        bool more = false;          // further closed blocks wait: ask again from the next
    };

    explicit TraceRecorder(Duration keep = std::chrono::hours(1),
                           size_t max_bytes = kDefaultMaxBytes);

    // 0: records nothing, and drops what it held.
    void set_keep(Duration keep);
    bool keeping() const { return keep_.count() > 0; }
    void add(const TraceRound& round);
    void add(const TraceEvent& event);

    // Closed blocks from `from` (a sequence; older ones are gone) up to
    // about `max_bytes` of them; when every one fits, the block being
    // written too (what it holds so far).
    Chunk read(uint64_t from, size_t max_bytes) const;
    // Bytes held, closed and open.
    size_t bytes() const { return closed_bytes_ + open_.bytes().size(); }

  private:
    template <typename Entry>
    void append(const Entry& entry, TimePoint time);
    void close_block();
    void drop_old(TimePoint now);

    struct Closed {
        uint64_t sequence;
        TimePoint last;  // its newest entry's time
        std::string bytes;
    };
    Duration keep_;
    size_t max_bytes_;
    std::deque<Closed> closed_;
    size_t closed_bytes_ = 0;
    TraceBlockWriter open_;
    uint64_t open_sequence_ = 0;
    TimePoint open_first_{}, open_last_{};
};

}  // namespace infervisor
