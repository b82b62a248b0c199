// Pager: long output goes through a pager when stdout is a terminal, as
// systemctl and journalctl do. The command is $SYSTEMD_PAGER, else $PAGER,
// else "less"; an empty value or "cat" means no pager, and so does
// --no-pager. less gets LESS=FRXMK unless $LESS is set (quit when the text
// fits on one screen, keep colours, leave the screen as it is).
//
// Contract: start() is called before anything is printed; it replaces
// stdout (fd 1) with a pipe to the pager. finish() (also run by the
// destructor) flushes and closes that pipe and waits for the pager, so the
// shell prompt comes back only after the pager has quit.
#pragma once

#include <sys/types.h>

#include <string>

namespace infervisor::cli {

// The pager command for this environment; "" for none.
std::string pager_command();

class Pager {
  public:
    Pager() = default;
    Pager(const Pager&) = delete;
    Pager& operator=(const Pager&) = delete;
    ~Pager() { finish(); }

    // Starts the pager if stdout is a terminal and a pager is wanted; on any
    // failure the output simply goes to the terminal.
    void start();
    void finish();

  private:
    pid_t pid_ = -1;
};

}  // namespace infervisor::cli
