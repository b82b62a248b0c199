// JournalWriter: writes Events as structured journal entries:
//   MESSAGE=, MESSAGE_ID=, PRIORITY=, SYSLOG_IDENTIFIER=infervisord,
//   INFERVISOR_EVENT=, INFERVISOR_WORKER=, INFERVISOR_<FIELD>=...
// Where there is no journald (a developer's terminal, a test), the event goes
// to the daemon's log instead, so it is never lost silently.
#pragma once

#include "journal/event.h"

namespace infervisor {

class JournalWriter {
  public:
    // `use_journal`: false writes events through spdlog only.
    explicit JournalWriter(bool use_journal) : use_journal_(use_journal) {}
    void write(const Event& event) const;

    // True when journald's socket exists on this host.
    static bool journal_available();

  private:
    bool use_journal_;
};

}  // namespace infervisor
