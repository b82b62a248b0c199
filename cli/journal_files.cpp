#include "journal_files.h"

#include <unistd.h>

#include <iostream>
#include <string_view>

namespace infervisor::cli {

int open_journal(const std::string& directory, Journal& journal) {
    sd_journal* j = nullptr;
    int r = directory.empty() ? sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY)
                              : sd_journal_open_directory(&j, directory.c_str(), 0);
    if (r < 0) return r;
    journal.reset(j);
    return 0;
}

std::string journal_field(sd_journal* j, const char* name) {
    const void* data = nullptr;
    size_t length = 0;
    if (sd_journal_get_data(j, name, &data, &length) < 0) return {};
    std::string_view entry(static_cast<const char*>(data), length);
    auto eq = entry.find('=');
    return eq == std::string_view::npos ? std::string() : std::string(entry.substr(eq + 1));
}

int position_journal(sd_journal* j, int lines) {
    if (lines < 0) return sd_journal_seek_head(j);
    int r = sd_journal_seek_tail(j);
    if (r < 0) return r;
    // previous_skip(lines + 1) then next lands on the lines-th newest entry;
    // with fewer entries it stops at the first (and next gives the second),
    // so go back to the head then.
    r = sd_journal_previous_skip(j, static_cast<uint64_t>(lines) + 1);
    if (r >= 0 && r <= lines) return sd_journal_seek_head(j);
    return r;
}

void say_no_journal_entries(sd_journal* j) {
    std::cout << "-- No entries --\n";
    uint64_t bytes = 0;
    if (sd_journal_get_usage(j, &bytes) < 0 || bytes > 0) return;
    std::cerr << "infervisorctl: no journal files were found"
              << (::geteuid() == 0 ? ""
                                   : " (the system journal needs root or the "
                                     "systemd-journal/adm group)")
              << "\n";
}

}  // namespace infervisor::cli
