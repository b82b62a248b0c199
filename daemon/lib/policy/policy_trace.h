// PolicyTrace: what the policy engine was given and what came of it, kept so
// that it can be given again (`infervisorctl simulate`, trace_replay.h).
//
// A trace is a sequence of entries in time order:
//   - a round: one evaluation (a tick, or a wake-up by the kernel) with the
//     host's sample and, for each worker evaluated, its sample and what a
//     host rule's victim choice knew of it (WorkerCandidate);
//   - an event: what the daemon did or saw between rounds that the engine
//     is told of (a run started, a worker resumed) or that a replay shows as
//     what really happened (a decision, a run's end and why).
// Probes' answers and heartbeats are in the samples as what they were
// (last_heartbeat), not as requests to make again.
//
// Encoding (one block, self-contained, decodable alone so that the oldest
// block can be dropped from a ring): records, each a type byte, then the
// time as a signed varint difference from the block's previous record
// (steady clock, milliseconds) and the wall time the same way (Unix
// milliseconds). A round's samples are flattened into numbered fields; each
// is written only when present and changed since the same worker's previous
// sample in the block, as a zigzag varint difference, after two bit masks
// (which fields are present, XOR the previous; which of them changed). A
// steady worker costs about 10 bytes a sample. Worker names are written once
// per block and referred to by number after. Strings and counts are bounded
// (kMax*), so a hostile file costs at most its own size to decode.
//
// The file (`infervisorctl history --export`) is kTraceMagic, then each
// block as a varint length and its bytes. Its parser is fuzzed
// (tests/fuzz/policy_trace_fuzzer.cpp): it is input from anyone.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "policy/samples.h"
#include "policy/victim.h"
#include "policy/worker_phase.h"

namespace infervisor {

inline constexpr std::string_view kTraceMagic = "infervisor-trace 1\n";

struct TraceWorker {
    std::string name;
    WorkerSample sample;  // read_errors are not kept
    WorkerCandidate candidate;
    // The phase the daemon's engine judged the run in at this sample (the
    // replay computes its own and says where they differ).
    std::optional<WorkerPhase> phase;
    // The daemon's memory.growth at this sample (PolicyEngine::
    // growth_percent_per_min), for `infervisorctl history`; a replay
    // computes its own.
    std::optional<double> growth_percent_per_min;
};

struct TraceRound {
    TimePoint time{};     // the engine's `now`
    int64_t wall_ms = 0;  // the same moment, Unix milliseconds
    bool woken = false;   // by the kernel (a trigger, memory.events), not the tick
    HostSample host;
    std::vector<TraceWorker> workers;
};

enum class TraceEventKind : uint8_t {
    started = 1,   // a run began: the engine forgets the worker's past
    resumed = 2,   // thawed: the engine forgets it and discounts thrashing
    exited = 3,    // a run ended; text says how ("killed by the kernel's OOM killer")
    decision = 4,  // the engine's decision in the round before: rule, action, dry_run, reason
    // A policy action as the daemon journaled it (policy-action), whoever
    // decided it: the engine's rules, resume_when, the suspension ladder's
    // next step, the watchdog. What `infervisorctl history` marks; a replay
    // passes over it (the engine's own are its decisions).
    action = 5,
};

struct TraceEvent {
    TimePoint time{};
    int64_t wall_ms = 0;
    TraceEventKind kind = TraceEventKind::started;
    std::string worker;  // "" for a host decision with no victim
    std::string rule;
    std::string action;
    bool dry_run = false;
    std::string text;
};

using TraceEntry = std::variant<TraceRound, TraceEvent>;

// Bounds of a decodable trace; the recorder clips to them.
inline constexpr size_t kMaxTraceName = 256;
inline constexpr size_t kMaxTraceText = 512;
inline constexpr size_t kMaxTraceWorkers = 10'000;  // per round
inline constexpr size_t kMaxTraceSeries = 64;       // engine series per sample
inline constexpr size_t kMaxTraceBlock = 16u << 20;

// Appends records to one block. Each block starts afresh (names, previous
// values), so the recorder closes one when it is large enough and starts a
// new writer.
class TraceBlockWriter {
  public:
    TraceBlockWriter();
    ~TraceBlockWriter();
    TraceBlockWriter(TraceBlockWriter&&) noexcept;
    TraceBlockWriter& operator=(TraceBlockWriter&&) noexcept;

    void add(const TraceRound& round);
    void add(const TraceEvent& event);
    const std::string& bytes() const { return bytes_; }
    // The bytes, leaving the writer empty (a new block).
    std::string take();

  private:
    struct State;
    std::string bytes_;
    std::unique_ptr<State> state_;
};

// Decodes one block; appends its entries to `out`. On an error, `out` keeps
// the entries before it and the error says at which byte.
Result<void> decode_trace_block(std::string_view block, std::vector<TraceEntry>& out);

// The file: kTraceMagic and the blocks. decode_trace_file() checks the magic
// and every block.
std::string encode_trace_file(const std::vector<std::string>& blocks);
Result<std::vector<TraceEntry>> decode_trace_file(std::string_view file);

TimePoint entry_time(const TraceEntry& entry);
int64_t entry_wall_ms(const TraceEntry& entry);

}  // namespace infervisor
