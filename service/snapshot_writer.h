// Stores medicd's snapshots on a thread and a database connection of its own. The poll
// loop captures a snapshot (it reads the loop's own state) and hands it over; encoding it
// as JSON and the INSERT run here. Stored on the poll loop, one after another, the up to
// 32 snapshots of the poll that opened a wave of incidents made its record stage take 0.5
// to 1 s (bench/load at 1% in waves; docs/benchmarks.md).
//
// In order (an action's snapshot before the drain is stored before the one after it), and
// bounded: past `max_queued` waiting (the database slow, hung or gone), a snapshot is
// dropped and counted in medic_snapshots_unstored_total, and the poll is never held. One
// that fails is counted the same way, not retried: the incident or action it belongs to is
// recorded by the poll loop whatever becomes of its snapshot. The first snapshot not
// stored is logged with the reason, the rest quietly until one is stored again (then how
// many were not). After a database failure, connecting included, the next ones fail at
// once while the connection's backoff runs (db/connection.h), so a hung database holds the
// writer one deadline, not one per snapshot. What is still queued when medicd stops is
// stored before it exits, if the database answers.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/metrics.h"
#include "db/connection.h"
#include "snapshot/snapshot.h"

namespace medic::service {

struct SnapshotWriterOptions {
  std::string db_url;
  db::DbOptions db;
  size_t max_queued = 256;  // waiting to be stored, at most
};

class SnapshotWriter {
 public:
  SnapshotWriter(metrics::Registry& registry, SnapshotWriterOptions options);
  ~SnapshotWriter();  // stop()
  SnapshotWriter(const SnapshotWriter&) = delete;
  SnapshotWriter& operator=(const SnapshotWriter&) = delete;

  void start();
  // Queues `s` to be stored; false (counted and logged) when the queue is full or the
  // writer is not running.
  bool submit(snapshot::Snapshot s);
  // Stores what is queued, then returns with the thread stopped.
  void stop();
  // Snapshots queued or being stored now (medic_snapshots_queued).
  size_t queued() const;

 private:
  void serve();
  void store(const snapshot::Snapshot& s);
  void unstored(const snapshot::Snapshot& s, const std::string& why);
  void stored();

  SnapshotWriterOptions o_;
  metrics::Counter stored_, unstored_;
  metrics::Gauge queued_gauge_;
  std::unique_ptr<db::Connection> conn_;  // the thread's own, connected on first use
  // After a failure to connect, none is tried again before retry_at_ (the backoff doubles
  // from db.retry_min_s to db.retry_max_s, as the connection's own).
  std::chrono::steady_clock::time_point retry_at_{};
  double backoff_s_ = 0;
  std::mutex log_mu_;
  uint64_t quiet_ = 0;  // not stored since the last one stored (the first logged), under log_mu_
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<snapshot::Snapshot> queue_;  // under mu_
  size_t busy_ = 0;                       // being stored (0 or 1), under mu_
  bool running_ = false, stopping_ = false;  // under mu_
  std::thread thread_;
};

}  // namespace medic::service
