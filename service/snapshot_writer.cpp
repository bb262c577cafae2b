#include "service/snapshot_writer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "common/thread_name.h"
#include "db/snapshot_store.h"

namespace medic::service {

SnapshotWriter::SnapshotWriter(metrics::Registry& r, SnapshotWriterOptions options)
    : o_(std::move(options)),
      stored_(r.counter("medic_snapshots_total", "Snapshots stored.")),
      unstored_(r.counter("medic_snapshots_unstored_total",
                          "Snapshots taken but not stored: the writer's queue was full (the database slow or "
                          "down) or the database refused one (logged).")),
      queued_gauge_(r.gauge("medic_snapshots_queued", "Snapshots waiting to be stored or being stored now.")) {}

SnapshotWriter::~SnapshotWriter() { stop(); }

void SnapshotWriter::start() {
  std::lock_guard lock(mu_);
  if (running_) return;
  running_ = true;
  stopping_ = false;
  thread_ = std::thread([this] { serve(); });
}

bool SnapshotWriter::submit(snapshot::Snapshot s) {
  std::unique_lock lock(mu_);
  if (!running_ || stopping_ || queue_.size() >= o_.max_queued) {
    const bool full = running_ && !stopping_;
    lock.unlock();
    unstored(s, full ? "the writer's queue is full (" + std::to_string(o_.max_queued) + " waiting)"
                     : std::string("the writer is not running"));
    return false;
  }
  queue_.push_back(std::move(s));
  queued_gauge_.set(static_cast<double>(queue_.size() + busy_));
  lock.unlock();
  cv_.notify_one();
  return true;
}

void SnapshotWriter::stop() {
  {
    std::lock_guard lock(mu_);
    if (!running_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  running_ = false;
}

size_t SnapshotWriter::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size() + busy_;
}

void SnapshotWriter::serve() {
  name_this_thread("medic-snapshot");
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, everything stored
    snapshot::Snapshot s = std::move(queue_.front());
    queue_.pop_front();
    busy_ = 1;
    lock.unlock();
    store(s);
    lock.lock();
    busy_ = 0;
    queued_gauge_.set(static_cast<double>(queue_.size()));
  }
}

void SnapshotWriter::store(const snapshot::Snapshot& s) {
  // Connected on first use, and again after a failure to connect once its backoff passed:
  // medicd starts whatever the database does.
  if (!conn_) {
    const auto now = std::chrono::steady_clock::now();
    if (now < retry_at_) {
      unstored(s, fmt::format("the database could not be reached; trying again in {:.1f} s",
                              std::chrono::duration<double>(retry_at_ - now).count()));
      return;
    }
    try {
      conn_ = std::make_unique<db::Connection>(o_.db_url, o_.db);
      backoff_s_ = 0;
    } catch (const std::exception& e) {
      backoff_s_ = backoff_s_ == 0 ? o_.db.retry_min_s : std::min(o_.db.retry_max_s, backoff_s_ * 2);
      retry_at_ = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                         std::chrono::duration<double>(backoff_s_));
      unstored(s, e.what());
      return;
    }
  }
  if (auto id = db::SnapshotStore(*conn_).write_snapshot(s); id.ok()) {
    stored();
  } else {
    unstored(s, id.error());
  }
}

void SnapshotWriter::stored() {
  ++stored_;
  std::lock_guard lock(log_mu_);
  if (quiet_ > 0) {
    spdlog::info("snapshots stored again; {} before this one were not (medic_snapshots_unstored_total)", quiet_);
  }
  quiet_ = 0;
}

void SnapshotWriter::unstored(const snapshot::Snapshot& s, const std::string& why) {
  ++unstored_;
  std::lock_guard lock(log_mu_);
  if (quiet_++ > 0) return;  // said once, until one is stored again
  spdlog::error("snapshot of {} ({}, {}) not stored: {}; the next ones not stored are counted in "
                "medic_snapshots_unstored_total, not logged, until one is",
                s.link.empty() ? std::string("the fabric") : s.link, s.scope, s.reason, why);
}

}  // namespace medic::service
