#include "supervise/worker_signal_watch.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "base/unique_fd.h"
#include "cgroup/kernfs_watch.h"

namespace infervisor {

namespace asio = boost::asio;
namespace fs = std::filesystem;

WorkerSignalWatch::WorkerSignalWatch(asio::io_context& io, const fs::path& cgroup,
                                     const PsiTriggerSpec& trigger, Wake wake,
                                     SignalWatchFiles files)
    : io_(io), wake_(std::move(wake)), files_(std::move(files)) {
    open_pressure(cgroup / files_.pressure, trigger);
    description_ += "; ";
    open_events(cgroup / files_.events);
}

WorkerSignalWatch::~WorkerSignalWatch() {
    alive_.reset();
    // Destroying the streams cancels their waits and closes the fds, which
    // also removes the PSI trigger.
}

std::unique_ptr<WorkerSignalWatch::Stream> WorkerSignalWatch::watch_fd(int fd,
                                                                       const std::string& what) {
    auto stream = std::make_unique<Stream>(io_);
    boost::system::error_code ec;
    stream->assign(fd, ec);
    if (ec) {
        ::close(fd);
        description_ += "no " + what + " watch (" + ec.message() + ")";
        return nullptr;
    }
    return stream;
}

void WorkerSignalWatch::open_pressure(const fs::path& file, const PsiTriggerSpec& trigger) {
    auto opened = open_psi_trigger(file, trigger);
    if (!opened) {
        description_ += "no " + files_.pressure + " trigger (" + opened.error().message() + ")";
        return;
    }
    std::string chosen = format_psi_trigger(opened->chosen);
    std::string refused = opened->rejected;
    pressure_ = watch_fd(opened->fd.release(), files_.pressure + " trigger");
    if (!pressure_) return;
    description_ += files_.pressure + " trigger '" + chosen + "'";
    if (!refused.empty()) description_ += " (kernel refused " + refused + ")";
    arm(*pressure_, files_.pressure, false);
}

void WorkerSignalWatch::open_events(const fs::path& file) {
    auto fd = open_change_watch(file);
    if (!fd) {
        description_ += "no " + files_.events + " watch (" + fd.error().message() + ")";
        return;
    }
    events_ = watch_fd(fd->release(), files_.events);
    if (!events_) return;
    description_ += files_.events + " watched";
    arm(*events_, files_.events, true);
}

void WorkerSignalWatch::arm(Stream& stream, const std::string& file, bool reread) {
    std::weak_ptr<char> alive = alive_;
    stream.async_wait(Stream::wait_error,
                      [this, alive, &stream, file, reread](const boost::system::error_code& ec) {
                          if (alive.expired() || ec == asio::error::operation_aborted) return;
                          if (ec) {
                              // Not pollable after all, or the file went away: the tick remains.
                              spdlog::debug("{}: no more wake-ups ({})", file, ec.message());
                              return;
                          }
                          if (reread) consume_change(stream.native_handle());
                          arm(stream, file, reread);
                          wake_(file);
                      });
}

}  // namespace infervisor
