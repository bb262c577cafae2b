// The instant most unit tests start their simulated clocks at (2027-01-15 08:00 UTC), in
// one place so that test files built together (CMake's unity build) share it.
#pragma once

#include "common/time.h"

namespace medic {

inline const Time kT0 = from_unix_seconds(1'800'000'000);

// s seconds after kT0.
inline Time at(double s) { return kT0 + from_seconds(s); }

}  // namespace medic
