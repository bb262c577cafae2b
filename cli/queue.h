// The repair queue: what waits for a person (approval, capacity, repair), and the
// decisions people make on it: approve, reject, repaired; and the circuit breaker.
#pragma once

#include "cli/context.h"

namespace medic::cli {

// medic queue; medic incidents approve|reject|repaired ID; medic breaker show|reset.
void add_queue_commands(CommandContext& ctx);

}  // namespace medic::cli
