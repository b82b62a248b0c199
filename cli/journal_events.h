// infervisord's events as the journal holds them (one entry per event, see
// journal/journal_writer.cpp), read back for `infervisorctl events -D DIR`:
// which entries are events, and an entry turned back into the ControlEvent
// the daemon would have sent, with the host that logged it.
#pragma once

#include <systemd/sd-journal.h>

#include <string>
#include <vector>

#include "control/supervisor_api.h"

namespace infervisor::cli {

// The journal matches that select infervisord's events: MESSAGE_ID= one of
// the event kinds' ids (kinds this infervisorctl knows; the daemon's other
// log lines have none), and when given, INFERVISOR_WORKER= one of `workers`
// and _HOSTNAME= one of `hostnames`. sd_journal ORs matches on one field
// and ANDs the fields, so adding them all in order says exactly that.
std::vector<std::string> event_journal_matches(const std::vector<std::string>& workers,
                                               const std::vector<std::string>& hostnames);

// Adds those matches to `j`; a negative errno on failure.
int add_event_matches(sd_journal* j, const std::vector<std::string>& workers,
                      const std::vector<std::string>& hostnames);

struct JournalEvent {
    ControlEvent event;
    std::string host;  // _HOSTNAME: the host whose journald received it
};

// The current entry as an event: INFERVISOR_EVENT is the kind,
// INFERVISOR_WORKER the worker, MESSAGE without the "WORKER: " the daemon
// puts before it, every other INFERVISOR_KEY=value a field KEY.
JournalEvent read_journal_event(sd_journal* j);

}  // namespace infervisor::cli
