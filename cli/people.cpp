#include "cli/people.h"

#include "service/queue_view.h"

#include <memory>
#include <nlohmann/json.hpp>

#include "cli/table.h"
#include "common/json.h"
#include "common/strings.h"
#include "common/time.h"
#include "db/audit_store.h"
#include "db/user_store.h"

namespace medic::cli {

namespace {

using nlohmann::json;

std::string when(Time t) { return format_iso8601(t).substr(0, 19) + "Z"; }

int cmd_users_add(const DbOption& dbo, const std::string& name, const std::string& role, const std::string& by,
                  std::ostream& out, std::ostream& err) {
  if (!db::valid_role(role)) {
    err << "medic: --role " << quote(role) << ": expected viewer, operator or admin\n";
    return 2;
  }
  auto db = dbo.open();
  db::UserStore users(*db);
  const auto token = users.add_user(name, role, cli_actor(by), SystemClock().now());
  if (!token.ok()) {
    err << "medic: " << token.error() << '\n';
    return token.kind() == ErrorKind::invalid ? 2 : 1;
  }
  out << "user " << name << " (" << role << ") added; its API token, shown this once:\n" << *token << '\n';
  return 0;
}

int cmd_users_rotate(const DbOption& dbo, const std::string& name, const std::string& by, std::ostream& out,
                     std::ostream& err) {
  auto db = dbo.open();
  db::UserStore users(*db);
  const auto token = users.rotate_token(name, cli_actor(by), SystemClock().now());
  if (!token.ok()) {
    err << "medic: " << token.error() << '\n';
    return 1;
  }
  out << "user " << name << ": new API token, shown this once (the old one no longer works):\n" << *token << '\n';
  return 0;
}

int cmd_users_disable(const DbOption& dbo, const std::string& name, const std::string& by, std::ostream& out,
                      std::ostream& err) {
  auto db = dbo.open();
  db::UserStore users(*db);
  if (auto st = users.disable_user(name, cli_actor(by), SystemClock().now()); !st.ok()) {
    err << "medic: " << st.error() << '\n';
    return 1;
  }
  out << "user " << name << " disabled: its token no longer works\n";
  return 0;
}

int cmd_users_list(const DbOption& dbo, bool as_json, std::ostream& out, std::ostream& err) {
  auto db = dbo.open();
  db::UserStore users(*db);
  const auto rows = users.users();
  if (!rows.ok()) {
    err << "medic: " << rows.error() << '\n';
    return 1;
  }
  if (as_json) {
    json a = json::array();
    for (const auto& u : *rows) a.push_back(service::user_json(u));
    out << json_text(a, 2) << '\n';
    return 0;
  }
  if (rows->empty()) {
    out << "no users (medic users add NAME --role viewer|operator|admin)\n";
    return 0;
  }
  Table t({"NAME", "ROLE", "STATUS", "CREATED", "TOKEN SET"});
  for (const auto& u : *rows) {
    t.add({u.name, u.role, u.disabled ? "disabled" : "active", when(u.created_at), when(u.token_set_at)});
  }
  out << t.render();
  return 0;
}

int cmd_audit(const DbOption& dbo, int64_t incident, const std::string& who, const std::string& since, int limit,
              bool as_json, std::ostream& out, std::ostream& err) {
  db::AuditFilter f;
  if (incident > 0) f.incident_id = incident;
  if (!who.empty()) f.who = who;
  if (!since.empty()) {
    const auto t = parse_time_arg(since, SystemClock().now());
    if (!t) {
      err << "medic: --since " << quote(since) << ": expected an ISO 8601 time, Unix seconds or -N[smhd] (ago)\n";
      return 2;
    }
    f.since = *t;
  }
  f.limit = limit;
  auto db = dbo.open();
  db::AuditStore audit(*db);
  const auto rows = audit.audit(f);
  if (!rows.ok()) {
    err << "medic: " << rows.error() << '\n';
    return 1;
  }
  if (as_json) {
    json a = json::array();
    for (const auto& r : *rows) a.push_back(service::audit_json(r));
    out << json_text(a, 2) << '\n';
    return 0;
  }
  if (rows->empty()) {
    out << "nothing in the audit trail matches\n";
    return 0;
  }
  Table t({"AT", "WHO", "ROLE", "WHAT", "INCIDENT", "LINK", "REASON", "FROM"});
  for (const auto& r : *rows) {
    t.add({when(r.at), r.who, r.role, r.what, r.incident_id ? std::to_string(r.incident_id) : "-", r.link, r.reason,
           r.source});
  }
  out << t.render();
  return 0;
}

}  // namespace

void add_people_commands(CommandContext& ctx) {
  struct Options {
    std::string name, role, by, who, since;
    int64_t incident = 0;
    int limit = 1000;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  auto* users = ctx.app.add_subcommand("users", "people and service accounts of the repair queue: add, list, disable, rotate");
  users->require_subcommand(1);
  auto* add = users->add_subcommand("add", "add a user; prints its API token once (changes state)");
  ctx.dbo.add(add);
  add->add_option("NAME", o->name, "the user's name")->required();
  add->add_option("--role", o->role, "viewer, operator or admin")->required();
  add->add_option("--by", o->by, "who adds it, for the audit trail (default: $USER)");
  add->callback([&ctx, o] {
    ctx.action = [&ctx, o] { return cmd_users_add(ctx.dbo, o->name, o->role, o->by, ctx.out, ctx.err); };
  });
  auto* list = users->add_subcommand("list", "every user, its role and whether it is disabled");
  ctx.dbo.add(list);
  list->add_flag("--json", o->json, "JSON array");
  list->callback([&ctx, o] { ctx.action = [&ctx, o] { return cmd_users_list(ctx.dbo, o->json, ctx.out, ctx.err); }; });
  auto* dis = users->add_subcommand("disable", "its token stops working at once (changes state)");
  ctx.dbo.add(dis);
  dis->add_option("NAME", o->name, "the user's name")->required();
  dis->add_option("--by", o->by, "who disables it, for the audit trail (default: $USER)");
  dis->callback([&ctx, o] {
    ctx.action = [&ctx, o] { return cmd_users_disable(ctx.dbo, o->name, o->by, ctx.out, ctx.err); };
  });
  auto* rot = users->add_subcommand("rotate", "a new token for the user; prints it once, the old one stops working (changes state)");
  ctx.dbo.add(rot);
  rot->add_option("NAME", o->name, "the user's name")->required();
  rot->add_option("--by", o->by, "who rotates it, for the audit trail (default: $USER)");
  rot->callback([&ctx, o] {
    ctx.action = [&ctx, o] { return cmd_users_rotate(ctx.dbo, o->name, o->by, ctx.out, ctx.err); };
  });

  auto* audit = ctx.app.add_subcommand("audit", "who changed what, when, from where and why (oldest first)");
  ctx.dbo.add(audit);
  audit->add_option("--incident", o->incident, "only this incident")->check(CLI::PositiveNumber);
  audit->add_option("--who", o->who, "only what this person (or medicd) did");
  audit->add_option("--since", o->since, "from this time on: ISO 8601, Unix seconds, or -N[smhd] ago");
  audit->add_option("--limit", o->limit, "at most this many rows, the newest (default 1000)")->check(CLI::Range(1, 1000000));
  audit->add_flag("--json", o->json, "JSON array");
  audit->callback([&ctx, o] {
    ctx.action = [&ctx, o] {
      return cmd_audit(ctx.dbo, o->incident, o->who, o->since, o->limit, o->json, ctx.out, ctx.err);
    };
  });
}

}  // namespace medic::cli
