// The scrape of a worker's metrics endpoint against a local server that
// answers as llama-server does, wrongly, or not at all: what a sample
// carries, one request at a time, lateness on the daemon's clock, and the
// series a rule names that the server does not show. Outcomes and their order
// are asserted, never how long anything took.
#include "engine/metrics_scrape.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <cstdlib>
#include <deque>
#include <filesystem>

#include "support/fake_clock.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using tcp = asio::ip::tcp;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

std::string metrics_answer(const std::string& text) {
    return "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: " +
           std::to_string(text.size()) + "\r\n\r\n" + text;
}

// Answers the n-th request with the n-th answer (the last one again after
// that); an empty answer holds the connection without a word.
class MetricsServer {
  public:
    MetricsServer(asio::io_context& io, std::deque<std::string> answers)
        : acceptor_(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
          answers_(std::move(answers)) {
        accept();
    }
    int port() const { return acceptor_.local_endpoint().port(); }
    const std::vector<std::string>& requests() const { return requests_; }

  private:
    void accept() {
        acceptor_.async_accept([this](const error_code& ec, tcp::socket socket) {
            if (ec) return;
            auto s = std::make_shared<tcp::socket>(std::move(socket));
            held_.push_back(s);
            read(s, std::make_shared<std::string>());
            accept();
        });
    }

    void read(std::shared_ptr<tcp::socket> s, std::shared_ptr<std::string> request) {
        auto buffer = std::make_shared<std::array<char, 4096>>();
        s->async_read_some(
            asio::buffer(*buffer), [this, s, request, buffer](const error_code& ec, size_t n) {
                if (ec) return;
                request->append(buffer->data(), n);
                if (request->find("\r\n\r\n") == std::string::npos) return read(s, request);
                requests_.push_back(*request);
                std::string answer = answers_.front();
                if (answers_.size() > 1) answers_.pop_front();
                if (answer.empty()) return;  // silent
                auto out = std::make_shared<std::string>(std::move(answer));
                asio::async_write(*s, asio::buffer(*out), [s, out](const error_code&, size_t) {
                    error_code ignored;
                    s->close(ignored);
                });
            });
    }

    tcp::acceptor acceptor_;
    std::deque<std::string> answers_;
    std::vector<std::string> requests_;
    std::vector<std::shared_ptr<tcp::socket>> held_;
};

std::string llama_metrics() {
    const char* root = std::getenv("INFERVISOR_SOURCE_ROOT");
    EXPECT_NE(root, nullptr);
    return testing::slurp(std::filesystem::path(root ? root : ".") /
                          "tests/unit/engine/fixtures/llama-server-metrics.txt");
}

class MetricsScrapeTest : public ::testing::Test {
  protected:
    std::unique_ptr<MetricsScrape> scrape(int port, PrometheusWanted wanted,
                                          std::string api_key = {}) {
        MetricsScrape::Settings settings;
        settings.engine.port = port;
        settings.engine.metrics = "/metrics";
        settings.api_key = std::move(api_key);
        settings.wanted = std::move(wanted);
        return std::make_unique<MetricsScrape>(
            io, clock, std::move(settings),
            [this](const MetricsScrape::Ended& e) { ended.push_back(e); });
    }

    // Runs the loop until `n` scrapes have ended in all.
    void until_ended(size_t n) {
        while (ended.size() < n && io.run_one()) {
        }
        ASSERT_EQ(ended.size(), n);
    }

    asio::io_context io;
    FakeClock clock;
    std::vector<MetricsScrape::Ended> ended;
};

TEST_F(MetricsScrapeTest, ASampleCarriesTheWantedSeriesOfTheLastScrape) {
    MetricsServer server(io, {metrics_answer(llama_metrics())});
    auto s = scrape(server.port(),
                    {"llamacpp:tokens_predicted_total", "llamacpp:requests_processing"}, "s3cret");
    EXPECT_FALSE(s->reading(2s)) << "nothing before the first scrape";
    s->begin(1s);
    EXPECT_TRUE(ended.empty()) << "never from within begin()";
    const TimePoint answered = clock.now();
    until_ended(1);
    EXPECT_TRUE(ended[0].ok) << ended[0].error;
    EXPECT_TRUE(ended[0].newly_absent.empty());
    auto reading = s->reading(2s);
    ASSERT_TRUE(reading);
    EXPECT_EQ(reading->time, answered);
    EXPECT_EQ(reading->series, (PrometheusValues{{"llamacpp:tokens_predicted_total", 3469},
                                                 {"llamacpp:requests_processing", 2}}));
    ASSERT_EQ(server.requests().size(), 1u);
    EXPECT_THAT(server.requests()[0], ::testing::StartsWith("GET /metrics HTTP/1.1\r\n"));
    EXPECT_THAT(server.requests()[0], HasSubstr("\r\nAuthorization: Bearer s3cret\r\n"));
}

TEST_F(MetricsScrapeTest, OneRequestAtATimeAndNotTwicePerTick) {
    MetricsServer server(io, {""});  // silent
    auto s = scrape(server.port(), {"a"});
    s->begin(1s);
    clock.advance(2s);
    s->begin(1s);  // still under way: no second request
    io.run_for(std::chrono::milliseconds(100));
    EXPECT_EQ(server.requests().size(), 1u);
    EXPECT_TRUE(ended.empty());

    MetricsServer quick(io, {metrics_answer("a 1\n")});
    auto q = scrape(quick.port(), {"a"});
    q->begin(1s);
    until_ended(1);
    clock.advance(500ms);
    q->begin(1s);  // a wake-up half a tick later: no new request
    EXPECT_EQ(quick.requests().size(), 1u);
    clock.advance(500ms);
    q->begin(1s);
    until_ended(2);
    EXPECT_EQ(quick.requests().size(), 2u);
}

TEST_F(MetricsScrapeTest, ALateScrapeLeavesTheSampleWithout) {
    MetricsServer server(io, {metrics_answer("a 1\n"), ""});  // then silent
    auto s = scrape(server.port(), {"a"});
    s->begin(2s);
    until_ended(1);
    clock.advance(2s);
    s->begin(2s);  // under way, and the server says nothing
    io.run_for(std::chrono::milliseconds(50));
    clock.advance(1s);
    ASSERT_TRUE(s->reading(2s)) << "not late yet: the last reading";
    EXPECT_EQ(s->reading(2s)->series.at("a"), 1);
    clock.advance(1s);
    EXPECT_FALSE(s->reading(2s)) << "begun a sample interval ago and still under way";
    s.reset();  // cancels the request under way; no callback after that
    io.run_for(std::chrono::milliseconds(50));
    EXPECT_EQ(ended.size(), 1u);
}

TEST_F(MetricsScrapeTest, AFailedScrapeLeavesTheSampleWithoutAndSaysWhy) {
    MetricsServer server(
        io, {metrics_answer("a 1\n"),
             "HTTP/1.1 501 Not Implemented\r\nContent-Type: application/json\r\n"
             "Content-Length: 136\r\n\r\n"
             "{\"error\":{\"code\":501,\"message\":\"This server does not support metrics "
             "endpoint. Start it with `--metrics`\",\"type\":\"not_supported_error\"}}",
             metrics_answer("a{x=\"1\\q\"} 1\n"), metrics_answer("a 2\n")});
    auto s = scrape(server.port(), {"a"});
    s->begin(0s);
    until_ended(1);
    ASSERT_TRUE(s->reading(2s));
    s->begin(0s);
    until_ended(2);
    EXPECT_FALSE(ended[1].ok);
    EXPECT_THAT(ended[1].error, ::testing::StartsWith("HTTP 501: {\"error\":{\"code\":501,"
                                                      "\"message\":\"This server does not"));
    EXPECT_FALSE(s->reading(2s));
    s->begin(0s);
    until_ended(3);
    EXPECT_EQ(ended[2].error, "not Prometheus text: line 1: unknown escape '\\q' in a label value");
    EXPECT_FALSE(s->reading(2s));
    s->begin(0s);
    until_ended(4);
    EXPECT_TRUE(ended[3].ok);
    EXPECT_EQ(s->reading(2s)->series.at("a"), 2);
}

TEST_F(MetricsScrapeTest, ARefusedConnectionFails) {
    int port = 0;
    {
        MetricsServer gone(io, {""});
        port = gone.port();
    }
    auto s = scrape(port, {"a"});
    s->begin(0s);
    until_ended(1);
    EXPECT_FALSE(ended[0].ok);
    EXPECT_THAT(ended[0].error, ::testing::StartsWith("connect: "));
}

TEST_F(MetricsScrapeTest, ASeriesTheServerDoesNotShowIsReportedOncePerRun) {
    MetricsServer server(io, {metrics_answer(llama_metrics())});
    auto s = scrape(server.port(), {"llamacpp:tokens_predicted_total",
                                    "llamacpp:kv_cache_usage_ratio", "llamacpp:typo_total"});
    s->begin(0s);
    until_ended(1);
    EXPECT_TRUE(ended[0].ok);
    EXPECT_THAT(ended[0].newly_absent,
                ElementsAre("llamacpp:kv_cache_usage_ratio", "llamacpp:typo_total"));
    s->begin(0s);
    until_ended(2);
    EXPECT_TRUE(ended[1].newly_absent.empty()) << "once per run";
    s->set_wanted({"llamacpp:tokens_predicted_total", "llamacpp:other"});
    s->begin(0s);
    until_ended(3);
    EXPECT_THAT(ended[2].newly_absent, ElementsAre("llamacpp:other"));
    EXPECT_EQ(s->reading(2s)->series.size(), 1u);
}

TEST_F(MetricsScrapeTest, AnAnswerOverTheBoundFailsTheScrape) {
    MetricsServer server(io, {metrics_answer("a 1\n# " + std::string(5000, 'x') + "\n")});
    MetricsScrape::Settings settings;
    settings.engine.port = server.port();
    settings.engine.metrics = "/metrics";
    settings.wanted = {"a"};
    settings.max_body = 4096;
    MetricsScrape s(io, clock, settings, [this](const auto& e) { ended.push_back(e); });
    s.begin(0s);
    until_ended(1);
    EXPECT_EQ(ended[0].error, "body longer than 4096 bytes");
    EXPECT_FALSE(s.reading(2s));
}

}  // namespace
}  // namespace infervisor
