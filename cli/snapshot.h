// `medic snapshot`: list, show and diff the fabric-state snapshots medicd records around
// incidents and actions, take a whole-fabric snapshot now, prune old ones.
#pragma once

#include "cli/context.h"

namespace medic::cli {

void add_snapshot_commands(CommandContext& ctx);

}  // namespace medic::cli
