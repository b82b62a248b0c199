#include "journal/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/systemd_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

namespace infervisor {

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
        auto sink = std::make_shared<spdlog::sinks::systemd_sink_st>(identifier);
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
