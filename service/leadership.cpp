#include "service/leadership.h"

#include <spdlog/spdlog.h>

#include "common/thread_name.h"
#include "db/connection.h"
#include "db/leader.h"

namespace medic::service {

std::string_view to_string(Role r) {
  switch (r) {
    case Role::starting: return "starting";
    case Role::leader: return "leader";
    case Role::degraded: return "degraded";
    case Role::standby: return "standby";
  }
  return "?";
}

Leadership::Leadership(std::string url, std::string name, db::DbOptions options, const Clock& clock)
    : url_(std::move(url)), name_(std::move(name)), options_(options), clock_(clock) {}

Leadership::~Leadership() { stop(); }

LeadershipState Leadership::check_now() {
  if (!lock_) lock_ = std::make_unique<db::LeaderLock>(url_, options_);
  if (!conn_) {
    conn_ = std::make_unique<db::Connection>(url_, options_);
    leader_ = std::make_unique<db::LeaderStore>(*conn_);
  }
  check();
  return state();
}

void Leadership::start(Duration interval) {
  thread_ = std::thread([this, interval] {
    name_this_thread("medic-leader");
    std::unique_lock lock(mu_);
    while (!stopping_) {
      cv_.wait_for(lock, interval, [this] { return stopping_; });
      if (stopping_) break;
      lock.unlock();
      check();
      lock.lock();
    }
  });
}

void Leadership::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

LeadershipState Leadership::state() const {
  std::lock_guard lock(mu_);
  return published_;
}

void Leadership::publish(const LeadershipState& s) {
  std::lock_guard lock(mu_);
  published_ = s;
}

void Leadership::check() {
  LeadershipState s = mine_;
  const Time now = clock_.now();
  s.checked_at = now;
  auto answered = [&] {
    s.db_up = true;
    s.db_error.clear();
    s.db_answered_at = now;
    s.db_answered_mono = clock_.monotonic();
  };
  auto unanswered = [&](const std::string& why) {
    s.db_up = false;
    s.db_error = why;
  };

  if (s.role == Role::leader) {
    if (!lock_->held()) {
      s.role = Role::degraded;
      unanswered("the leader lock's connection failed or did not answer");
      publish(s);  // at once: taking the lock again may wait on the server too
      spdlog::error("medicd {}: lost the leader lock (database connection gone or hung); keeps polling and detecting, "
                    "records and acts on nothing until it leads again",
                    name_);
    } else if (auto hb = leader_->leader_heartbeat(name_, s.epoch, now); hb.ok()) {
      answered();
    } else if (conn_->available()) {
      // The server answered: the leader row is someone else's (never while we hold the
      // lock, unless the row was edited by hand). Stop acting until it is sorted out.
      answered();
      s.role = Role::degraded;
      spdlog::error("medicd {}: {}; acts on nothing until it leads again", name_, hb.error());
    } else {
      unanswered(hb.error());
      s.role = Role::degraded;
      publish(s);
      spdlog::error("medicd {}: the database does not answer ({}); keeps polling and detecting, records and acts on "
                    "nothing until it answers",
                    name_, hb.error());
    }
  }
  if (s.role != Role::leader) {
    auto got = lock_->try_acquire();
    if (!got.ok()) {
      unanswered(got.error());
      if (s.role == Role::starting) s.role = Role::degraded;
    } else if (*got) {
      auto e = leader_->claim_leadership(name_, now);
      if (e.ok()) {
        answered();
        const bool again = s.epoch != 0;
        s.role = Role::leader;
        s.epoch = *e;
        s.leader = name_;
        spdlog::info("medicd {}: leader (epoch {}){}", name_, *e, again ? ", again" : "");
      } else {
        unanswered(e.error());
        s.role = Role::degraded;
      }
    } else {
      auto row = leader_->leader();
      if (!row.ok()) {
        unanswered(row.error());
        if (s.role == Role::starting) s.role = Role::degraded;
      } else {
        answered();
        const auto& l = *row;
        const std::string who = l ? l->daemon + " (epoch " + std::to_string(l->epoch) + ")" : "another daemon";
        if (l && l->daemon == name_ && l->epoch == s.epoch && s.epoch != 0) {
          // Our own old session still holds the lock: the server has not yet seen that its
          // connection is gone. Wait for it to let go.
          s.role = Role::degraded;
        } else {
          if (s.role != Role::standby || s.leader != who) spdlog::info("medicd {}: standby, {} leads", name_, who);
          s.role = Role::standby;
          s.leader = who;
        }
      }
    }
  }
  mine_ = s;
  publish(s);
}

}  // namespace medic::service
