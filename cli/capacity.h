// `medic capacity show` and `medic capacity whatif`: the capacity groups of a topology
// (its own and those derived from it with the floors of data/capacity.json), how much of
// each is in service, and what draining some links would do to them and to the budget.
#pragma once

#include "cli/context.h"

namespace medic::cli {

void add_capacity_commands(CommandContext& ctx);

}  // namespace medic::cli
