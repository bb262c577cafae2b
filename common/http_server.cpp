#include "common/http_server.h"

#include "common/files.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>
#include <list>
#include <mutex>
#include <memory>
#include <optional>
#include <stdexcept>

#include "common/asio.h"  // first: it fixes Boost 1.74's includes under C++20
#include "common/strings.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>

namespace medic {

using tcp = asio::ip::tcp;
namespace ssl = asio::ssl;

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

// What the registry knows of a session, from any thread.
struct SessionSlot {
  std::string ip;
  std::atomic<bool> idle{true};  // waiting for (or reading) a request, no handler running
  std::atomic<int64_t> idle_since{0};  // steady clock, ns
  std::function<void()> evict;         // closes it on its own strand
};

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  asio::io_context& io;
  tcp::acceptor acceptor;
  AsyncHttpHandler handler;
  HttpServerOptions options;
  std::unique_ptr<ssl::context> tls;  // set when the server speaks HTTPS
  std::atomic<size_t> sessions{0};
  std::atomic<uint64_t> evicted{0};
  std::atomic<bool> stopped{false};
  std::mutex registry_mu;
  std::list<std::weak_ptr<SessionSlot>> registry;

  Impl(asio::io_context& io_, AsyncHttpHandler h, HttpServerOptions o)
      : io(io_), acceptor(asio::make_strand(io_)), handler(std::move(h)), options(std::move(o)) {}

  void accept();
  // Room for one more connection from `ip`: true when there is (after closing the
  // connection idle longest, if a bound is reached), false when every connection is busy.
  bool make_room(const std::string& ip);
  void enlist(const std::shared_ptr<SessionSlot>& slot) {
    std::lock_guard lock(registry_mu);
    registry.push_back(slot);
  }
};

bool HttpServer::Impl::make_room(const std::string& ip) {
  std::lock_guard lock(registry_mu);
  size_t total = 0, mine = 0;
  for (auto it = registry.begin(); it != registry.end();) {
    auto slot = it->lock();
    if (!slot) {
      it = registry.erase(it);
      continue;
    }
    ++total;
    if (slot->ip == ip) ++mine;
    ++it;
  }
  const bool per_client = options.max_sessions_per_client > 0 && mine >= options.max_sessions_per_client;
  if (total < options.max_sessions && !per_client) return true;
  // Close the connection idle longest (from this client when its own bound is the one reached).
  std::shared_ptr<SessionSlot> oldest;
  for (const auto& w : registry) {
    auto slot = w.lock();
    if (!slot || !slot->idle.load() || (per_client && slot->ip != ip)) continue;
    if (!oldest || slot->idle_since.load() < oldest->idle_since.load()) oldest = slot;
  }
  if (!oldest) return false;
  oldest->idle.store(false);  // not chosen twice
  oldest->evict();
  ++evicted;
  return true;
}

namespace {

// Everything OpenSSL queued for the failed call, oldest first, without repeats.
std::string openssl_reason() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    const char* r = ERR_reason_error_string(e);
    const std::string reason = r != nullptr ? r : "OpenSSL error " + std::to_string(e);
    if (out.find(reason) != std::string::npos) continue;
    if (reason == "PEM lib" || reason == "system lib") continue;  // says nothing the caller can use
    if (!out.empty()) out += ": ";
    out += reason;
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

// A server context that accepts TLS 1.2 and 1.3 only. Throws naming the file that failed.
std::unique_ptr<ssl::context> make_tls_context(const std::string& cert_file, const std::string& key_file) {
  if (cert_file.empty() || key_file.empty()) {
    throw std::runtime_error("TLS needs both a certificate and a key file (got certificate \"" + cert_file +
                             "\", key \"" + key_file + "\")");
  }
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_server);
  SSL_CTX* native = ctx->native_handle();
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                   ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  // An encrypted key must fail here, not prompt on a terminal a daemon does not have.
  SSL_CTX_set_default_passwd_cb(native, [](char*, int, int, void*) { return 0; });
  // A file that cannot be read, or holds no PEM at all, is named with a reason a person can act
  // on; OpenSSL would only say "system lib" or "unsupported".
  for (const auto& [what, file] : {std::pair{"certificate", &cert_file}, std::pair{"key", &key_file}}) {
    const auto text = read_data_file(*file, 1 << 20);
    if (!text.ok()) throw std::runtime_error(std::string("TLS ") + what + " " + text.error());
    if (text->find("-----BEGIN ") == std::string::npos) {
      throw std::runtime_error(std::string("TLS ") + what + " " + *file + ": no PEM block (-----BEGIN ...) in the file");
    }
  }
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(native, cert_file.c_str()) != 1) {
    throw std::runtime_error("TLS certificate " + cert_file + ": " + openssl_reason());
  }
  if (SSL_CTX_use_PrivateKey_file(native, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    throw std::runtime_error("TLS key " + key_file + ": " + openssl_reason());
  }
  if (SSL_CTX_check_private_key(native) != 1) {
    throw std::runtime_error("TLS key " + key_file + " does not match certificate " + cert_file + ": " +
                             openssl_reason());
  }
  return ctx;
}

std::string peer_of(const tcp::socket& socket) {
  beast::error_code ec;
  const auto ep = socket.remote_endpoint(ec);
  return ec ? std::string() : ep.address().to_string() + ":" + std::to_string(ep.port());
}

// Errors after which the connection is simply closed: the peer went away, the deadline
// passed, or the TLS layer failed (no HTTP answer can be sent over a broken TLS stream).
bool closes_quietly(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::operation_aborted || ec == beast::error::timeout ||
         ec == asio::error::connection_reset || ec == asio::error::eof || ec == ssl::error::stream_truncated ||
         ec.category() == asio::error::get_ssl_category();
}

// The HTTP exchange, the same over TCP and TLS. Derived provides stream() and
// finish(graceful), which ends the connection (with a TLS close_notify when graceful).
int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string ip_of(const std::string& peer) {
  const size_t colon = peer.rfind(':');
  return colon == std::string::npos ? peer : peer.substr(0, colon);
}

template <class Derived>
class Session {
 public:
  Session(std::string peer, std::shared_ptr<HttpServer::Impl> server)
      : server_(std::move(server)), peer_(std::move(peer)), slot_(std::make_shared<SessionSlot>()) {
    ++server_->sessions;
    slot_->ip = ip_of(peer_);
    slot_->idle_since = steady_ns();
  }
  ~Session() { --server_->sessions; }

  // Registers the session so it can be closed to make room (from the acceptor's strand).
  void enlist() {
    std::weak_ptr<Derived> weak = derived().shared_from_this();
    slot_->evict = [weak] {
      if (auto self = weak.lock()) {
        asio::post(self->stream_executor(), [self] { self->finish(false); });
      }
    };
    server_->enlist(slot_);
  }

 protected:
  Derived& derived() { return static_cast<Derived&>(*this); }

  void read() {
    slot_->idle_since = steady_ns();
    slot_->idle = true;
    parser_.emplace();
    parser_->body_limit(server_->options.body_limit);
    beast::get_lowest_layer(derived().stream()).expires_after(to_steady(server_->options.read_timeout_s));
    http::async_read(derived().stream(), buffer_, *parser_,
                     [self = derived().shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream) {
      derived().finish(true);
      return;
    }
    if (closes_quietly(ec)) {
      derived().finish(false);
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
    // Every handler may echo the path or a query value: they must be text.
    std::string bad_text;
    if (const auto at = utf8_error(r.path)) {
      bad_text = "the path is not valid UTF-8 (byte " + std::to_string(*at + 1) + " once decoded)";
    }
    for (const auto& [k, v] : r.query) {
      if (bad_text.empty() && (utf8_error(k) || utf8_error(v))) bad_text = "a query parameter is not valid UTF-8";
    }
    if (!bad_text.empty()) {
      slot_->idle = false;
      respond(HttpResponse::text(400, "bad request: " + bad_text), false, req.version());
      return;
    }
    for (const auto& f : req) {
      std::string name(f.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      r.headers[name] = std::string(f.value());
    }
    r.body = std::move(req.body());
    r.peer = peer_;
    slot_->idle = false;
    const bool keep_alive = req.keep_alive();
    const unsigned version = req.version();
    // The reply may come from another thread: it comes back to this session's strand.
    auto replied = std::make_shared<std::atomic<bool>>(false);
    HttpRespond reply = [self = derived().shared_from_this(), keep_alive, version, replied](HttpResponse resp) {
      if (replied->exchange(true)) return;  // once
      asio::post(self->stream_executor(), [self, resp = std::move(resp), keep_alive, version]() mutable {
        self->respond(std::move(resp), keep_alive, version);
      });
    };
    const std::string method = r.method, path = r.path;
    try {
      server_->handler(std::move(r), reply);
    } catch (const std::exception& e) {
      spdlog::error("http handler for {} {} threw: {}", method, path, e.what());
      reply(HttpResponse::text(500, std::string("internal error: ") + e.what()));
    }
  }

  void respond(HttpResponse resp, bool keep_alive, unsigned version) {
    if (resp.hang_up) {
      derived().finish(false);
      return;
    }
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(resp.status), version);
    res->set(http::field::server, "fabric-medic");
    res->set(http::field::content_type, resp.content_type);
    for (const auto& [k, v] : resp.headers) res->set(k, v);
    res->keep_alive(keep_alive);
    res->body() = std::move(resp.body);
    res->prepare_payload();
    beast::get_lowest_layer(derived().stream()).expires_after(to_steady(server_->options.write_timeout_s));
    http::async_write(derived().stream(), *res,
                      [self = derived().shared_from_this(), res, keep_alive](beast::error_code ec, size_t) {
                        if (ec) {
                          self->finish(false);
                          return;
                        }
                        if (!keep_alive || self->server_->stopped) {
                          self->finish(true);
                          return;
                        }
                        self->read();
                      });
  }

  std::shared_ptr<HttpServer::Impl> server_;
  std::string peer_;
  std::shared_ptr<SessionSlot> slot_;

 private:
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
};

class PlainSession : public Session<PlainSession>, public std::enable_shared_from_this<PlainSession> {
 public:
  PlainSession(tcp::socket&& socket, std::shared_ptr<HttpServer::Impl> server)
      : Session(peer_of(socket), std::move(server)), stream_(std::move(socket)) {}

  void run() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read(); });
  }
  beast::tcp_stream& stream() { return stream_; }
  auto stream_executor() { return stream_.get_executor(); }
  void finish(bool) {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.socket().close(ec);
  }

 private:
  beast::tcp_stream stream_;
};

class TlsSession : public Session<TlsSession>, public std::enable_shared_from_this<TlsSession> {
 public:
  TlsSession(tcp::socket&& socket, std::shared_ptr<HttpServer::Impl> server)
      : Session(peer_of(socket), server), stream_(std::move(socket), *server->tls) {}

  void run() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->handshake(); });
  }
  beast::ssl_stream<beast::tcp_stream>& stream() { return stream_; }
  auto stream_executor() { return stream_.get_executor(); }
  void finish(bool graceful) {
    if (!graceful) {
      close_socket();
      return;
    }
    // close_notify, then close; a peer that never answers it is cut off by the deadline.
    beast::get_lowest_layer(stream_).expires_after(to_steady(server_->options.write_timeout_s));
    stream_.async_shutdown([self = shared_from_this()](beast::error_code) { self->close_socket(); });
  }

 private:
  void handshake() {
    beast::get_lowest_layer(stream_).expires_after(to_steady(server_->options.read_timeout_s));
    stream_.async_handshake(ssl::stream_base::server, [self = shared_from_this()](beast::error_code ec) {
      if (ec) {
        // Plain HTTP on the TLS port, a client that does not trust us, a scanner: not ours to fix.
        spdlog::debug("tls handshake with {} failed: {}", self->peer_, ec.message());
        self->close_socket();
        return;
      }
      self->read();
    });
  }

  void close_socket() {
    beast::error_code ec;
    beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ec);
    beast::get_lowest_layer(stream_).socket().close(ec);
  }

  beast::ssl_stream<beast::tcp_stream> stream_;
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
                          } else if (!self->make_room(ip_of(peer_of(socket)))) {
                            beast::error_code ignored;  // every connection is busy answering
                            socket.close(ignored);
                          } else if (self->tls) {
                            auto session = std::make_shared<TlsSession>(std::move(socket), self);
                            session->enlist();
                            session->run();
                          } else {
                            auto session = std::make_shared<PlainSession>(std::move(socket), self);
                            session->enlist();
                            session->run();
                          }
                          self->accept();
                        });
}

HttpServer::HttpServer(asio::io_context& io, const std::string& address, uint16_t port, HttpHandler handler,
                       HttpServerOptions options)
    : HttpServer(io, address, port,
                 AsyncHttpHandler([h = std::move(handler)](HttpRequest r, HttpRespond reply) { reply(h(r)); }),
                 std::move(options)) {}

HttpServer::HttpServer(asio::io_context& io, const std::string& address, uint16_t port,
                       AsyncHttpHandler handler, HttpServerOptions options)
    : impl_(std::make_shared<Impl>(io, std::move(handler), std::move(options))) {
  if (!impl_->options.tls_cert_file.empty() || !impl_->options.tls_key_file.empty()) {
    impl_->tls = make_tls_context(impl_->options.tls_cert_file, impl_->options.tls_key_file);
  }
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

bool HttpServer::tls() const { return impl_->tls != nullptr; }

std::string HttpServer::address() const {
  beast::error_code ec;
  return impl_->acceptor.local_endpoint(ec).address().to_string();
}

void HttpServer::start() { impl_->accept(); }

size_t HttpServer::sessions() const { return impl_->sessions.load(); }
uint64_t HttpServer::evicted() const { return impl_->evicted.load(); }

void HttpServer::stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  asio::post(impl_->acceptor.get_executor(), [impl = impl_] {
    beast::error_code ec;
    impl->acceptor.close(ec);
  });
}

}  // namespace medic
