// TlsListener: a local TLS server for the tests of https exchanges, with a
// throwaway self-signed certificate made at construction (so no key is kept
// in the tree and none expires). Each connection is handshaken, then treated
// as its Behaviour says. It links OpenSSL, as the daemon no longer does
// (daemon/tls-relay/ speaks TLS for it).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <memory>
#include <string>
#include <vector>

namespace infervisor {

class TlsListener {
  public:
    enum class Behaviour {
        answer,        // read one request, write the answer, close without close_notify
        silent,        // handshake, then read the request and say nothing, holding on
        endless_body,  // read one request, then send the answer and 4K pieces forever
        no_handshake,  // accept the TCP connection and never answer the ClientHello
    };

    TlsListener(boost::asio::io_context& io, std::string answer,
                Behaviour behaviour = Behaviour::answer);
    int port() const { return acceptor_.local_endpoint().port(); }
    const std::string& request() const { return request_; }

  private:
    using Stream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;
    void use_self_signed_certificate();
    void accept();
    void serve(std::shared_ptr<Stream> s);
    void flood(std::shared_ptr<Stream> s);

    boost::asio::ssl::context context_;
    boost::asio::ip::tcp::acceptor acceptor_;
    std::string answer_;
    Behaviour behaviour_;
    std::string request_;
    std::string piece_;
    std::vector<std::shared_ptr<boost::asio::ip::tcp::socket>> held_;  // no_handshake
    std::vector<std::shared_ptr<Stream>> streams_;                     // silent
};

}  // namespace infervisor
