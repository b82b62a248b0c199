#include "journal/journal_socket.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace infervisor {

namespace {

// journald's default for its clients (libsystemd asks for the same): an
// entry of up to this size goes as one datagram where the host allows it.
constexpr int kSendBufferBytes = 8 << 20;

struct UnixAddress {
    sockaddr_un address{};
    socklen_t length = 0;
};

Result<UnixAddress> unix_address(const char* path) {
    UnixAddress out;
    out.address.sun_family = AF_UNIX;
    std::size_t n = std::strlen(path);
    if (n == 0 || n >= sizeof out.address.sun_path)
        return plain_error(std::string("socket path too long: ") + path);
    std::memcpy(out.address.sun_path, path, n);
    out.length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + n + 1);
    return out;
}

void append_le64(std::string& out, std::uint64_t value) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// A larger send buffer where the host allows it: SO_SNDBUF up to
// net.core.wmem_max, SO_SNDBUFFORCE beyond it as root.
void enlarge_send_buffer(int fd) {
    int size = kSendBufferBytes;
    if (::setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size) < 0)
        (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
}

// To a socket with send(MSG_NOSIGNAL): a reader gone is an error, not a
// SIGPIPE.
Result<void> write_all(int fd, const std::string& bytes, const char* what, bool socket) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        ssize_t n = socket ? ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL)
                           : ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return errno_error(what);
        done += static_cast<std::size_t>(n);
    }
    return {};
}

// An entry too large for a datagram: written to a memfd, sealed (journald
// accepts only a sealed one, so the sender cannot change it while it is
// read), and the descriptor sent alone.
Result<void> send_as_memfd(int sock, const UnixAddress& to, const std::string& entry) {
    UniqueFd memfd(::memfd_create("journal-entry", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (!memfd) return errno_error("memfd_create");
    if (auto written = write_all(memfd.get(), entry, "write the journal entry to a memfd", false);
        !written)
        return written;
    if (::fcntl(memfd.get(), F_ADD_SEALS,
                F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
        return errno_error("seal the journal entry's memfd");
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr message{};
    message.msg_name = const_cast<sockaddr_un*>(&to.address);
    message.msg_namelen = to.length;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    int fd = memfd.get();
    std::memcpy(CMSG_DATA(header), &fd, sizeof fd);
    if (::sendmsg(sock, &message, MSG_NOSIGNAL) < 0)
        return errno_error(std::string("send a journal entry's memfd to ") + to.address.sun_path);
    return {};
}

}  // namespace

std::string encode_journal_entry(const std::vector<std::string>& fields) {
    std::string out;
    for (const auto& field : fields) {
        std::size_t equals = field.find('=');
        if (equals == std::string::npos || equals == 0) continue;
        std::string_view value(field.data() + equals + 1, field.size() - equals - 1);
        if (value.find('\n') == std::string_view::npos) {
            out += field;
            out += '\n';
            continue;
        }
        out.append(field, 0, equals);
        out += '\n';
        append_le64(out, value.size());
        out += value;
        out += '\n';
    }
    return out;
}

Result<void> send_journal_entry(const std::vector<std::string>& fields, const char* socket_path) {
    auto to = unix_address(socket_path);
    if (!to) return to.error();
    std::string entry = encode_journal_entry(fields);
    UniqueFd sock(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!sock) return errno_error("socket(AF_UNIX, SOCK_DGRAM)");
    enlarge_send_buffer(sock.get());
    iovec part{entry.data(), entry.size()};
    msghdr message{};
    message.msg_name = &to->address;
    message.msg_namelen = to->length;
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    if (::sendmsg(sock.get(), &message, MSG_NOSIGNAL) >= 0) return {};
    if (errno != EMSGSIZE && errno != ENOBUFS)
        return errno_error(std::string("send a journal entry to ") + socket_path);
    return send_as_memfd(sock.get(), *to, entry);
}

Result<UniqueFd> open_journal_stream(const std::string& identifier, int priority,
                                     const char* socket_path) {
    if (identifier.find('\n') != std::string::npos)
        return plain_error("a journal identifier must be one line");
    if (priority < 0 || priority > 7) return plain_error("a journal priority is 0-7");
    auto to = unix_address(socket_path);
    if (!to) return to.error();
    UniqueFd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!sock) return errno_error("socket(AF_UNIX, SOCK_STREAM)");
    if (::connect(sock.get(), reinterpret_cast<const sockaddr*>(&to->address), to->length) < 0)
        return errno_error(std::string("connect to ") + socket_path);
    // Nothing is read from it; journald sends nothing.
    (void)::shutdown(sock.get(), SHUT_RD);
    enlarge_send_buffer(sock.get());
    // Identifier, unit id (none: journald finds the unit from the peer),
    // priority, level prefix on, and no forwarding to syslog, kmsg or the
    // console beyond journald's own settings.
    std::string header = identifier + "\n\n" + static_cast<char>('0' + priority) + "\n1\n0\n0\n0\n";
    if (auto written = write_all(sock.get(), header, "write the journal stream's header", true);
        !written)
        return written.error();
    return sock;
}

}  // namespace infervisor
