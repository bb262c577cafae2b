// The people who use the repair queue and the audit trail of what everyone did.
#pragma once

#include "cli/context.h"

namespace medic::cli {

// medic users add|list|disable|rotate; medic audit.
void add_people_commands(CommandContext& ctx);

}  // namespace medic::cli
