#include "metrics/trace_recorder.h"

namespace infervisor {

TraceRecorder::TraceRecorder(Duration keep, size_t max_bytes)
    : keep_(keep), max_bytes_(max_bytes) {}

void TraceRecorder::set_keep(Duration keep) {
    keep_ = keep;
    if (keep_.count() > 0) return;
    closed_.clear();
    closed_bytes_ = 0;
    open_.take();
    ++open_sequence_;
}

template <typename Entry>
void TraceRecorder::append(const Entry& entry, TimePoint time) {
    if (keep_.count() <= 0) return;
    if (open_.bytes().empty()) open_first_ = time;
    open_.add(entry);
    open_last_ = time;
    // A quiet host fills a block slowly: one spans at most a quarter of
    // `keep`, so the oldest quarter can be dropped on time.
    if (open_.bytes().size() >= kBlockBytes || open_last_ - open_first_ >= keep_ / 4) close_block();
    drop_old(time);
}

void TraceRecorder::add(const TraceRound& round) { append(round, round.time); }
void TraceRecorder::add(const TraceEvent& event) { append(event, event.time); }

void TraceRecorder::close_block() {
    std::string bytes = open_.take();
    bytes.shrink_to_fit();
    closed_bytes_ += bytes.size();
    closed_.push_back({open_sequence_++, open_last_, std::move(bytes)});
}

void TraceRecorder::drop_old(TimePoint now) {
    while (!closed_.empty() && (closed_.front().last + keep_ < now ||
                                closed_bytes_ + open_.bytes().size() > max_bytes_)) {
        closed_bytes_ -= closed_.front().bytes.size();
        closed_.pop_front();
    }
}

TraceRecorder::Chunk TraceRecorder::read(uint64_t from, size_t max_bytes) const {
    Chunk chunk;
    size_t taken = 0;
    for (const auto& block : closed_) {
        if (block.sequence < from) continue;
        if (taken > 0 && taken + block.bytes.size() > max_bytes) {
            chunk.more = true;
            return chunk;
        }
        taken += block.bytes.size();
        chunk.blocks.push_back({block.sequence, block.bytes});
    }
    if (!open_.bytes().empty() && open_sequence_ >= from)
        chunk.blocks.push_back({open_sequence_, open_.bytes()});
    return chunk;
}

}  // namespace infervisor
