#include "journal/journal_writer.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "journal/journal_socket.h"

namespace infervisor {

bool JournalWriter::journal_available() { return ::access(kJournalSocket, W_OK) == 0; }

namespace {

std::string describe(const Event& event) {
    std::string line = "[" + std::string(event_name(event.kind)) + "]";
    if (!event.worker.empty()) line += " " + event.worker + ":";
    line += " " + event.message;
    return line;
}

}  // namespace

void JournalWriter::write(const Event& event) const {
    if (!use_journal_) {
        int prio = event_priority(event.kind);
        auto level = prio <= 3   ? spdlog::level::err
                     : prio == 4 ? spdlog::level::warn
                                 : spdlog::level::info;
        spdlog::log(level, "{}", describe(event));
        return;
    }
    std::vector<std::string> fields = {
        "MESSAGE=" + (event.worker.empty() ? "" : event.worker + ": ") + event.message,
        "MESSAGE_ID=" + std::string(event_message_id(event.kind)),
        "PRIORITY=" + std::to_string(event_priority(event.kind)),
        "SYSLOG_IDENTIFIER=infervisord",
        "INFERVISOR_EVENT=" + std::string(event_name(event.kind)),
    };
    if (!event.worker.empty()) fields.push_back("INFERVISOR_WORKER=" + event.worker);
    for (const auto& [key, value] : event.fields)
        fields.push_back("INFERVISOR_" + key + "=" + value);
    if (auto sent = send_journal_entry(fields); !sent)
        spdlog::warn("journal write failed ({}): {}", sent.error().message(), describe(event));
}

}  // namespace infervisor
