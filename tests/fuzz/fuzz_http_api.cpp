// Bytes from a TCP connection to medicd's HTTP port, read as common/http_server.cpp reads
// them (a Boost.Beast request_parser<string_body> with the server's body limit and Beast's
// default header limit; on a kept-alive connection the next request from the same bytes),
// turned into an HttpRequest as Session::on_read does (path percent-decoded, the query
// split by parse_query, both refused unless UTF-8, header names lower-cased), then given to
// the API as medicd's handler does: service::Api::handle, which routes (path, method),
// checks the bearer token, the role and the body. No database runs: the API's store is a
// PostgreSQL socket that does not exist, so everything behind a user's token answers 503;
// the layers a request goes through there are fuzzed as well, on the same request: the
// endpoint's own body checks (service::check_body: its fields, their types, the required
// ones, the size and Content-Type, as handle makes them for an authorised caller), the
// body's JSON (parse_json), the token's form (parse_token), the time and report arguments
// of the query (parse_time_arg, slo::parse_report_query).
//
// Invariants: every answer is a known status; API answers are JSON {"error", "status"}
// with the status of the response; nothing without a token gets past 401.
//
// Session::on_read's conversion is private to http_server.cpp, so the few lines of it are
// repeated below (keep them in step).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

#include "common/asio.h"
#include "common/http_server.h"
#include "common/json.h"
#include "common/strings.h"
#include "common/time.h"
#include "common/token.h"
#include "service/api.h"
#include "slo/report.h"
#include "tests/fuzz/fuzz_common.h"

using namespace medic;

namespace {

service::Api& api() {
  static service::Api* a = [] {
    service::ApiSetup s;
    s.db_url = "postgresql:///medic_fuzz?host=/nonexistent/medic-fuzz";
    s.db_options.connect_timeout_s = 1;
    s.bootstrap_token = "fuzz-bootstrap-token-0123456789";
    return new service::Api(s);  // lives as long as the process, its threads with it
  }();
  return *a;
}

// What Session::on_read answers itself (400) instead of calling the handler, or the request.
bool to_request(http::request<http::string_body>& req, HttpRequest& r) {
  r.method = std::string(req.method_string());
  r.target = std::string(req.target());
  const size_t qm = r.target.find('?');
  r.path = url_decode(std::string_view(r.target).substr(0, qm));
  if (qm != std::string::npos) r.query = parse_query(std::string_view(r.target).substr(qm + 1));
  if (utf8_error(r.path)) return false;
  for (const auto& [k, v] : r.query) {
    if (utf8_error(k) || utf8_error(v)) return false;
  }
  for (const auto& f : req) {
    std::string name(f.name_string());
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = std::string(f.value());
  }
  r.body = std::move(req.body());
  r.peer = "192.0.2.9:40000";
  return true;
}

// A JSON answer is an object; an error one carries its error and its status.
void check_json_answer(const HttpResponse& res) {
  if (res.content_type != "application/json") return;
  const auto j = nlohmann::json::parse(res.body, nullptr, false);
  fuzz::check(!j.is_discarded() && j.is_object(), "a JSON answer that is not a JSON object", res.body);
  if (res.status >= 400) {
    fuzz::check(j.contains("error") && j["error"].is_string() && j.value("status", 0u) == res.status,
                "an error answer without its error and status", res.body);
  }
}

void check_answer(const HttpRequest& r, const HttpResponse& res) {
  static const std::set<unsigned> known = {200, 204, 401, 403, 404, 405, 409, 413, 415, 422, 500, 503};
  fuzz::check(known.count(res.status) == 1, "unexpected status", std::to_string(res.status));
  fuzz::check(res.status != 500, "the API answered 500 (internal error)", r.target);
  check_json_answer(res);
  const std::string* auth = r.header("authorization");
  if (r.path.rfind("/api/", 0) == 0 && (auth == nullptr || auth->size() <= 7)) {
    fuzz::check(res.status == 401 || res.status == 404 || res.status == 405, "no token, yet not 401/404/405",
                std::to_string(res.status));
  }
}

// The parsing and validation layers the handlers behind the database use.
void parse_layers(const HttpRequest& r, Time now) {
  if (!r.body.empty()) {
    const auto doc = parse_json(r.body, "body");
    if (!doc.ok()) fuzz::check(doc.error().rfind("body: ", 0) == 0, "a JSON error without its source", doc.error());
  }
  if (const std::string* h = r.header("authorization"); h != nullptr && h->size() > 7) {
    const auto t = parse_token(trim(std::string_view(*h).substr(7)));
    if (t) fuzz::check(t->id > 0 && !t->secret.empty(), "a token with no id or secret");
  }
  for (const auto& [k, v] : r.query) {
    if (const auto t = parse_time_arg(v, now)) (void)format_iso8601(*t);
  }
  const auto q = slo::parse_report_query(r.query, now);
  if (q.ok()) fuzz::check(q->window.from < q->window.to, "a report window that ends before it starts");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Time now = from_unix_seconds(1.8e9);
  const HttpServerOptions server;  // medicd's server keeps the default body limit
  size_t used = 0;
  for (int n = 0; n < 4; ++n) {  // requests on one kept-alive connection
    http::request_parser<http::string_body> parser;
    parser.body_limit(server.body_limit);
    beast::error_code ec;
    while (!parser.is_done()) {
      const size_t got = parser.put(asio::buffer(data + used, size - used), ec);
      used += got;
      if (ec == http::error::need_more) {
        ec = {};
        if (got == 0) {  // the connection ends here
          if (parser.got_some()) parser.put_eof(ec);
          else ec = http::error::end_of_stream;
          break;
        }
        continue;
      }
      if (ec) break;
      if (got == 0) {  // nothing taken and nothing asked for: the bytes have run out
        if (parser.got_some()) parser.put_eof(ec);
        else ec = http::error::end_of_stream;
        break;
      }
    }
    if (ec || !parser.is_done()) return 0;  // answered 400/413 by the server, or nothing to answer
    auto& req = parser.get();
    const bool keep_alive = req.keep_alive();
    HttpRequest r;
    if (!to_request(req, r)) return 0;  // answered 400 by the server
    parse_layers(r, now);
    if (service::Api::owns(r.path)) {
      if (const auto bad = service::check_body(r)) {
        fuzz::check(bad->status == 413 || bad->status == 415 || bad->status == 422, "a body refused with another status",
                    std::to_string(bad->status));
        check_json_answer(*bad);
      }
    }
    if (r.path != "/healthz" && r.path != "/metrics" && service::Api::owns(r.path)) {
      const auto res = api().handle(r);
      fuzz::check(res.has_value(), "the API owns a path it does not answer", r.path);
      check_answer(r, *res);
    }
    if (!keep_alive || used >= size) break;
  }
  return 0;
}
