// Pager: long output goes through a pager when stdout is a terminal, as
// systemctl and journalctl do. The command is $SYSTEMD_PAGER, else $PAGER,
// else "less"; an empty value or "cat" means no pager, and so does
// --no-pager. less gets LESS=FRXMK unless $LESS is set (quit when the text
// fits on one screen, keep colours, leave the screen as it is).
//
// Secure mode, as systemd's: the pager always gets LESSSECURE=1, so that
// less runs no shell (`!sh`), editor or log file: a sudoers rule that allows
// only infervisorctl must not hand out a root shell. Under sudo (SUDO_UID
// set) or set-uid (uid != euid), unless $SYSTEMD_PAGERSECURE is 0, a pager
// other than less is not run at all (its command came from the caller's
// environment); $SYSTEMD_PAGERSECURE=1 asks for that everywhere.
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
// Whether secure mode's stricter half applies (see above).
bool pager_secure_mode();

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
