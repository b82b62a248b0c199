// The Boost.Asio pieces the control socket uses, included in the order that
// Boost 1.74 needs: its awaitable.hpp uses std::exchange without including
// <utility>. Clang with libstdc++ is taught that it has C++20 coroutines,
// which Asio 1.74 only detects for GCC (and for Clang with libc++).
#pragma once

// clang-format off
#include <utility>
#if defined(__clang__) && defined(__cpp_impl_coroutine) && !defined(BOOST_ASIO_HAS_CO_AWAIT)
#define BOOST_ASIO_HAS_CO_AWAIT 1
#endif
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
// clang-format on
