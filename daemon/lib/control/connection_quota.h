// ConnectionQuota: how many control connections a client may hold, so that
// one user cannot take every connection the daemon is willing to serve.
//
// A connection is admitted, after its peer credentials are read, unless
//  - its uid is not 0 and already holds max_per_uid connections (scope
//    "uid"). Root is exempt: its clients are the operator's tools, and root
//    can stop the daemon anyway;
//  - its uid is not 0 and unprivileged clients together hold
//    max_connections - root_reserve (scope "total"). The last root_reserve
//    connections are kept for root, so that the operator can still look and
//    act while other users flood the socket;
//  - the server holds max_connections already (scope "total", for root).
// An admitted connection is counted while its Slot lives.
//
// Not thread-safe: used on the control server's io_context only.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string_view>
#include <unordered_map>
#include <variant>

namespace infervisor {

struct ConnectionLimits {
    std::size_t max_connections = 256;  // all clients together
    std::size_t max_per_uid = 32;       // each uid but 0
    std::size_t root_reserve = 16;      // of max_connections, only for uid 0
};

struct ConnectionRefusal {
    std::string_view scope;  // "uid" or "total", as described above
    std::size_t limit = 0;   // the limit that was reached
};

class ConnectionQuota {
  public:
    // Counts one connection of `uid` until it is destroyed. The quota must
    // outlive it.
    class Slot {
      public:
        Slot(Slot&& other) noexcept;
        Slot& operator=(Slot&& other) noexcept;
        ~Slot();
        uid_t uid() const { return uid_; }

      private:
        friend class ConnectionQuota;
        Slot(ConnectionQuota* quota, uid_t uid) : quota_(quota), uid_(uid) {}
        void release();
        ConnectionQuota* quota_;
        uid_t uid_;
    };

    // root_reserve is capped at max_connections.
    explicit ConnectionQuota(ConnectionLimits limits);
    ConnectionQuota(const ConnectionQuota&) = delete;
    ConnectionQuota& operator=(const ConnectionQuota&) = delete;

    std::variant<Slot, ConnectionRefusal> admit(uid_t uid);

    std::size_t total() const { return total_; }
    std::size_t held_by(uid_t uid) const;
    const ConnectionLimits& limits() const { return limits_; }

  private:
    void release(uid_t uid);

    ConnectionLimits limits_;
    std::size_t total_ = 0;
    std::size_t unprivileged_ = 0;  // held by uids other than 0
    std::unordered_map<uid_t, std::size_t> per_uid_;
};

}  // namespace infervisor
