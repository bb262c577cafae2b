// What medicd would read from one SNMP agent, to check a switch before adding it.
#pragma once

#include "cli/context.h"

namespace medic::cli {

// medic snmp walk TARGET [--credentials FILE] [--counter-map FILE] [--topology FILE --device NAME]
//                        [--timeout S] [--json]
void add_snmp_commands(CommandContext& ctx);

}  // namespace medic::cli
