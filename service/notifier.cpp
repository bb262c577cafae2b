#include "service/notifier.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "common/strings.h"
#include "common/token.h"
#include "common/url.h"
#include "service/notify_payload.h"

namespace medic::service {

namespace {

using Steady = std::chrono::steady_clock;

Steady::duration seconds_of(double s) {
  return std::chrono::duration_cast<Steady::duration>(std::chrono::duration<double>(s));
}

// Statuses that say the bytes themselves are wrong: sending them again cannot help.
bool refuses_for_good(long status) { return status == 400 || status == 413 || status == 422; }

// "https://user:pw@hooks.example.net/services/T0/B0/XYZ?x=1" -> "https://hooks.example.net #1a2b3c4d"
std::string receiver_name(const std::string& kind, const std::string& url) {
  const UrlAuthority a = url_authority(url, url.find("://"), "/?#");
  const bool credentials = a.at != std::string::npos;
  const size_t host = credentials ? a.at + 1 : a.start;
  std::string name = kind + " " + url.substr(0, a.start) + url.substr(host, a.end - host);
  if (credentials || a.end < url.size()) {
    static const char* kHex = "0123456789abcdef";
    const std::string digest = token_hash("", url);
    name += " #";
    for (size_t i = 0; i < 4; ++i) {
      name += kHex[static_cast<unsigned char>(digest[i]) >> 4];
      name += kHex[static_cast<unsigned char>(digest[i]) & 15];
    }
  }
  return name;
}

}  // namespace

struct Notifier::Receiver {
  db::NotifyReceiver id;
  std::string url;  // where to POST
  bool alertmanager = false;
  std::unique_ptr<db::Connection> conn;  // its own, connected on first use
  HttpClient http;
  double backoff_s = 0;
  Steady::time_point retry_at{}, next_repeat{}, next_status{}, next_prune{};
  size_t batch = 1;                 // events per POST now: halved while a batch is refused
  std::vector<int64_t> unrecorded;  // delivered, not yet recorded as delivered
  bool leading = false;             // at its last pass
  std::unique_ptr<metrics::Counter> delivered, failed, refused, repeats;
  std::unique_ptr<metrics::Gauge> pending, oldest_pending_s;
  Periodic thread;
};

namespace {

// The receivers `o` configures, each with its URL as given: a URL given twice is one receiver.
std::vector<std::pair<db::NotifyReceiver, std::string>> configured(const NotifierOptions& o) {
  std::vector<std::pair<db::NotifyReceiver, std::string>> out;
  std::set<std::string> seen;
  auto add = [&](const std::string& kind, const std::string& url) {
    db::NotifyReceiver r{receiver_name(kind, url), kind};
    if (seen.insert(r.name).second) out.emplace_back(std::move(r), url);
  };
  for (const auto& u : o.alertmanager_urls) add("alertmanager", u);
  for (const auto& u : o.webhook_urls) add("webhook", u);
  return out;
}

}  // namespace

std::vector<db::NotifyReceiver> notify_receivers(const NotifierOptions& o) {
  std::vector<db::NotifyReceiver> out;
  for (auto& [r, url] : configured(o)) out.push_back(std::move(r));
  return out;
}

Notifier::Notifier(metrics::Registry& r, NotifierOptions options, const Clock& clock, std::function<bool()> leading)
    : o_(std::move(options)),
      clock_(clock),
      leading_(std::move(leading)),
      db_errors_(r.counter("medic_notify_db_errors_total", "Notifier database calls that failed (it tries again next pass).")) {
  for (auto& [id, url] : configured(o_)) {
    auto rec = std::make_unique<Receiver>();
    rec->id = std::move(id);
    rec->alertmanager = rec->id.kind == "alertmanager";
    rec->url = rec->alertmanager ? url + "/api/v2/alerts" : url;
    rec->batch = rec->alertmanager ? static_cast<size_t>(std::max(1, o_.batch)) : 1;
    const metrics::Labels l = {{"receiver", rec->id.name}};
    auto counter = [&](const char* name, const char* help) { return std::make_unique<metrics::Counter>(r.counter(name, help, l)); };
    auto gauge = [&](const char* name, const char* help) { return std::make_unique<metrics::Gauge>(r.gauge(name, help, l)); };
    rec->delivered = counter("medic_notify_delivered_total", "Notifications a receiver accepted (one per outbox event).");
    rec->failed = counter("medic_notify_failed_total", "Deliveries that failed and wait to be retried (per attempt).");
    rec->refused = counter("medic_notify_refused_total", "Outbox events a receiver refused for good (400, 413, 422): not retried.");
    rec->repeats = counter("medic_notify_repeats_total", "Open incidents re-sent to Alertmanager.");
    rec->pending = gauge("medic_notify_pending", "Outbox events owed to a receiver (0 while this medicd does not lead).");
    rec->oldest_pending_s = gauge("medic_notify_oldest_pending_seconds",
                                  "Age of the oldest outbox event owed to a receiver (0: none, or this medicd does not lead).");
    receivers_.push_back(std::move(rec));
  }
  if (receivers_.empty()) none_ = std::make_unique<Receiver>();
}

Notifier::~Notifier() { stop(); }

void Notifier::start() {
  stopping_ = false;
  for (auto& r : receivers_) {
    Receiver* rec = r.get();
    rec->thread.start(o_.tick_s, [this, rec] { serve(*rec); }, "medic-notify");
  }
  if (none_) none_->thread.start(std::max(o_.tick_s, 5.0), [this] { ready(*none_); }, "medic-notify");
}

void Notifier::stop() {
  stopping_ = true;
  for (auto& r : receivers_) r->thread.stop();
  if (none_) none_->thread.stop();
}

void Notifier::pass() {
  if (none_) ready(*none_);
  for (auto& r : receivers_) serve(*r);
}

// Whether `r` may deliver now: this medicd leads, r's connection is up, and the receivers
// the outbox writes rows for are the ones configured.
bool Notifier::ready(Receiver& r) {
  const bool leading = leading_();
  if (!leading) {
    if (r.leading) {
      // Not leading (any more): another medicd delivers. Written again, and every open
      // incident repeated at once, when this one leads again.
      std::lock_guard lock(write_mu_);
      receivers_written_ = false;
    }
    r.leading = false;
    r.next_repeat = {};
    if (r.pending) {
      r.pending->set(0);
      r.oldest_pending_s->set(0);
    }
    return false;
  }
  r.leading = true;
  if (!r.conn) {
    try {
      r.conn = std::make_unique<db::Connection>(o_.db_url, o_.db);
    } catch (const std::exception& e) {
      ++db_errors_;
      spdlog::warn("notifier: {}", e.what());
      return false;
    }
  }
  return write_receivers(*r.conn);
}

bool Notifier::write_receivers(db::Connection& c) {
  std::lock_guard lock(write_mu_);
  if (receivers_written_) return true;
  std::vector<db::NotifyReceiver> ids;
  for (const auto& r : receivers_) ids.push_back(r->id);
  if (auto s = db::NotifyStore(c).set_receivers(ids); !s.ok()) {
    ++db_errors_;
    spdlog::warn("notifier: {}", s.error());
    return false;
  }
  receivers_written_ = true;
  if (!ids.empty()) {
    spdlog::info("notifier: delivering to {} receiver(s){}", ids.size(),
                 o_.external_url.empty() ? "; no --external-url: alerts carry no link to the incident's page"
                                         : "; alerts link to " + o_.external_url + "/incidents/ID");
  }
  return true;
}

void Notifier::failing(Receiver& r, const std::string& error) {
  ++*r.failed;
  r.backoff_s = r.backoff_s == 0 ? 1 : std::min(o_.retry_max_s, r.backoff_s * 2);
  r.retry_at = Steady::now() + seconds_of(r.backoff_s);
  spdlog::warn("notifier: {}: {}; retrying in {} s", r.id.name, error, format_number(r.backoff_s));
}

bool Notifier::post(Receiver& r, const std::string& body, int64_t event_id, std::string& error, bool& permanent) {
  HttpCallOptions opt;
  opt.timeout_s = o_.timeout_s;
  opt.connect_timeout_s = std::min(o_.timeout_s, 2.0);
  if (!r.alertmanager) {
    opt.headers.emplace_back("X-Medic-Event-Id", std::to_string(event_id));
    opt.headers.emplace_back("X-Medic-Signature", hmac_sha256_signature(o_.webhook_secret, body));
  }
  permanent = false;
  const auto res = r.http.post(r.url, body, "application/json", opt);
  if (!res.ok()) {
    // The client's error names the URL: never with what it may hold (logs, the outbox).
    error = res.error();
    for (size_t at = error.find(r.url); at != std::string::npos; at = error.find(r.url, at + 1)) {
      error.replace(at, r.url.size(), r.id.name);
    }
    return false;
  }
  if (res->status >= 200 && res->status < 300) return true;
  permanent = refuses_for_good(res->status);
  std::string said = res->body.substr(0, 200);
  while (!said.empty() && std::isspace(static_cast<unsigned char>(said.back()))) said.pop_back();
  said = escape_text(said);
  error = "HTTP " + std::to_string(res->status) + (said.empty() ? "" : ": " + said);
  return false;
}

void Notifier::serve(Receiver& r) {
  const bool leading = ready(r);
  if (r.conn) {
    db::NotifyStore store(*r.conn);
    refresh_status(r, store, leading);
  }
  if (!leading || Steady::now() < r.retry_at) return;
  db::NotifyStore store(*r.conn);
  const Time now = clock_.now();
  // A delivery not yet recorded is recorded before anything is sent (nothing twice).
  if (!r.unrecorded.empty()) {
    if (auto s = store.delivered(r.unrecorded, now); !s.ok()) {
      ++db_errors_;
      return;
    }
    r.unrecorded.clear();
  }
  const size_t full = r.alertmanager ? static_cast<size_t>(std::max(1, o_.batch)) : 20;
  bool backlog = false;
  for (int round = 0; round < 10; ++round) {
    auto due = store.due(r.id.name, static_cast<int>(full));
    if (!due.ok()) {
      ++db_errors_;
      spdlog::warn("notifier: {}", due.error());
      return;
    }
    if (due->empty()) break;
    backlog = due->size() == full;
    // Alertmanager takes a batch in one POST; a webhook gets one signed POST per event.
    for (size_t i = 0; i < due->size();) {
      if (stopping_ || !leading_()) return;  // another medicd may deliver from here on
      const size_t n = std::min(r.batch, due->size() - i);
      const std::vector<db::NotifyEvent> batch(due->begin() + static_cast<std::ptrdiff_t>(i),
                                               due->begin() + static_cast<std::ptrdiff_t>(i + n));
      std::vector<int64_t> ids;
      for (const auto& e : batch) ids.push_back(e.id);
      const std::string body =
          r.alertmanager ? alertmanager_body(batch, o_.external_url, clock_.now(), from_seconds(4 * o_.repeat_s))
                         : webhook_body(batch.front(), o_.external_url);
      std::string error;
      bool permanent = false;
      if (post(r, body, ids.front(), error, permanent)) {
        r.backoff_s = 0;
        if (r.alertmanager) r.batch = std::min(full, r.batch * 2);  // back to whole batches
        *r.delivered += static_cast<double>(ids.size());
        if (auto s = store.delivered(ids, clock_.now()); !s.ok()) {
          ++db_errors_;
          r.unrecorded = ids;
          return;
        }
        i += n;
        continue;
      }
      if (permanent && n > 1) {
        // Which of them? Halves, until the one it refuses is alone.
        r.batch = std::max<size_t>(1, n / 2);
        continue;
      }
      if (permanent) {
        ++*r.refused;
        spdlog::error("notifier: {} refused event {} for good: {}", r.id.name, ids.front(), error);
        if (auto s = store.attempt_failed(ids, error, true, clock_.now()); !s.ok()) {
          ++db_errors_;
          return;
        }
        i += n;
        continue;
      }
      if (auto s = store.attempt_failed({ids.front()}, error, false, clock_.now()); !s.ok()) ++db_errors_;
      failing(r, error);
      return;
    }
    if (!backlog) break;
  }
  // Open incidents again, once nothing older is owed (a repeat tells the state as it is now).
  if (!r.alertmanager || backlog || Steady::now() < r.next_repeat) return;
  const auto open = store.open_incidents(r.id.name, clock_.now());
  if (!open.ok()) {
    ++db_errors_;
    return;
  }
  for (size_t i = 0; i < open->size();) {
    if (stopping_ || !leading_()) return;
    const size_t n = std::min(std::max<size_t>(r.batch, 1) * 5, open->size() - i);
    const std::vector<db::NotifyEvent> chunk(open->begin() + static_cast<std::ptrdiff_t>(i),
                                             open->begin() + static_cast<std::ptrdiff_t>(i + n));
    std::string error;
    bool permanent = false;
    if (!post(r, alertmanager_body(chunk, o_.external_url, clock_.now(), from_seconds(4 * o_.repeat_s)), 0, error,
              permanent)) {
      if (permanent && n > 1) {
        r.batch = std::max<size_t>(1, r.batch / 2);  // smaller chunks (a proxy's body limit)
        continue;
      }
      failing(r, "repeating open incidents: " + error);
      return;
    }
    *r.repeats += static_cast<double>(n);
    i += n;
  }
  r.next_repeat = Steady::now() + seconds_of(o_.repeat_s);
}

void Notifier::refresh_status(Receiver& r, db::NotifyStore& store, bool leading) {
  const auto now = Steady::now();
  if (!leading || now < r.next_status) return;
  r.next_status = now + std::chrono::seconds(10);
  const auto st = store.status(r.id.name);
  if (!st.ok()) {
    ++db_errors_;
    return;
  }
  for (const auto& s : *st) {
    r.pending->set(static_cast<double>(s.pending));
    r.oldest_pending_s->set(s.oldest_pending ? std::max(0.0, seconds(clock_.now() - *s.oldest_pending)) : 0.0);
  }
  // One receiver's thread prunes what every receiver is done with.
  if (&r != receivers_.front().get() || now < r.next_prune) return;
  r.next_prune = now + std::chrono::hours(1);
  const auto pruned = store.prune(clock_.now() - from_seconds(o_.keep_days * 86400));
  if (!pruned.ok()) {
    ++db_errors_;
  } else if (*pruned > 0) {
    spdlog::info("notifier: {} delivered notifications older than {} days deleted", *pruned, o_.keep_days);
  }
}

}  // namespace medic::service
