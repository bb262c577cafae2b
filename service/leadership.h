// Who acts, watched off the poll loop. A thread of its own holds the leader lock's
// connection and a database connection of its own, checks every second (each call under a
// deadline) that the lock is still ours and that the database answers, takes the lock
// again when it was lost and is free, and publishes what it found. The poll loop only
// reads that state: it never waits on the database to learn whether it may act.
//
//   leader:   holds the lock with `epoch`; the database answered within the last check.
//   degraded: held the lock before, lost it (or the database stopped answering) and cannot
//             yet tell whether another daemon took over; keeps polling and detecting,
//             records nothing, acts on nothing.
//   standby:  another daemon holds the lock (the leader row names it).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/time.h"
#include "db/deadline.h"

namespace medic::db {
class Connection;
class LeaderLock;
class LeaderStore;
}  // namespace medic::db

namespace medic::service {

enum class Role : uint8_t { starting, leader, degraded, standby };
std::string_view to_string(Role r);

struct LeadershipState {
  Role role = Role::starting;
  int64_t epoch = 0;             // ours while leader (the last one we held otherwise)
  std::string leader;            // who leads, as the leader row says ("" unknown)
  bool db_up = false;            // the database answered the last check
  std::string db_error;          // why not
  Time checked_at{};             // the last check, whatever it found
  Time db_answered_at{};         // the last check the database answered
  Duration db_answered_mono{};   // the same on the monotonic clock (0: never answered)
};

class Leadership {
 public:
  Leadership(std::string url, std::string name, db::DbOptions options, const Clock& clock);
  ~Leadership();

  // One check now, on the caller's thread (start-up). Throws db::DbError when the
  // database cannot be reached at all.
  LeadershipState check_now();
  // The thread that checks every `interval`.
  void start(Duration interval);
  void stop();

  LeadershipState state() const;

 private:
  void check();  // under no lock: database calls
  void publish(const LeadershipState& s);

  std::string url_;
  std::string name_;
  db::DbOptions options_;
  const Clock& clock_;
  std::unique_ptr<db::LeaderLock> lock_;
  std::unique_ptr<db::Connection> conn_;
  std::unique_ptr<db::LeaderStore> leader_;
  LeadershipState mine_;  // the checker's own copy

  mutable std::mutex mu_;
  LeadershipState published_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace medic::service
