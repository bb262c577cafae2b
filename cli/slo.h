// SLO targets and compliance reports: medic slo report | apply | targets | set.
#pragma once

#include "cli/context.h"

namespace medic::cli {

void add_slo_commands(CommandContext& ctx);

}  // namespace medic::cli
