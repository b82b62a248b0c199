#include "journal_events.h"

#include <string_view>

#include "journal/event.h"
#include "journal_files.h"

namespace infervisor::cli {

std::vector<std::string> event_journal_matches(const std::vector<std::string>& workers,
                                               const std::vector<std::string>& hostnames) {
    std::vector<std::string> matches;
    for (int k = 0; k <= static_cast<int>(kLastEventKind); ++k)
        matches.push_back("MESSAGE_ID=" + std::string(event_message_id(static_cast<EventKind>(k))));
    for (const auto& worker : workers) matches.push_back("INFERVISOR_WORKER=" + worker);
    for (const auto& hostname : hostnames) matches.push_back("_HOSTNAME=" + hostname);
    return matches;
}

int add_event_matches(sd_journal* j, const std::vector<std::string>& workers,
                      const std::vector<std::string>& hostnames) {
    for (const auto& match : event_journal_matches(workers, hostnames))
        if (int r = sd_journal_add_match(j, match.data(), match.size()); r < 0) return r;
    return 0;
}

JournalEvent read_journal_event(sd_journal* j) {
    JournalEvent out;
    ControlEvent& e = out.event;
    sd_journal_get_realtime_usec(j, &e.time_usec);
    out.host = journal_field(j, "_HOSTNAME");
    constexpr std::string_view prefix = "INFERVISOR_";
    const void* data = nullptr;
    size_t length = 0;
    sd_journal_restart_data(j);
    while (sd_journal_enumerate_data(j, &data, &length) > 0) {
        std::string_view entry(static_cast<const char*>(data), length);
        auto eq = entry.find('=');
        if (eq == std::string_view::npos || !entry.starts_with(prefix)) continue;
        std::string key(entry.substr(prefix.size(), eq - prefix.size()));
        std::string value(entry.substr(eq + 1));
        if (key == "EVENT")
            e.kind = std::move(value);
        else if (key == "WORKER")
            e.worker = std::move(value);
        else
            e.fields[key] = std::move(value);
    }
    e.message = journal_field(j, "MESSAGE");
    if (std::string lead = e.worker + ": "; !e.worker.empty() && e.message.starts_with(lead))
        e.message.erase(0, lead.size());
    return out;
}

}  // namespace infervisor::cli
