#include "control/control_session.h"

#include <spdlog/spdlog.h>

#include <array>

#include "control/varlink_errors.h"

namespace infervisor {

namespace asio = boost::asio;
using boost::system::error_code;

// The sink handed to VarlinkService for one call: forwards to the session
// while the call is current, and ignores anything after the final reply.
class ControlSession::CallSink final : public ReplySink {
  public:
    CallSink(std::weak_ptr<ControlSession> session, bool more, bool oneway)
        : session_(std::move(session)), more_(more), oneway_(oneway) {}

    void reply(const nlohmann::json& parameters, bool continues) override {
        auto session = live_session();
        if (!session) return;
        if (!oneway_) {
            std::string bytes = encode_reply(parameters, continues && more_);
            std::size_t limit = session->hub_->limits.max_output;
            if (bytes.size() > limit) {
                // Callers cap their replies (e.g. 100 config errors); this is
                // the last line of defence, and it ends the call.
                spdlog::warn(
                    "control: a reply of {} bytes to uid {} pid {} is over the limit of {} "
                    "bytes; sent ReplyTooLarge instead",
                    bytes.size(), session->peer_.uid, session->peer_.pid, limit);
                return fail(varlink_error::kReplyTooLarge,
                            {{"size", bytes.size()}, {"limit", limit}});
            }
            session->enqueue(bytes);
        }
        if (!continues) finish(*session);
    }

    void fail(std::string_view error, const nlohmann::json& parameters) override {
        auto session = live_session();
        if (!session) return;
        if (!oneway_) session->enqueue(encode_error(error, parameters));
        finish(*session);
    }

    void hold(Subscription subscription) override {
        if (auto session = live_session()) session->subscription_ = std::move(subscription);
    }

  private:
    std::shared_ptr<ControlSession> live_session() {
        if (finished_) return nullptr;
        auto session = session_.lock();
        if (!session || session->closed_) return nullptr;
        return session;
    }

    void finish(ControlSession& session) {
        finished_ = true;
        if (!oneway_) session.call_finished(this);
    }

    std::weak_ptr<ControlSession> session_;
    bool more_;
    bool oneway_;
    bool finished_ = false;
};

ControlSession::ControlSession(Socket socket, PeerCredentials peer, std::shared_ptr<SessionHub> hub,
                               ConnectionQuota::Slot slot)
    : socket_(std::move(socket)),
      peer_(std::move(peer)),
      hub_(std::move(hub)),
      slot_(std::move(slot)),
      framer_(hub_->limits.max_message_size + 1),  // + the NUL
      idle_timer_(socket_.get_executor()),
      write_wakeup_(socket_.get_executor()) {}

ControlSession::~ControlSession() { hub_->sessions.erase(this); }

void ControlSession::start() {
    hub_->sessions.insert(this);
    touch();
    auto executor = socket_.get_executor();
    auto self = shared_from_this();
    asio::co_spawn(
        executor, [self] { return self->read_loop(); }, asio::detached);
    asio::co_spawn(
        executor, [self] { return self->write_loop(); }, asio::detached);
    asio::co_spawn(
        executor, [self] { return self->watch_idle(); }, asio::detached);
}

void ControlSession::close() {
    if (closed_) return;
    closed_ = true;
    error_code ignored;
    socket_.close(ignored);
    idle_timer_.cancel();
    write_wakeup_.cancel();
    current_call_.reset();
    subscription_.reset();
}

asio::awaitable<void> ControlSession::read_loop() {
    std::array<char, 16384> buffer;
    while (!closed_) {
        error_code ec;
        std::size_t n = co_await socket_.async_read_some(
            asio::buffer(buffer), asio::redirect_error(asio::use_awaitable, ec));
        if (closed_) break;
        if (ec == asio::error::eof) {
            input_ended_ = true;
            if (subscription_.active()) {
                close();  // a follower that hung up; nothing more to deliver
                break;
            }
            process_input();
            break;
        }
        if (ec) {
            close();
            break;
        }
        touch();
        if (!framer_.feed({buffer.data(), n})) {
            spdlog::warn("control: closing connection of uid {} pid {}: message over {} bytes",
                         peer_.uid, peer_.pid, hub_->limits.max_message_size);
            close();
            break;
        }
        process_input();
    }
}

asio::awaitable<void> ControlSession::write_loop() {
    while (!closed_) {
        if (output_.empty()) {
            if (closing_) {
                close();
                break;
            }
            error_code ec;
            write_wakeup_.expires_at(Clock::time_point::max());
            co_await write_wakeup_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            continue;
        }
        std::string sending = std::move(output_);
        output_.clear();
        std::size_t offset = 0;
        while (offset < sending.size() && !closed_) {
            in_flight_ = sending.size() - offset;
            error_code ec;
            offset += co_await socket_.async_write_some(
                asio::buffer(sending.data() + offset, sending.size() - offset),
                asio::redirect_error(asio::use_awaitable, ec));
            if (ec) close();
            touch();
        }
        in_flight_ = 0;
    }
}

asio::awaitable<void> ControlSession::watch_idle() {
    while (!closed_) {
        idle_timer_.expires_at(deadline_);
        error_code ec;
        co_await idle_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (closed_) break;
        if (Clock::now() >= deadline_) {
            spdlog::debug("control: closing idle connection of uid {} pid {}", peer_.uid,
                          peer_.pid);
            close();
        }
    }
}

void ControlSession::process_input() {
    if (closed_ || dispatching_) return;
    dispatching_ = true;
    while (!closed_ && !busy_ && !closing_) {
        auto message = framer_.next();
        if (!message) break;
        handle_message(*message);
    }
    dispatching_ = false;
    if (!closed_ && !busy_ && input_ended_) {
        // Nothing more will come; an unfinished message never will be.
        close_after_flush();
    }
    update_deadline();
}

void ControlSession::handle_message(const std::string& message) {
    auto parsed = parse_call(message);
    if (auto* rejected = std::get_if<CallRejected>(&parsed)) {
        enqueue(encode_error(rejected->error, rejected->parameters));
        if (rejected->fatal) {
            spdlog::debug("control: closing connection of uid {} pid {}: {}", peer_.uid, peer_.pid,
                          rejected->parameters.value("reason", ""));
            close_after_flush();
        }
        return;
    }
    const auto& call = std::get<VarlinkCall>(parsed);
    auto sink = std::make_shared<CallSink>(weak_from_this(), call.more, call.oneway);
    if (!call.oneway) {
        busy_ = true;
        current_call_ = sink;
    }
    hub_->service.handle(call, peer_, sink);
}

void ControlSession::call_finished(const CallSink* sink) {
    if (current_call_.get() != sink) return;
    current_call_.reset();
    busy_ = false;
    touch();
    if (dispatching_) return;  // process_input() goes on by itself
    // Completed from the supervisor's callback: continue from the loop, not
    // re-entering the supervisor while it is delivering.
    asio::post(socket_.get_executor(), [self = shared_from_this()] { self->process_input(); });
}

void ControlSession::enqueue(const std::string& bytes) {
    if (closed_) return;
    if (output_.size() + in_flight_ + bytes.size() > hub_->limits.max_output) {
        spdlog::warn(
            "control: closing connection of uid {} pid {}: {} bytes of replies are waiting to "
            "be sent, over the limit of {} (it does not read them fast enough)",
            peer_.uid, peer_.pid, output_.size() + in_flight_ + bytes.size(),
            hub_->limits.max_output);
        close();
        return;
    }
    output_ += bytes;
    write_wakeup_.cancel();
}

void ControlSession::close_after_flush() {
    closing_ = true;
    write_wakeup_.cancel();
}

void ControlSession::touch() {
    last_activity_ = Clock::now();
    update_deadline();
}

void ControlSession::update_deadline() {
    if (closed_) return;
    auto previous = deadline_;
    deadline_ = busy_ ? Clock::time_point::max() : last_activity_ + hub_->limits.idle_timeout;
    // The watcher sleeps until the old deadline; wake it only when the new
    // one is earlier (a later one it finds on waking).
    if (deadline_ < previous) idle_timer_.cancel();
}

}  // namespace infervisor
