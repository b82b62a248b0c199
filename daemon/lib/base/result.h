// Result<T>: the one error channel for expected failures of I/O and parsing.
//
// Contract: a Result holds either a value or an Error (errno, if any, plus what
// was being done). Exceptions are reserved for start-up and configuration
// failures that end the program; everything the event loop can survive comes
// back as a Result.
#pragma once

#include <cerrno>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace infervisor {

struct Error {
    int code = 0;      // errno value, 0 when the failure is not a system call's
    std::string what;  // what was being done, e.g. "open /sys/fs/cgroup/x/memory.max"

    // "what: strerror(code)" or just "what".
    std::string message() const;
};

// Captures the current errno together with a description of the operation.
Error errno_error(std::string_view what);
Error plain_error(std::string_view what);

template <class T>
class [[nodiscard]] Result {
  public:
    Result(T value) : state_(std::move(value)) {}
    Result(Error error) : state_(std::move(error)) {}

    bool ok() const { return state_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & { return std::get<0>(state_); }
    const T& value() const& { return std::get<0>(state_); }
    T&& value() && { return std::get<0>(std::move(state_)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

    const Error& error() const { return std::get<1>(state_); }

    T value_or(T fallback) const { return ok() ? value() : std::move(fallback); }

  private:
    std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
  public:
    Result() = default;
    Result(Error error) : error_(std::move(error)), failed_(true) {}

    bool ok() const { return !failed_; }
    explicit operator bool() const { return ok(); }
    const Error& error() const { return error_; }

  private:
    Error error_;
    bool failed_ = false;
};

}  // namespace infervisor
