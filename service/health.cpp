#include "service/health.h"

#include <cmath>

#include "common/strings.h"

namespace medic::service {

Health judge_health(const HealthFacts& f) {
  const LeadershipState& l = f.leadership;
  const double since = f.since_last_cycle_s;
  const std::string cycle =
      since < 0 ? "no poll cycle finished yet" : "last poll cycle " + format_number(std::round(since * 10) / 10) + " s ago";
  if (l.role == Role::standby) return {200, "ok: standby, " + l.leader + " leads"};
  if (since > f.stale_after_s || (since < 0 && l.role == Role::leader)) {
    return {503, "unhealthy: the poll loop is stuck: " + cycle + " (expected within " + format_number(f.stale_after_s) +
                     " s)"};
  }
  // The leadership check runs every second; an answer older than a few seconds means the
  // check itself is waiting on a database that does not answer.
  // Measured on the monotonic clock: a wall clock stepped forward is not a silent database.
  const double unanswered_s = l.db_answered_mono != Duration{0} ? seconds(f.mono_now - l.db_answered_mono)
                              : l.db_answered_at == Time{}      ? 0
                                                                : seconds(f.now - l.db_answered_at);
  if (l.db_up && unanswered_s > 3.5) {
    return {503, "unhealthy: the database has not answered for " + format_number(std::round(unanswered_s)) +
                     " s; polling and detecting, nothing is acted on meanwhile; " + cycle};
  }
  if (!l.db_up) {
    return {503, "unhealthy: the database does not answer (" + l.db_error + "); polling and detecting, " +
                     std::to_string(f.pending_records) + " records wait, nothing is acted on; " + cycle};
  }
  if (l.role != Role::leader) {
    return {503, "unhealthy: " + std::string(to_string(l.role)) +
                     ": the leader lock is not held; polling and detecting, nothing is acted on; " + cycle};
  }
  return {200, "ok: leader (epoch " + std::to_string(l.epoch) + "); " + cycle};
}

}  // namespace medic::service
