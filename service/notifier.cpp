#include "service/notifier.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/strings.h"
#include "common/token.h"
#include "service/notify_payload.h"

namespace medic::service {

namespace {

using Steady = std::chrono::steady_clock;

Steady::duration seconds_of(double s) {
  return std::chrono::duration_cast<Steady::duration>(std::chrono::duration<double>(s));
}

// Statuses that say the bytes themselves are wrong: sending them again cannot help.
bool refuses_for_good(long status) { return status == 400 || status == 413 || status == 422; }

}  // namespace

std::vector<db::NotifyReceiver> notify_receivers(const NotifierOptions& o) {
  std::vector<db::NotifyReceiver> out;
  for (const auto& u : o.alertmanager_urls) out.push_back({"alertmanager " + db::redact_url(u), "alertmanager"});
  for (const auto& u : o.webhook_urls) out.push_back({"webhook " + db::redact_url(u), "webhook"});
  return out;
}

Notifier::Notifier(metrics::Registry& r, NotifierOptions options, const Clock& clock, std::function<bool()> leading)
    : o_(std::move(options)),
      clock_(clock),
      leading_(std::move(leading)),
      db_errors_(r.counter("medic_notify_db_errors_total", "Notifier database calls that failed (it tries again next pass).")) {
  const auto ids = notify_receivers(o_);
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool am = ids[i].kind == "alertmanager";
    const std::string& url = am ? o_.alertmanager_urls[i] : o_.webhook_urls[i - o_.alertmanager_urls.size()];
    const metrics::Labels l = {{"receiver", ids[i].name}};
    receivers_.push_back(std::make_unique<Receiver>(Receiver{
        ids[i], am ? url + "/api/v2/alerts" : url, am, 0, {}, {}, {},
        r.counter("medic_notify_delivered_total", "Notifications a receiver accepted (one per outbox event).", l),
        r.counter("medic_notify_failed_total", "Deliveries that failed and wait to be retried (per attempt).", l),
        r.counter("medic_notify_refused_total", "Outbox events a receiver refused for good (400, 413, 422): not retried.", l),
        r.counter("medic_notify_repeats_total", "Open incidents re-sent to Alertmanager.", l),
        r.gauge("medic_notify_pending", "Outbox events owed to a receiver.", l),
        r.gauge("medic_notify_oldest_pending_seconds", "Age of the oldest outbox event owed to a receiver (0: none).", l)}));
  }
}

Notifier::~Notifier() { stop(); }

void Notifier::start() {
  if (receivers_.empty()) return;
  thread_.start(o_.tick_s, [this] {
    pass();
  });
}

void Notifier::stop() { thread_.stop(); }

bool Notifier::connect() {
  if (conn_) return true;
  try {
    conn_ = std::make_unique<db::Connection>(o_.db_url, o_.db);
    return true;
  } catch (const std::exception& e) {
    ++db_errors_;
    spdlog::warn("notifier: {}", e.what());
    return false;
  }
}

void Notifier::pass() {
  if (receivers_.empty()) return;
  if (!leading_()) {
    // Written again, and every open incident repeated at once, when it leads (again).
    receivers_written_ = false;
    for (auto& r : receivers_) r->next_repeat = {};
    return;
  }
  if (!connect()) return;
  db::NotifyStore store(*conn_);
  if (!receivers_written_) {
    std::vector<db::NotifyReceiver> ids;
    for (const auto& r : receivers_) ids.push_back(r->id);
    if (auto s = store.set_receivers(ids); !s.ok()) {
      ++db_errors_;
      spdlog::warn("notifier: {}", s.error());
      return;
    }
    receivers_written_ = true;
    spdlog::info("notifier: delivering to {} receiver(s){}", ids.size(),
                 o_.external_url.empty() ? "; no --external-url: alerts carry no link to the incident's page" : "");
  }
  for (auto& r : receivers_) serve(*r, store);
  const auto now = Steady::now();
  if (now >= next_status_) {
    next_status_ = now + std::chrono::seconds(10);
    refresh_status(store);
  }
  if (now >= next_prune_) {
    next_prune_ = now + std::chrono::hours(1);
    const auto pruned = store.prune(clock_.now() - from_seconds(o_.keep_days * 86400));
    if (!pruned.ok()) {
      ++db_errors_;
    } else if (*pruned > 0) {
      spdlog::info("notifier: {} delivered notifications older than {} days deleted", *pruned, o_.keep_days);
    }
  }
}

void Notifier::failing(Receiver& r, const std::string& error) {
  ++r.failed;
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
  const auto res = http_.post(r.url, body, "application/json", opt);
  if (!res.ok()) {
    // The client's error names the URL: never with a password in it (logs, the outbox).
    error = res.error();
    for (size_t at = error.find(r.url); at != std::string::npos; at = error.find(r.url, at + 1)) {
      error.replace(at, r.url.size(), db::redact_url(r.url));
    }
    return false;
  }
  if (res->status >= 200 && res->status < 300) return true;
  permanent = refuses_for_good(res->status);
  std::string said = res->body.substr(0, 200);
  while (!said.empty() && (said.back() == '\n' || said.back() == '\r')) said.pop_back();
  error = "HTTP " + std::to_string(res->status) + (said.empty() ? "" : ": " + said);
  return false;
}

void Notifier::serve(Receiver& r, db::NotifyStore& store) {
  if (Steady::now() < r.retry_at) return;
  const Time now = clock_.now();
  // A delivery not yet recorded is recorded before anything is sent (nothing twice).
  if (!r.unrecorded.empty()) {
    if (auto s = store.delivered(r.unrecorded, now); !s.ok()) {
      ++db_errors_;
      return;
    }
    r.unrecorded.clear();
  }
  bool backlog = false;
  for (int round = 0; round < 10; ++round) {
    auto due = store.due(r.id.name, r.alertmanager ? o_.batch : std::min(o_.batch, 20));
    if (!due.ok()) {
      ++db_errors_;
      spdlog::warn("notifier: {}", due.error());
      return;
    }
    if (due->empty()) break;
    backlog = static_cast<int>(due->size()) == (r.alertmanager ? o_.batch : std::min(o_.batch, 20));
    // Alertmanager takes a batch in one POST; a webhook gets one signed POST per event.
    std::vector<std::vector<db::NotifyEvent>> sends;
    if (r.alertmanager) {
      sends.push_back(std::move(*due));
    } else {
      for (auto& e : *due) sends.push_back({std::move(e)});
    }
    for (const auto& batch : sends) {
      std::vector<int64_t> ids;
      for (const auto& e : batch) ids.push_back(e.id);
      const std::string body =
          r.alertmanager ? alertmanager_body(batch, o_.external_url, clock_.now(), from_seconds(4 * o_.repeat_s))
                         : webhook_body(batch.front(), o_.external_url);
      std::string error;
      bool permanent = false;
      if (post(r, body, ids.front(), error, permanent)) {
        r.backoff_s = 0;
        r.delivered += static_cast<double>(ids.size());
        if (auto s = store.delivered(ids, clock_.now()); !s.ok()) {
          ++db_errors_;
          r.unrecorded = ids;
          return;
        }
        continue;
      }
      if (permanent) {
        r.refused += static_cast<double>(ids.size());
        spdlog::error("notifier: {} refused event(s) {}..{} for good: {}", r.id.name, ids.front(), ids.back(), error);
        if (auto s = store.attempt_failed(ids, error, true, clock_.now()); !s.ok()) {
          ++db_errors_;
          return;
        }
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
  for (size_t i = 0; i < open->size(); i += 500) {
    const std::vector<db::NotifyEvent> chunk(open->begin() + static_cast<std::ptrdiff_t>(i),
                                             open->begin() + static_cast<std::ptrdiff_t>(std::min(open->size(), i + 500)));
    std::string error;
    bool permanent = false;
    if (!post(r, alertmanager_body(chunk, o_.external_url, clock_.now(), from_seconds(4 * o_.repeat_s)), 0, error,
              permanent)) {
      failing(r, "repeating open incidents: " + error);
      return;
    }
    r.repeats += static_cast<double>(chunk.size());
  }
  r.next_repeat = Steady::now() + seconds_of(o_.repeat_s);
}

void Notifier::refresh_status(db::NotifyStore& store) {
  const auto st = store.status();
  if (!st.ok()) {
    ++db_errors_;
    return;
  }
  const Time now = clock_.now();
  for (auto& r : receivers_) {
    for (const auto& s : *st) {
      if (s.name != r->id.name) continue;
      r->pending.set(static_cast<double>(s.pending));
      r->oldest_pending_s.set(s.oldest_pending ? std::max(0.0, seconds(now - *s.oldest_pending)) : 0.0);
    }
  }
}

}  // namespace medic::service
