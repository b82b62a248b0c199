#include "journal/journal_writer.h"

#include <spdlog/spdlog.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace infervisor {

bool JournalWriter::journal_available() {
    return ::access("/run/systemd/journal/socket", W_OK) == 0;
}

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
    std::vector<iovec> iov;
    for (auto& f : fields) iov.push_back({f.data(), f.size()});
    int r = sd_journal_sendv(iov.data(), static_cast<int>(iov.size()));
    if (r < 0) spdlog::warn("journal write failed ({}): {}", -r, describe(event));
}

}  // namespace infervisor
