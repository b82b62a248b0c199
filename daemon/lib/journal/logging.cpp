#include "journal/logging.h"

#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "journal/journal_socket.h"

namespace infervisor {

namespace {

// The daemon's log lines as journal entries (MESSAGE, PRIORITY,
// SYSLOG_IDENTIFIER), as spdlog's systemd_sink writes them, but through
// journal/journal_socket.h rather than libsystemd. A line journald refuses
// goes to stderr with the reason, not nowhere.
class JournalSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
  public:
    explicit JournalSink(std::string identifier) : identifier_(std::move(identifier)) {}

  protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
        std::string message(msg.payload.data(), msg.payload.size());
        auto sent = send_journal_entry({"MESSAGE=" + message,
                                        "PRIORITY=" + std::to_string(priority(msg.level)),
                                        "SYSLOG_IDENTIFIER=" + identifier_});
        if (!sent)
            std::fprintf(stderr, "%s (journal: %s)\n", message.c_str(),
                         sent.error().message().c_str());
    }
    void flush_() override {}

  private:
    static int priority(spdlog::level::level_enum level) {
        switch (level) {
            case spdlog::level::trace:
            case spdlog::level::debug:
                return 7;
            case spdlog::level::warn:
                return 4;
            case spdlog::level::err:
                return 3;
            case spdlog::level::critical:
                return 2;
            default:
                return 6;
        }
    }
    std::string identifier_;
};

}  // namespace

bool stderr_is_journal() {
    const char* env = std::getenv("JOURNAL_STREAM");
    if (!env) return false;
    unsigned long long dev = 0, ino = 0;
    if (std::sscanf(env, "%llu:%llu", &dev, &ino) != 2) return false;
    struct stat st {};
    if (::fstat(2, &st) != 0) return false;
    return st.st_dev == dev && st.st_ino == ino;
}

void setup_logging(const std::string& level, bool to_journal, const std::string& identifier) {
    std::shared_ptr<spdlog::logger> logger;
    if (to_journal) {
        auto sink = std::make_shared<JournalSink>(identifier);
        logger = std::make_shared<spdlog::logger>(identifier, sink);
        logger->set_pattern("%v");
    } else {
        logger = spdlog::stderr_color_st(identifier);
        logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
    }
    logger->set_level(spdlog::level::from_str(level));
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(logger);
}

}  // namespace infervisor
