// A small HTTP/1.1 server on Boost.Beast, shared by fabsim and medicd's API.
// One strand per session, a deadline on every read and write, a body limit on input;
// optionally HTTPS (TLS 1.2 or later, OpenSSL) with the same deadlines and limits.
// Connections are bounded in all and per client; when a new one would pass a bound, the
// connection idle longest (waiting for a request) is closed to make room, so a flood of
// idle connections never locks a health check out. A handler may answer later (an
// AsyncHttpHandler): slow work runs elsewhere and the server's threads never wait on it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace medic {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // "/s/rtsw0001/metrics?x=1"
  std::string path;    // "/s/rtsw0001/metrics"
  std::map<std::string, std::string> query;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string peer;  // "127.0.0.1:53122"

  const std::string* header(const std::string& lower_name) const;
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // Close the connection without answering (an emulated switch that drops the call).
  bool hang_up = false;

  static HttpResponse text(unsigned status, std::string body);
  static HttpResponse json(unsigned status, std::string body);
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;
// Answers once, from any thread, by calling the reply function.
using HttpRespond = std::function<void(HttpResponse)>;
using AsyncHttpHandler = std::function<void(HttpRequest, HttpRespond)>;

struct HttpServerOptions {
  size_t body_limit = 1 << 20;
  double read_timeout_s = 10.0;   // a whole request, and the wait for the next one on a kept-alive connection
  double write_timeout_s = 30.0;
  size_t max_sessions = 4096;
  size_t max_sessions_per_client = 0;  // from one address (0: no bound but max_sessions)
  // PEM files; when both are set every session starts with a TLS handshake (bounded by
  // read_timeout_s) and plain HTTP on that port gets its connection closed.
  std::string tls_cert_file;  // the server certificate, then any intermediates
  std::string tls_key_file;   // its private key (unencrypted)
};

class HttpServer {
 public:
  // Binds immediately (throws std::runtime_error with the address on failure) so that
  // port 0 can be resolved with port() before run. With TLS options, also loads the
  // certificate and key (throws std::runtime_error naming the file and OpenSSL's reason).
  HttpServer(boost::asio::io_context& io, const std::string& address, uint16_t port,
             HttpHandler handler, HttpServerOptions options = {});
  HttpServer(boost::asio::io_context& io, const std::string& address, uint16_t port,
             AsyncHttpHandler handler, HttpServerOptions options = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const;
  std::string address() const;
  bool tls() const;
  void start();
  void stop();
  // Connections open now, and those closed to make room for new ones since start.
  size_t sessions() const;
  uint64_t evicted() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// Splits "a=1&b=x%20y" into a map, decoding percent escapes and '+'.
std::map<std::string, std::string> parse_query(std::string_view q);
std::string url_decode(std::string_view s);

}  // namespace medic
