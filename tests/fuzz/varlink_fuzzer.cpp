// libFuzzer target: the control socket's input path without the socket.
//
// Bytes → VarlinkFramer (small limit, so overflow is reached) → parse_call
// → VarlinkService against a FakeSupervisor, as root and as an unprivileged
// caller, with and without the caller still listening. Whatever the input,
// nothing may crash, leak or throw, every call must get at most one final
// reply, and every reply must encode and parse back.
#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "control/varlink_framer.h"
#include "control/varlink_message.h"
#include "control/varlink_service.h"
#include "fake_supervisor.h"
#include "recording_sink.h"

using namespace infervisor;

namespace {

void check_replies(const testing::RecordingSink& sink, const VarlinkCall& call) {
    std::size_t finals = 0;
    for (const auto& entry : sink.entries) {
        if (!entry.continues) ++finals;
        std::string bytes = entry.error.empty() ? encode_reply(entry.parameters, entry.continues)
                                                : encode_error(entry.error, entry.parameters);
        auto back = parse_reply(std::string_view(bytes).substr(0, bytes.size() - 1));
        if (!back.ok()) std::abort();
    }
    bool streaming = call.more && call.method == "io.infervisor.supervisor.Subscribe";
    if (finals > 1 || (finals == 0 && !streaming && !sink.entries.empty())) std::abort();
}

void dispatch(testing::FakeSupervisor& fake, VarlinkService& service, const VarlinkCall& call,
              const PeerCredentials& peer, bool caller_leaves) {
    auto sink = std::make_shared<testing::RecordingSink>();
    service.handle(call, peer, sink);
    if (caller_leaves) sink.reset();
    fake.emit({1, "a", "tick", "fuzz", {{"k", "v"}}});
    fake.complete_pending();
    if (sink) check_replies(*sink, call);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    spdlog::set_level(spdlog::level::off);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    // The first byte picks the circumstances; the rest is the byte stream.
    const uint8_t mode = data[0];
    std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);

    testing::FakeSupervisor fake;
    fake.add_worker("a", "ready");
    fake.add_worker("b", "stopped");
    fake.checkpoints["a"] = {{"0000000001", 1, std::nullopt, std::nullopt, false, true}};
    fake.hold_actions = mode & 1;
    VarlinkService service(fake, AccessPolicy{100});
    PeerCredentials peer{(mode & 2) ? 1000u : 0u, 1000, 1, {(mode & 4) ? 100u : 5u}};
    bool caller_leaves = mode & 8;

    VarlinkFramer framer(4096);
    // Feed in two pieces to exercise reassembly.
    std::size_t cut = stream.size() / 2;
    framer.feed(stream.substr(0, cut));
    framer.feed(stream.substr(cut));
    while (auto message = framer.next()) {
        auto parsed = parse_call(*message);
        if (auto* call = std::get_if<VarlinkCall>(&parsed))
            dispatch(fake, service, *call, peer, caller_leaves);
    }
    return 0;
}
