// Telling people: delivers the notification outbox (db/notify_store.h) to Alertmanager's v2
// API and to generic webhooks signed with HMAC-SHA256, on a thread and a database
// connection of its own, so that a slow receiver or database never delays the poll loop.
//
// Per receiver, events go out in order (an incident's "resolved" never overtakes its
// "opened"); a receiver that fails (no answer, a refused connection, a TLS or auth error,
// any status but 2xx) is retried with backoff doubling up to `retry_max_s`, its later events
// waiting behind the first: a misconfigured receiver loses nothing. Only an event the
// receiver says it cannot take (400, 413, 422: the bytes themselves) is recorded as refused
// and skipped.
// Only the leading medicd delivers (asked before every POST). Delivery is at least once: an
// event is sent again only if medicd stops between a receiver's answer and the database
// recording it, or the database loses that record in a crash of its own (a delivery medicd
// could not record is recorded before anything else is sent); X-Medic-Event-Id lets a
// webhook receiver drop the repeat, and Alertmanager merges a repeated alert by itself.
// A batch Alertmanager refuses (400, 413, 422) is split in halves until the one alert it
// refuses is found: only that one is recorded as refused.
// Open incidents are re-sent to Alertmanager every `repeat_s`, each firing until four
// repeats from now, so an Alertmanager that restarted (and forgot) learns them again.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <memory>
#include <string>
#include <vector>

#include "common/http_client.h"
#include "common/metrics.h"
#include "common/periodic.h"
#include "common/time.h"
#include "db/connection.h"
#include "db/notify_store.h"

namespace medic::service {

struct NotifierOptions {
  std::string db_url;
  db::DbOptions db;
  std::vector<std::string> alertmanager_urls;  // base URLs: POST URL/api/v2/alerts
  std::vector<std::string> webhook_urls;
  std::string webhook_secret;  // HMAC-SHA256 key of the webhooks' X-Medic-Signature
  std::string external_url;    // where people's browsers reach medicd's page ("" : no links)
  double repeat_s = 60;        // open incidents re-sent to Alertmanager this often
  double retry_max_s = 30;     // longest wait between retries of a failing receiver
  double timeout_s = 5;        // one delivery
  double tick_s = 1;           // between passes
  int batch = 100;             // events per Alertmanager POST (and per pass of a webhook)
  double keep_days = 7;        // delivered and refused rows are deleted after this
};

// The receivers `o` configures, as the outbox and the metrics name them: the kind, the
// scheme, host and port, and when the URL holds more (a path, a query, credentials: where
// chat webhooks keep their tokens) the first 8 hex digits of its SHA-256 instead of it.
// A URL given twice is one receiver.
std::vector<db::NotifyReceiver> notify_receivers(const NotifierOptions& o);

class Notifier {
 public:
  // `leading`: whether this medicd leads (only the leader delivers); asked before every POST.
  Notifier(metrics::Registry& registry, NotifierOptions options, const Clock& clock, std::function<bool()> leading);
  ~Notifier();
  // A thread per receiver (a slow one holds only itself), each with its own database
  // connection; with none configured, one thread that disables the receivers the database
  // still lists.
  void start();
  void stop();
  // One pass over every receiver on the caller's thread (what the threads do each tick; so
  // can a test).
  void pass();

 private:
  struct Receiver;
  bool ready(Receiver& r);
  void serve(Receiver& r);
  bool post(Receiver& r, const std::string& body, int64_t event_id, std::string& error, bool& permanent);
  void failing(Receiver& r, const std::string& error);
  void refresh_status(Receiver& r, db::NotifyStore& store, bool leading);
  bool write_receivers(db::Connection& c);

  NotifierOptions o_;
  const Clock& clock_;
  std::function<bool()> leading_;
  std::vector<std::unique_ptr<Receiver>> receivers_;
  std::unique_ptr<Receiver> none_;  // with no receiver configured: only disables the old ones
  std::mutex write_mu_;
  bool receivers_written_ = false;  // under write_mu_
  std::atomic<bool> stopping_{false};
  metrics::Counter db_errors_;
};

}  // namespace medic::service
