// Notifier: the sd_notify datagram protocol, spoken without libsystemd.
// Each message is one datagram of newline-separated KEY=value assignments sent
// to the AF_UNIX socket named by $NOTIFY_SOCKET (a path, or an abstract name
// when it starts with '@'). Without $NOTIFY_SOCKET every send is a no-op.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <string>
#include <string_view>

namespace example_worker {

class Notifier {
  public:
    // `socket_name`: the value of $NOTIFY_SOCKET, or nullptr.
    explicit Notifier(const char* socket_name);
    ~Notifier();
    Notifier(const Notifier&) = delete;
    Notifier& operator=(const Notifier&) = delete;

    bool enabled() const { return fd_ >= 0; }
    // Sends one datagram. Failures are reported on stderr once, then ignored:
    // a worker keeps serving even when its supervisor stops listening.
    void send(std::string_view message);

  private:
    int fd_ = -1;
    sockaddr_un address_ = {};
    socklen_t address_length_ = 0;
    bool warned_ = false;
};

}  // namespace example_worker
