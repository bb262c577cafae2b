// medicd's config file, checked as medicd would check it at start-up: medic config check FILE.
#pragma once

#include "cli/context.h"

namespace medic::cli {

void add_config_commands(CommandContext& ctx);

}  // namespace medic::cli
