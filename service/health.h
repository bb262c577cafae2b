// What /healthz says, decided from plain facts: 200 when this daemon does its job (leads
// and polls, or stands by while another leads), 503 with the reason when it does not.
#pragma once

#include <cstddef>
#include <string>

#include "common/time.h"
#include "service/leadership.h"

namespace medic::service {

struct HealthFacts {
  LeadershipState leadership;
  double since_last_cycle_s = -1;  // seconds since the poll loop last finished a cycle; -1: none yet
  double stale_after_s = 10;       // a loop slower than this is stuck
  size_t pending_records = 0;      // kept while they cannot be recorded
  Time now{};
  Duration mono_now{};  // Clock::monotonic(), for how long ago the database answered
};

struct Health {
  int status = 200;  // 200 or 503
  std::string text;
};

Health judge_health(const HealthFacts& f);

}  // namespace medic::service
