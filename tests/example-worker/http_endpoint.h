// HttpEndpoint: the example worker's health endpoint, on 127.0.0.1:PORT.
// GET /health answers 503 while the model loads and 200 once it serves;
// any other path 404. Plain sockets in the worker's own ppoll loop, so when
// the worker spins (--spin-after-ms) the endpoint stops answering, as a stuck
// model server's does (the kernel still completes TCP handshakes: only an
// HTTP probe sees the hang).
#pragma once

#include <string>

namespace example_worker {

class HttpEndpoint {
  public:
    HttpEndpoint() = default;
    ~HttpEndpoint();
    HttpEndpoint(const HttpEndpoint&) = delete;
    HttpEndpoint& operator=(const HttpEndpoint&) = delete;

    // Listens on 127.0.0.1:port; false with `error` set when it cannot.
    bool open(int port, std::string& error);
    int fd() const { return fd_; }
    // Answers every connection waiting now. `ready`: loading is over.
    void serve_pending(bool ready);

  private:
    void answer(int connection, bool ready);

    int fd_ = -1;
};

}  // namespace example_worker
