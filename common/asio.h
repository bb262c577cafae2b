// The one place Asio and Beast are included. Boost 1.74's awaitable.hpp uses std::exchange
// without including <utility>, which C++20 libstdc++ no longer pulls in transitively.
#pragma once

#include <utility>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace medic {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
}  // namespace medic
