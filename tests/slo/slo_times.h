// The instants the SLO tests place incidents and target versions at: `t(s)` is s seconds
// after an arbitrary epoch (2026-09-21 14:13:20 UTC).
#pragma once

#include <chrono>

#include "common/time.h"

namespace medic::slo {

inline Time t(double s) { return Time(std::chrono::seconds(1'790'000'000)) + from_seconds(s); }

}  // namespace medic::slo
