// What a switch's JSON-RPC drain API answers (remediation/driver.cpp), as a lying or broken
// switch might: the harness serves each input over HTTP on loopback and calls the real
// JsonRpcDriver against it, which posts the request with libcurl and parses the answer.
// The first input byte picks the HTTP status (mostly 200) and the call (drain, undrain,
// get_state); the rest is the body of the answer.
//
// Invariants: a call succeeds only for a JSON object with a boolean result.drained, and the
// state it returns is that boolean for the interface asked about; a refusal names the
// switch and the call, is UTF-8 without control characters (it goes to logs and action
// rows) and quotes at most 200 bytes of what the switch said (each escaped to at most 4).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "common/strings.h"
#include "remediation/driver.h"
#include "tests/fuzz/fuzz_common.h"

using namespace medic;

namespace {

constexpr unsigned kStatuses[] = {200, 200, 200, 200, 200, 200, 200, 200, 200, 200,
                                  200, 200, 400, 401, 403, 404, 500, 502, 503, 418};

std::mutex answer_mu;
std::string answer;  // the whole HTTP response the server sends next

bool read_request(int fd, std::string& buf) {
  // Headers, then Content-Length bytes of body (libcurl sends both at once, or nearly).
  for (;;) {
    const size_t end = buf.find("\r\n\r\n");
    if (end != std::string::npos) {
      size_t length = 0;
      const size_t cl = buf.find("Content-Length: ");
      if (cl != std::string::npos && cl < end) length = std::stoul(buf.substr(cl + 16));
      if (buf.size() >= end + 4 + length) {
        buf.erase(0, end + 4 + length);
        return true;
      }
    }
    char chunk[4096];
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n <= 0) return false;
    buf.append(chunk, static_cast<size_t>(n));
  }
}

// A one-connection-at-a-time HTTP server on 127.0.0.1 that answers every request with
// `answer`, keeping the connection open as libcurl likes.
uint16_t start_server() {
  const int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(lfd, 16) != 0) fuzz::fail("bind/listen");
  socklen_t len = sizeof a;
  ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len);
  std::thread([lfd] {
    for (;;) {
      const int fd = ::accept(lfd, nullptr, nullptr);
      if (fd < 0) continue;
      std::string buf;
      while (read_request(fd, buf)) {
        std::string out;
        {
          std::lock_guard lock(answer_mu);
          out = answer;
        }
        size_t sent = 0;
        while (sent < out.size()) {
          const ssize_t n = ::write(fd, out.data() + sent, out.size() - sent);
          if (n <= 0) break;
          sent += static_cast<size_t>(n);
        }
      }
      ::close(fd);
    }
  }).detach();
  return ntohs(a.sin_port);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const uint16_t port = start_server();
  static remediation::JsonRpcDriver driver = [] {
    // The answers come from loopback, never through a proxy the environment names.
    for (const char* v : {"http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"}) ::unsetenv(v);
    remediation::JsonRpcOptions o;
    o.timeout_s = 5;
    o.attempts = 1;  // a 5xx is retried after a sleep otherwise
    o.backoff_s = 0;
    o.bearer_token = "fuzz-token";
    return remediation::JsonRpcDriver("rtsw0001", "http://127.0.0.1:" + std::to_string(port) + "/s/rtsw0001/rpc", o);
  }();

  const unsigned status = kStatuses[data[0] % 20];
  const int call = (data[0] / 20) % 3;
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  {
    std::lock_guard lock(answer_mu);
    answer = "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/json\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body;
  }
  const std::string interface = "eth5";
  const char* method = call == 0 ? "interface.drain" : call == 1 ? "interface.undrain" : "interface.get_state";
  const auto r = call == 0 ? driver.drain(interface) : call == 1 ? driver.undrain(interface) : driver.get_state(interface);

  const auto doc = nlohmann::json::parse(body, nullptr, false);
  if (r.ok()) {
    fuzz::check(status == 200, "a call succeeded on HTTP", std::to_string(status));
    fuzz::check(doc.is_object() && doc.contains("result") && doc["result"].is_object() &&
                    doc["result"].contains("drained") && doc["result"]["drained"].is_boolean(),
                "a call succeeded without a boolean result.drained");
    fuzz::check(r->interface == interface, "the state is of another interface", r->interface);
    fuzz::check(r->drained == doc["result"]["drained"].get<bool>(), "the state is not what the switch said");
    return 0;
  }
  const std::string& e = r.error();
  const std::string where = std::string("rtsw0001 ") + method + "(" + interface + "): ";
  fuzz::check(e.rfind(where, 0) == 0, "a refusal without the switch and the call", e);
  fuzz::check(!utf8_error(e).has_value(), "a refusal that is not UTF-8", e);
  for (const char c : e) fuzz::check(static_cast<unsigned char>(c) >= 0x20, "a control character in a refusal", e);
  fuzz::check(e.size() <= where.size() + 900, "a refusal quoting too much of the answer", e);
  return 0;
}
