#include "service/api.h"

#include "service/queue_view.h"

#include <charconv>
#include <optional>

#include "common/json.h"
#include "common/strings.h"
#include "common/time.h"

namespace medic::service {

using nlohmann::json;

namespace {

HttpResponse error(unsigned status, const std::string& what) {
  return HttpResponse::json(status, json{{"error", what}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

// The HTTP status for an error, by its kind (never by its text).
unsigned status_of(ErrorKind k) {
  switch (k) {
    case ErrorKind::invalid: return 422;
    case ErrorKind::not_found: return 404;
    case ErrorKind::conflict: return 409;
    case ErrorKind::unavailable: return 503;
    case ErrorKind::forbidden: return 403;
    case ErrorKind::internal: return 500;
  }
  return 500;
}

HttpResponse refusal(const Error& e) { return error(status_of(e.kind), e.message); }

// The queue page: plain HTML and a little JavaScript over the API above.
constexpr const char* kPage = R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>fabric-medic repair queue</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #ddd;padding:.35em .5em;text-align:left;vertical-align:top}
th{background:#f4f4f4}.approval{color:#a15c00}.capacity{color:#555}.repair{color:#0b5cad}.person{color:#b00020;font-weight:600}
button{margin-right:.3em}#msg{margin:.6em 0;min-height:1.2em}#breaker{margin:.6em 0;padding:.5em;border-radius:4px}
.open{background:#fde7e9;color:#b00020}.closed{background:#e8f5e9;color:#1b5e20}
</style></head><body>
<h1>Repair queue</h1>
<div id="breaker"></div>
<label>API token <input id="token" type="password" size="28"></label>
<label>Your name <input id="by" size="12"></label>
<div id="msg"></div>
<table><thead><tr><th>ID</th><th>Class</th><th>Link</th><th>State</th><th>Waits for</th><th>Reason</th><th></th></tr></thead>
<tbody id="rows"></tbody></table>
<script>
const $=id=>document.getElementById(id);
$('token').value=localStorage.getItem('medic-token')||'';$('by').value=localStorage.getItem('medic-by')||'';
function esc(s){return String(s).replace(/[&<>"']/g,c=>({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c]));}
async function post(path,body){
  localStorage.setItem('medic-token',$('token').value);localStorage.setItem('medic-by',$('by').value);
  const r=await fetch(path,{method:'POST',headers:{'Content-Type':'application/json','Authorization':'Bearer '+$('token').value},body:JSON.stringify(body)});
  const j=await r.json().catch(()=>({error:'HTTP '+r.status}));
  $('msg').textContent=r.ok?(j.message||'done'):('refused: '+(j.error||r.status));load();
}
function act(id,verb){const body={by:$('by').value};if(verb==='reject'){const why=prompt('Why dismiss incident '+id+'?');if(why===null)return;body.reason=why;}post('/api/incidents/'+id+'/'+verb,body);}
async function load(){
  const b=await (await fetch('/api/breaker')).json();
  $('breaker').className=b.open?'open':'closed';
  $('breaker').innerHTML=b.open?('Circuit breaker OPEN: '+esc(b.reason)+' <button onclick="post(\'/api/breaker/reset\',{by:$(\'by\').value})">reset</button>'):'Circuit breaker closed: automatic remediation on';
  const q=await (await fetch('/api/queue')).json();
  $('rows').innerHTML=q.length?q.map(i=>{
    const b=[];if(['pending_approval','blocked'].includes(i.state))b.push('approve');
    if(['repair_requested','escalated'].includes(i.state))b.push('repaired');b.push('reject');
    return '<tr><td>'+i.id+'</td><td>'+esc(i.class)+'</td><td>'+esc(i.link)+'</td><td>'+esc(i.state)+'</td><td class="'+esc(i.waits_for.replace('a ',''))+'">'+esc(i.waits_for)+'</td><td>'+esc(i.reason)+(i.approved_by?' (approved by '+esc(i.approved_by)+')':'')+'</td><td>'+b.map(v=>'<button onclick="act('+i.id+',\''+v+'\')">'+v+'</button>').join('')+'</td></tr>';}).join(''):'<tr><td colspan="7">The queue is empty.</td></tr>';
}
load();setInterval(load,5000);
</script></body></html>
)HTML";

}  // namespace

Api::Api(std::string db_url, std::string token, db::DbOptions options, size_t queue_limit,
         std::function<std::string()> db_down, double queue_wait_s)
    : db_url_(std::move(db_url)),
      token_(std::move(token)),
      options_(options),
      queue_limit_(queue_limit),
      db_down_(std::move(db_down)),
      queue_wait_s_(queue_wait_s) {
  worker_ = std::thread([this] {
    std::unique_lock lock(queue_mu_);
    while (true) {
      queue_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      Waiting w = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      auto res = handle(w.request);
      w.reply(res ? std::move(*res) : error(404, "no such path: " + w.request.path));
      lock.lock();
    }
  });
  reaper_ = std::thread([this] {
    std::unique_lock lock(queue_mu_);
    while (!stopping_) {
      queue_cv_.wait_for(lock, std::chrono::milliseconds(200));
      const auto limit = std::chrono::steady_clock::now() -
                         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(queue_wait_s_));
      while (!queue_.empty() && queue_.front().since < limit) {
        queue_.front().reply(error(503, "the database did not answer the request before it within " +
                                            format_number(queue_wait_s_) + " s; try again"));
        queue_.pop_front();
      }
    }
  });
}

Api::~Api() {
  {
    std::lock_guard lock(queue_mu_);
    stopping_ = true;
    for (auto& w : queue_) w.reply(error(503, "medicd is stopping"));
    queue_.clear();
  }
  queue_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  if (reaper_.joinable()) reaper_.join();
}

bool Api::owns(const std::string& path) { return path == "/" || path.rfind("/api/", 0) == 0; }

bool Api::submit(HttpRequest r, HttpRespond reply) {
  if (!owns(r.path)) return false;
  if (r.path == "/") {  // the page needs no database
    reply(*handle(r));
    return true;
  }
  if (db_down_) {
    if (const std::string why = db_down_(); !why.empty()) {
      reply(error(503, "the database does not answer (" + why + "); nothing can be read or decided now"));
      return true;
    }
  }
  std::lock_guard lock(queue_mu_);
  if (stopping_) {
    reply(error(503, "medicd is stopping"));
  } else if (queue_.size() >= queue_limit_) {
    reply(error(503, "busy: " + std::to_string(queue_.size()) + " requests wait for the database"));
  } else {
    queue_.push_back({std::move(r), std::move(reply), std::chrono::steady_clock::now()});
    queue_cv_.notify_all();
  }
  return true;
}

Api::Stores& Api::db() {
  if (!db_) {
    // A database that could not be reached is not tried again for every request.
    if (std::chrono::steady_clock::now() < connect_after_) throw db::DbError(connect_error_ + " (not retried yet)");
    try {
      db_ = std::make_unique<Stores>(db_url_, options_);
    } catch (const db::DbError& e) {
      connect_error_ = e.what();
      connect_after_ = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      throw;
    }
  }
  return *db_;
}

std::string Api::authorize(const HttpRequest& r) const {
  if (token_.empty()) return "decisions over HTTP are off: medicd has no --api-token; use the medic CLI";
  const std::string* h = r.header("authorization");
  const std::string want = "Bearer " + token_;
  if (h == nullptr || h->size() != want.size()) return "missing or wrong bearer token";
  unsigned char diff = 0;  // compared in full, whatever differs first: no timing hint
  for (size_t i = 0; i < want.size(); ++i) diff |= static_cast<unsigned char>((*h)[i] ^ want[i]);
  return diff == 0 ? "" : "missing or wrong bearer token";
}

std::optional<HttpResponse> Api::handle(const HttpRequest& r) {
  const std::string& p = r.path;
  if (!owns(p)) return std::nullopt;
  std::lock_guard lock(mu_);
  try {
    if (p == "/") {
      if (r.method != "GET") return error(405, "GET only");
      HttpResponse page;
      page.content_type = "text/html; charset=utf-8";
      page.body = kPage;
      return page;
    }
    if (p == "/api/queue" || p == "/api/breaker") {
      if (r.method != "GET") return error(405, p + ": GET only");
      if (p == "/api/queue") {
        auto rows = db().records.open_cases();
        if (!rows.ok()) return refusal(rows.failure());
        return HttpResponse::json(200, json_text(queue_json(*rows), 1) + "\n");
      }
      auto b = db().records.breaker();
      if (!b.ok()) return refusal(b.failure());
      return HttpResponse::json(200, json{{"open", b->open},
                                          {"reason", b->reason},
                                          {"opened_at", b->opened_at ? format_iso8601(*b->opened_at) : ""},
                                          {"reset_by", b->reset_by}}
                                             .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                                         "\n");
    }
    if (p == "/api/breaker/reset") return reset_breaker(r);
    // /api/incidents/ID/VERB
    constexpr std::string_view kPrefix = "/api/incidents/";
    if (p.rfind(kPrefix, 0) == 0) {
      const std::string rest = p.substr(kPrefix.size());
      const size_t slash = rest.find('/');
      if (slash == std::string::npos) return error(404, "no such path: " + p);
      const std::string id_text = rest.substr(0, slash);
      const std::string verb = rest.substr(slash + 1);
      int64_t id = 0;
      const auto [end, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
      if (ec != std::errc{} || end != id_text.data() + id_text.size() || id <= 0) {
        return error(400, "incident id must be a positive integer, got \"" + id_text + "\"");
      }
      if (verb != "approve" && verb != "reject" && verb != "repaired") {
        return error(404, "no such action \"" + verb + "\" (approve, reject, repaired)");
      }
      return decide(r, id, verb);
    }
    return error(404, "no such path: " + p);
  } catch (const std::exception& e) {
    db_.reset();  // reconnect next time
    return error(503, std::string("database: ") + e.what());
  }
}

namespace {

// {"by": "...", "reason": "..."}: both optional strings, nothing else.
std::optional<std::string> read_body(const std::string& body, std::string& by, std::string& reason) {
  if (body.empty()) return std::nullopt;
  auto doc = parse_json(body, "body");
  if (!doc) return doc.error();
  if (!doc->is_object()) return std::string("body: $: expected an object, got ") + json_type_name(*doc);
  for (const auto& [k, v] : doc->items()) {
    if (k != "by" && k != "reason") return "body: $: unknown key \"" + k + "\" (by, reason)";
    if (!v.is_string()) return "body: $." + k + ": expected a string, got " + json_type_name(v);
    if (v.get<std::string>().size() > 200) return "body: $." + k + ": longer than 200 characters";
    (k == "by" ? by : reason) = v.get<std::string>();
  }
  return std::nullopt;
}

}  // namespace

HttpResponse Api::decide(const HttpRequest& r, int64_t id, const std::string& verb) {
  if (r.method != "POST") return error(405, "POST only");
  if (const std::string why = authorize(r); !why.empty()) return error(token_.empty() ? 403 : 401, why);
  std::string by, reason;
  if (auto bad = read_body(r.body, by, reason)) return error(400, *bad);
  if (by.empty()) by = "api";
  const Time now = SystemClock().now();
  Status st = Ok{};
  if (verb == "approve") st = db().queue.approve_incident(id, by, now);
  if (verb == "reject") st = db().queue.dismiss_incident(id, by, reason, now);
  if (verb == "repaired") st = db().queue.mark_repaired(id, by, now);
  if (!st.ok()) return refusal(st.failure());
  return HttpResponse::json(200, json{{"id", id}, {"action", verb}, {"by", by},
                                      {"message", "incident " + std::to_string(id) + ": " + verb + " by " + by}}
                                     .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                                     "\n");
}

HttpResponse Api::reset_breaker(const HttpRequest& r) {
  if (r.method != "POST") return error(405, "POST only");
  if (const std::string why = authorize(r); !why.empty()) return error(token_.empty() ? 403 : 401, why);
  std::string by, reason;
  if (auto bad = read_body(r.body, by, reason)) return error(400, *bad);
  if (by.empty()) by = "api";
  if (auto st = db().queue.reset_breaker(SystemClock().now(), by); !st.ok()) return refusal(st.failure());
  return HttpResponse::json(200, json{{"message", "circuit breaker reset by " + by}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace medic::service
