#include "tls_listener.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <array>
#include <boost/asio/write.hpp>

namespace infervisor {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using boost::system::error_code;
using tcp = asio::ip::tcp;

TlsListener::TlsListener(asio::io_context& io, std::string answer, Behaviour behaviour)
    : context_(ssl::context::tls_server),
      acceptor_(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
      answer_(std::move(answer)),
      behaviour_(behaviour),
      piece_(4096, 'x') {
    use_self_signed_certificate();
    accept();
}

void TlsListener::use_self_signed_certificate() {
    EVP_PKEY* key = EVP_EC_gen("P-256");
    X509* cert = X509_new();
    ASSERT_TRUE(key && cert);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), 0);
    X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
    X509_set_pubkey(cert, key);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("127.0.0.1"), -1, -1, 0);
    X509_set_issuer_name(cert, name);
    ASSERT_GT(X509_sign(cert, key, EVP_sha256()), 0);
    ASSERT_EQ(SSL_CTX_use_certificate(context_.native_handle(), cert), 1);
    ASSERT_EQ(SSL_CTX_use_PrivateKey(context_.native_handle(), key), 1);
    X509_free(cert);
    EVP_PKEY_free(key);
}

void TlsListener::accept() {
    acceptor_.async_accept([this](const error_code& ec, tcp::socket socket) {
        if (ec) return;
        if (behaviour_ == Behaviour::no_handshake) {
            held_.push_back(std::make_shared<tcp::socket>(std::move(socket)));
        } else {
            auto s = std::make_shared<Stream>(std::move(socket), context_);
            s->async_handshake(ssl::stream_base::server, [this, s](const error_code& e) {
                if (!e) serve(s);
            });
        }
        accept();
    });
}

void TlsListener::serve(std::shared_ptr<Stream> s) {
    auto buffer = std::make_shared<std::array<char, 4096>>();
    s->async_read_some(asio::buffer(*buffer), [this, s, buffer](const error_code& ec, size_t n) {
        if (ec) return;
        request_.append(buffer->data(), n);
        switch (behaviour_) {
            case Behaviour::silent:
                streams_.push_back(s);
                return;
            case Behaviour::endless_body:
                return asio::async_write(*s, asio::buffer(answer_),
                                         [this, s](const error_code& e, size_t) {
                                             if (!e) flood(s);
                                         });
            default:
                return asio::async_write(*s, asio::buffer(answer_), [s](const error_code&, size_t) {
                    error_code ignored;
                    s->lowest_layer().close(ignored);  // no close_notify, as many servers do
                });
        }
    });
}

void TlsListener::flood(std::shared_ptr<Stream> s) {
    asio::async_write(*s, asio::buffer(piece_), [this, s](const error_code& ec, size_t) {
        if (!ec) flood(s);  // until the client hangs up
    });
}

}  // namespace infervisor
