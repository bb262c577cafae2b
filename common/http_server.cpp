#include "common/http_server.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <optional>
#include <stdexcept>

#include "common/asio.h"

namespace medic {

using tcp = asio::ip::tcp;

const std::string* HttpRequest::header(const std::string& lower_name) const {
  const auto it = headers.find(lower_name);
  return it == headers.end() ? nullptr : &it->second;
}

HttpResponse HttpResponse::text(unsigned status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  if (r.body.empty() || r.body.back() != '\n') r.body += '\n';
  return r;
}

HttpResponse HttpResponse::json(unsigned status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = std::move(body);
  return r;
}

std::string url_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '+') {
      out += ' ';
    } else if (c == '%' && i + 2 < s.size() &&
               std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::map<std::string, std::string> parse_query(std::string_view q) {
  std::map<std::string, std::string> out;
  while (!q.empty()) {
    const size_t amp = q.find('&');
    const std::string_view part = q.substr(0, amp);
    if (!part.empty()) {
      const size_t eq = part.find('=');
      if (eq == std::string_view::npos) {
        out[url_decode(part)] = "";
      } else {
        out[url_decode(part.substr(0, eq))] = url_decode(part.substr(eq + 1));
      }
    }
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
  return out;
}

namespace {

std::chrono::steady_clock::duration to_steady(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

}  // namespace

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  asio::io_context& io;
  tcp::acceptor acceptor;
  HttpHandler handler;
  HttpServerOptions options;
  std::atomic<size_t> sessions{0};
  bool stopped = false;

  Impl(asio::io_context& io_, HttpHandler h, HttpServerOptions o)
      : io(io_), acceptor(asio::make_strand(io_)), handler(std::move(h)), options(o) {}

  void accept();
};

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, std::shared_ptr<HttpServer::Impl> server)
      : stream_(std::move(socket)), server_(std::move(server)) {
    ++server_->sessions;
    beast::error_code ec;
    const auto ep = stream_.socket().remote_endpoint(ec);
    if (!ec) peer_ = ep.address().to_string() + ":" + std::to_string(ep.port());
  }
  ~Session() { --server_->sessions; }

  void run() {
    asio::dispatch(stream_.get_executor(),
                   beast::bind_front_handler(&Session::read, shared_from_this()));
  }

 private:
  void read() {
    parser_.emplace();
    parser_->body_limit(server_->options.body_limit);
    stream_.expires_after(to_steady(server_->options.read_timeout_s));
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, size_t) {
    if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted ||
        ec == beast::error::timeout || ec == asio::error::connection_reset || ec == asio::error::eof) {
      close();
      return;
    }
    if (ec) {
      // Malformed request or body over the limit: answer once, then close.
      const unsigned status = ec == http::error::body_limit ? 413 : 400;
      respond(HttpResponse::text(status, std::string("bad request: ") + ec.message()), false, 11);
      return;
    }
    auto& req = parser_->get();
    HttpRequest r;
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    const size_t qm = r.target.find('?');
    r.path = url_decode(std::string_view(r.target).substr(0, qm));
    if (qm != std::string::npos) r.query = parse_query(std::string_view(r.target).substr(qm + 1));
    for (const auto& f : req) {
      std::string name(f.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      r.headers[name] = std::string(f.value());
    }
    r.body = std::move(req.body());
    r.peer = peer_;
    HttpResponse resp;
    try {
      resp = server_->handler(r);
    } catch (const std::exception& e) {
      spdlog::error("http handler for {} {} threw: {}", r.method, r.path, e.what());
      resp = HttpResponse::text(500, std::string("internal error: ") + e.what());
    }
    respond(std::move(resp), req.keep_alive(), req.version());
  }

  void respond(HttpResponse resp, bool keep_alive, unsigned version) {
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(resp.status), version);
    res->set(http::field::server, "fabric-medic");
    res->set(http::field::content_type, resp.content_type);
    for (const auto& [k, v] : resp.headers) res->set(k, v);
    res->keep_alive(keep_alive);
    res->body() = std::move(resp.body);
    res->prepare_payload();
    stream_.expires_after(to_steady(server_->options.write_timeout_s));
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res, keep_alive](beast::error_code ec, size_t) {
                        if (ec || !keep_alive || self->server_->stopped) {
                          self->close();
                          return;
                        }
                        self->read();
                      });
  }

  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.socket().close(ec);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<HttpServer::Impl> server_;
  std::string peer_;
};

}  // namespace

void HttpServer::Impl::accept() {
  acceptor.async_accept(asio::make_strand(io),
                        [self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
                          if (self->stopped) return;
                          if (ec) {
                            if (ec != asio::error::operation_aborted) {
                              spdlog::warn("http accept failed: {}", ec.message());
                            }
                          } else if (self->sessions.load() >= self->options.max_sessions) {
                            beast::error_code ignored;
                            socket.close(ignored);
                          } else {
                            std::make_shared<Session>(std::move(socket), self)->run();
                          }
                          self->accept();
                        });
}

HttpServer::HttpServer(asio::io_context& io, const std::string& address, uint16_t port,
                       HttpHandler handler, HttpServerOptions options)
    : impl_(std::make_shared<Impl>(io, std::move(handler), options)) {
  beast::error_code ec;
  const auto addr = asio::ip::make_address(address, ec);
  if (ec) throw std::runtime_error("bad listen address " + address + ": " + ec.message());
  const tcp::endpoint ep(addr, port);
  const std::string where = address + ":" + std::to_string(port);
  impl_->acceptor.open(ep.protocol(), ec);
  if (ec) throw std::runtime_error("cannot open socket for " + where + ": " + ec.message());
  impl_->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  impl_->acceptor.bind(ep, ec);
  if (ec) throw std::runtime_error("cannot bind " + where + ": " + ec.message());
  impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw std::runtime_error("cannot listen on " + where + ": " + ec.message());
}

HttpServer::~HttpServer() { stop(); }

uint16_t HttpServer::port() const {
  beast::error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

std::string HttpServer::address() const {
  beast::error_code ec;
  return impl_->acceptor.local_endpoint(ec).address().to_string();
}

void HttpServer::start() { impl_->accept(); }

void HttpServer::stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  asio::post(impl_->acceptor.get_executor(), [impl = impl_] {
    beast::error_code ec;
    impl->acceptor.close(ec);
  });
}

}  // namespace medic
