#include "cli/notify.h"

#include <nlohmann/json.hpp>

#include "cli/table.h"
#include "common/json.h"
#include "db/notify_store.h"

namespace medic::cli {

namespace {

using nlohmann::json;

int cmd_notify_status(const DbOption& dbo, bool as_json, std::ostream& out, std::ostream& err) {
  auto db = dbo.open();
  db::NotifyStore store(*db);
  const auto rows = store.status();
  if (!rows.ok()) {
    err << "medic: " << rows.error() << '\n';
    return 1;
  }
  const Time now = SystemClock().now();
  if (as_json) {
    json a = json::array();
    for (const auto& r : *rows) {
      a.push_back({{"receiver", r.name},
                   {"kind", r.kind},
                   {"enabled", r.enabled},
                   {"pending", r.pending},
                   {"delivered", r.delivered},
                   {"refused", r.failed},
                   {"oldest_pending", r.oldest_pending ? json(format_iso8601(*r.oldest_pending)) : json(nullptr)},
                   {"last_error", r.last_error}});
    }
    out << json_text(a, 2) << '\n';
    return 0;
  }
  if (rows->empty()) {
    out << "no receiver: medicd runs without --alertmanager or --webhook\n";
    return 0;
  }
  Table t({"RECEIVER", "KIND", "ENABLED", "PENDING", "OLDEST", "DELIVERED", "REFUSED", "LAST ERROR"});
  for (const auto& r : *rows) {
    t.add({r.name, r.kind, r.enabled ? "yes" : "no", std::to_string(r.pending),
           r.oldest_pending ? std::to_string(static_cast<int64_t>(seconds(now - *r.oldest_pending))) + " s ago" : "-",
           std::to_string(r.delivered), std::to_string(r.failed), r.last_error.empty() ? "-" : r.last_error});
  }
  out << t.render();
  return 0;
}

}  // namespace

void add_notify_commands(CommandContext& ctx) {
  auto* notify = ctx.app.add_subcommand("notify", "the notifications medicd owes Alertmanager and the webhooks");
  notify->require_subcommand(1);
  auto* status = notify->add_subcommand(
      "status", "per receiver: events still owed (and the oldest), delivered, refused for good, the last error");
  ctx.dbo.add(status);
  auto as_json = std::make_shared<bool>(false);
  status->add_flag("--json", *as_json, "JSON array");
  status->callback([&ctx, as_json] {
    ctx.action = [&ctx, as_json] { return cmd_notify_status(ctx.dbo, *as_json, ctx.out, ctx.err); };
  });
}

}  // namespace medic::cli
