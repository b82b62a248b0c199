#include "http_endpoint.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace example_worker {

namespace {

// Reads the request head (up to 4 KiB, 200 ms at most per read) and returns
// its first line.
std::string read_request_line(int connection) {
    timeval timeout{0, 200000};
    ::setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    std::string request;
    char buffer[1024];
    while (request.size() < 4096 && request.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ::recv(connection, buffer, sizeof buffer, 0);
        if (n <= 0) break;
        request.append(buffer, static_cast<size_t>(n));
    }
    return request.substr(0, request.find("\r\n"));
}

void send_all(int connection, const std::string& data) {
    size_t sent = 0;
    while (sent < data.size()) {
        ssize_t n = ::send(connection, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) return;
        sent += static_cast<size_t>(n);
    }
}

}  // namespace

HttpEndpoint::~HttpEndpoint() {
    if (fd_ >= 0) ::close(fd_);
}

bool HttpEndpoint::open(int port, std::string& error) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
        error = std::string("socket: ") + std::strerror(errno);
        return false;
    }
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(fd_, 64) != 0) {
        error = "listen on 127.0.0.1:" + std::to_string(port) + ": " + std::strerror(errno);
        return false;
    }
    return true;
}

void HttpEndpoint::serve_pending(bool ready) {
    for (int i = 0; i < 64; ++i) {
        int connection = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (connection < 0) return;  // EAGAIN: none left
        answer(connection, ready);
        ::close(connection);
    }
}

void HttpEndpoint::answer(int connection, bool ready) {
    std::string line = read_request_line(connection);
    const bool health = line.rfind("GET /health ", 0) == 0;
    int status = !health ? 404 : ready ? 200 : 503;
    std::string body = !health ? "not found\n" : ready ? "ok\n" : "loading\n";
    const char* reason = status == 200 ? "OK" : status == 503 ? "Service Unavailable" : "Not Found";
    send_all(connection, "HTTP/1.1 " + std::to_string(status) + " " + reason +
                             "\r\nContent-Type: text/plain\r\nContent-Length: " +
                             std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
}

}  // namespace example_worker
