// FakeOllama: an HTTP server in the test's process that answers the two
// routes the preempt ladder's unload uses as Ollama does (ollama/ollama at
// fb30760996871fa9460115c753afd2c60d4ab0f7, server/routes.go):
//   GET /api/ps        200 {"models": [{"name", "model", "size", "size_vram",
//                      "digest", "expires_at", "context_length", "details"}]}
//   POST /api/generate with an empty prompt and "keep_alive": 0:
//                      200 {"model", "created_at", "response": "", "done": true,
//                      "done_reason": "unload"}, the model unloaded at once —
//                      or, for a model marked busy (a request holds it), only
//                      when release() says the request ended (sched.go
//                      expireRunner); 404 {"error": "model 'x' not found"} for
//                      a model it does not have; 400 {"error": ...} for a body
//                      that is not JSON.
// One request per connection; the requests' lines and bodies are recorded.
// `silent` holds every request without an answer.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace infervisor::testing {

class FakeOllama {
  public:
    explicit FakeOllama(boost::asio::io_context& io);
    int port() const { return acceptor_.local_endpoint().port(); }

    void load(const std::string& model, uint64_t size) { loaded_[model] = size; }
    void mark_busy(const std::string& model) { busy_.insert(model); }
    // The request that held `model` ended: an unload asked for meanwhile
    // happens now.
    void release(const std::string& model);
    bool is_loaded(const std::string& model) const { return loaded_.count(model) > 0; }

    bool silent = false;
    std::vector<std::string> lines;   // "GET /api/ps", "POST /api/generate"
    std::vector<std::string> bodies;  // of the POSTs

  private:
    using tcp = boost::asio::ip::tcp;
    void accept();
    void read(std::shared_ptr<tcp::socket> s, std::shared_ptr<std::string> request);
    std::string answer(const std::string& line, const std::string& body);
    std::string ps() const;

    tcp::acceptor acceptor_;
    std::map<std::string, uint64_t> loaded_;
    std::set<std::string> busy_;
    std::set<std::string> expired_;  // asked to unload while busy
    std::vector<std::shared_ptr<tcp::socket>> held_;
};

}  // namespace infervisor::testing
