// Leadership among several medicd: a PostgreSQL session advisory lock held on a connection
// of its own. The server releases it when that connection ends (a crashed or killed
// daemon), so another daemon can take over at once. Every call has a deadline
// (db/deadline.h): a hung server makes the lock look lost, never a caller wait forever.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/result.h"
#include "common/time.h"
#include "db/connection.h"
#include "db/deadline.h"

namespace medic::db {

class LeaderLock {
 public:
  // Connects; throws DbError naming the (redacted) URL.
  explicit LeaderLock(const std::string& url, DbOptions options = {});
  ~LeaderLock();
  LeaderLock(const LeaderLock&) = delete;
  LeaderLock& operator=(const LeaderLock&) = delete;

  // Takes the lock if nobody holds it; true when this process holds it now. Reconnects
  // first when the lock's connection was lost (the lock went with it).
  Result<bool> try_acquire();
  // Still held: the lock's connection is alive and the server lists the lock as ours.
  bool held();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The leader row: who leads with which epoch. Taking the lead raises the epoch, and every
// action is fenced by it (RemediationRecords::begin_action).
struct LeaderRow {
  std::string daemon;
  int64_t epoch = 0;
  Time since{}, heartbeat{};
};

class LeaderStore {
 public:
  explicit LeaderStore(Connection& c) : c_(c) {}

  // A new epoch for `daemon`.
  Result<int64_t> claim_leadership(const std::string& daemon, Time at);
  Status leader_heartbeat(const std::string& daemon, int64_t epoch, Time at);
  Result<std::optional<LeaderRow>> leader();

 private:
  Connection& c_;
};

}  // namespace medic::db
