// What the notification outbox owes each receiver (Alertmanager, webhooks).
#pragma once

#include "cli/context.h"

namespace medic::cli {

// medic notify status [--json]
void add_notify_commands(CommandContext& ctx);

}  // namespace medic::cli
