// Reading journal files from infervisorctl (logs, events -D): the handle,
// where to start, one field of the current entry, and what to say when
// nothing matched. The matches are each command's own.
#pragma once

#include <systemd/sd-journal.h>

#include <memory>
#include <string>

namespace infervisor::cli {

struct JournalCloser {
    void operator()(sd_journal* j) const { sd_journal_close(j); }
};
using Journal = std::unique_ptr<sd_journal, JournalCloser>;

// The local system journal (this host's entries), or every journal file in
// `directory` when it is not empty (journalctl -D; a collector's
// /var/log/journal/remote holds every host's). A negative errno on failure.
int open_journal(const std::string& directory, Journal& journal);

// FIELD's value in the current entry; "" when the entry has none.
std::string journal_field(sd_journal* j, const char* name);

// Positions the journal so that the next sd_journal_next() gives the first
// entry to print: the `lines` newest matching ones, or all (lines < 0).
int position_journal(sd_journal* j, int lines);

// As journalctl: nothing found is said, not an empty screen; and when there
// were no journal files to read at all, why that may be.
void say_no_journal_entries(sd_journal* j);

}  // namespace infervisor::cli
