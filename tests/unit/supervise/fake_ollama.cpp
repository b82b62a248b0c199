#include "fake_ollama.h"

#include <array>
#include <boost/asio/write.hpp>
#include <nlohmann/json.hpp>

namespace infervisor::testing {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

std::string reply(int status, const json& body) {
    std::string text = body.dump();
    return "HTTP/1.1 " + std::to_string(status) +
           " X\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: " +
           std::to_string(text.size()) + "\r\nConnection: close\r\n\r\n" + text;
}

}  // namespace

FakeOllama::FakeOllama(asio::io_context& io)
    : acceptor_(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    accept();
}

void FakeOllama::release(const std::string& model) {
    busy_.erase(model);
    if (expired_.erase(model)) loaded_.erase(model);
}

void FakeOllama::accept() {
    acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
        if (ec) return;
        auto s = std::make_shared<tcp::socket>(std::move(socket));
        held_.push_back(s);
        read(s, std::make_shared<std::string>());
        accept();
    });
}

void FakeOllama::read(std::shared_ptr<tcp::socket> s, std::shared_ptr<std::string> request) {
    auto buffer = std::make_shared<std::array<char, 4096>>();
    s->async_read_some(asio::buffer(*buffer), [this, s, request, buffer](
                                                  const boost::system::error_code& ec, size_t n) {
        if (ec) return;
        request->append(buffer->data(), n);
        size_t end = request->find("\r\n\r\n");
        if (end == std::string::npos) return read(s, request);
        size_t length = 0;
        if (auto at = request->find("Content-Length: "); at != std::string::npos && at < end)
            length = std::stoul(request->substr(at + 16));
        if (request->size() < end + 4 + length) return read(s, request);
        std::string line = request->substr(0, request->find("\r\n"));
        line = line.substr(0, line.rfind(' '));
        std::string body = request->substr(end + 4, length);
        lines.push_back(line);
        if (line.rfind("POST", 0) == 0) bodies.push_back(body);
        if (silent) return;
        auto keep = std::make_shared<std::string>(answer(line, body));
        asio::async_write(*s, asio::buffer(*keep),
                          [s, keep](const boost::system::error_code&, size_t) {
                              boost::system::error_code ignored;
                              s->close(ignored);
                          });
    });
}

std::string FakeOllama::ps() const {
    json models = json::array();
    for (const auto& [name, size] : loaded_)
        models.push_back(
            {{"name", name},
             {"model", name},
             {"size", size},
             {"digest", "a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72"},
             {"details", {{"format", "gguf"}, {"family", "llama"}}},
             {"expires_at", "2026-12-05T12:04:05.000000000Z"},
             {"size_vram", 0},
             {"context_length", 4096}});
    return reply(200, {{"models", models}});
}

std::string FakeOllama::answer(const std::string& line, const std::string& body) {
    if (line == "GET /api/ps") return ps();
    if (line != "POST /api/generate") return reply(404, "404 page not found");
    json req = json::parse(body, nullptr, false);
    if (req.is_discarded() || !req.is_object())
        return reply(400, {{"error", "invalid character 'x' looking for beginning of value"}});
    std::string model = req.value("model", "");
    if (!loaded_.count(model) && model != "on-disk")
        return reply(404, {{"error", "model '" + model + "' not found"}});
    bool unload =
        req.value("prompt", "").empty() && req.contains("keep_alive") && req["keep_alive"] == 0;
    if (!unload) return reply(400, {{"error", "only unloads are served here"}});
    if (busy_.count(model))
        expired_.insert(model);
    else
        loaded_.erase(model);
    return reply(200, {{"model", model},
                       {"created_at", "2026-12-05T12:00:00.000000000Z"},
                       {"response", ""},
                       {"done", true},
                       {"done_reason", "unload"}});
}

}  // namespace infervisor::testing
