#include "db/queue_store.h"
#include "db/remediation_store.h"
#include "common/json.h"
#include "cli/queue.h"

#include <cstdlib>
#include <unistd.h>

#include "cli/table.h"
#include "common/time.h"
#include "service/queue_view.h"

namespace medic::cli {

namespace {

// Who decided: --by, else $USER, else the uid.
std::string who(const std::string& by) {
  if (!by.empty()) return by;
  if (const char* u = std::getenv("USER"); u != nullptr && *u != 0) return u;
  return "uid " + std::to_string(::getuid());
}

std::string when(const std::optional<Time>& t) { return t ? format_iso8601(*t).substr(0, 19) + "Z" : "-"; }

int cmd_queue(const DbOption& dbo, bool as_json, std::ostream& out, std::ostream& err) {
  auto db = dbo.open();
  db::RemediationRecords records(*db);
  const auto rows = records.open_cases();
  if (!rows.ok()) {
    err << "medic: " << rows.error() << '\n';
    return 1;
  }
  std::vector<const db::CaseRow*> queued;
  for (const auto& r : *rows) {
    if (!service::waits_for(r.state).empty()) queued.push_back(&r);
  }
  if (as_json) {
    out << json_text(service::queue_json(*rows), 2) << '\n';
    return 0;
  }
  if (queued.empty()) {
    out << "the repair queue is empty\n";
    return 0;
  }
  Table t({"ID", "CLASS", "LINK", "STATE", "WAITS FOR", "DETECTED", "REASON"});
  for (const auto* r : queued) {
    std::string reason = r->reason;
    if (!r->approved_by.empty()) reason = "approved by " + r->approved_by + (reason.empty() ? "" : "; " + reason);
    t.add({std::to_string(r->id), r->incident_class, r->link, r->state, service::waits_for(r->state), when(r->detected_at),
           reason});
  }
  out << t.render();
  return 0;
}

int cmd_decide(const DbOption& dbo, const std::string& verb, int64_t id, const std::string& by,
               const std::string& reason, std::ostream& out, std::ostream& err) {
  auto db = dbo.open();
  db::QueueStore queue(*db);
  const Time now = SystemClock().now();
  const std::string person = who(by);
  Status st = Ok{};
  if (verb == "approve") st = queue.approve_incident(id, person, now);
  if (verb == "reject") st = queue.dismiss_incident(id, person, reason, now);
  if (verb == "repaired") st = queue.mark_repaired(id, person, now);
  if (!st.ok()) {
    err << "medic: " << st.error() << '\n';
    return 1;
  }
  if (verb == "approve") out << "incident " << id << ": drain approved by " << person << "; medicd drains it when capacity allows\n";
  if (verb == "reject") out << "incident " << id << ": dismissed by " << person << "; a drained link is put back by medicd\n";
  if (verb == "repaired") out << "incident " << id << ": marked repaired by " << person << "; medicd validates it before the undrain\n";
  return 0;
}

int cmd_breaker_show(const DbOption& dbo, std::ostream& out, std::ostream& err) {
  auto db = dbo.open();
  db::RemediationRecords records(*db);
  const auto b = records.breaker();
  if (!b.ok()) {
    err << "medic: " << b.error() << '\n';
    return 1;
  }
  if (b->open) {
    out << "open since " << when(b->opened_at) << ": " << b->reason << '\n'
        << "automatic drains and undrains are stopped; reset with: medic breaker reset\n";
  } else {
    out << "closed" << (b->reset_at ? " (last reset " + when(b->reset_at) + " by " + b->reset_by + ")" : "") << '\n';
  }
  return 0;
}

int cmd_breaker_reset(const DbOption& dbo, const std::string& by, std::ostream& out, std::ostream& err) {
  auto db = dbo.open();
  db::QueueStore queue(*db);
  if (auto st = queue.reset_breaker(SystemClock().now(), who(by)); !st.ok()) {
    err << "medic: " << st.error() << '\n';
    return 1;
  }
  out << "circuit breaker reset by " << who(by) << "; automatic remediation resumes\n";
  return 0;
}

}  // namespace

void add_queue_commands(CommandContext& ctx) {
  struct Options {
    bool json = false;
    int64_t id = 0;
    std::string by, reason;
  };
  auto o = std::make_shared<Options>();
  auto* queue = ctx.app.add_subcommand("queue", "the repair queue: incidents waiting for approval, capacity, repair or a person");
  ctx.dbo.add(queue);
  queue->add_flag("--json", o->json, "JSON array");
  queue->callback([&ctx, o] { ctx.action = [&ctx, o] { return cmd_queue(ctx.dbo, o->json, ctx.out, ctx.err); }; });

  CLI::App* inc = ctx.app.get_subcommand("incidents");
  struct Verb {
    const char* name;
    const char* help;
  };
  for (const Verb v : {Verb{"approve", "approve the drain of an incident waiting in the queue (changes state)"},
                       Verb{"reject", "dismiss an incident: no drain; a drained link is put back (changes state)"},
                       Verb{"repaired", "mark a drained link repaired: medicd validates, then undrains (changes state)"}}) {
    auto* cmd = inc->add_subcommand(v.name, v.help);
    ctx.dbo.add(cmd);
    cmd->add_option("ID", o->id, "incident id")->required()->check(CLI::PositiveNumber);
    cmd->add_option("--by", o->by, "who decides (default: $USER)");
    if (std::string(v.name) == "reject") cmd->add_option("--reason", o->reason, "why, for the record");
    const std::string verb = v.name;
    cmd->callback([&ctx, o, verb] {
      ctx.action = [&ctx, o, verb] { return cmd_decide(ctx.dbo, verb, o->id, o->by, o->reason, ctx.out, ctx.err); };
    });
  }

  auto* br = ctx.app.add_subcommand("breaker", "the circuit breaker that stops automatic remediation");
  br->require_subcommand(1);
  auto* show = br->add_subcommand("show", "open or closed, and why");
  ctx.dbo.add(show);
  show->callback([&ctx] { ctx.action = [&ctx] { return cmd_breaker_show(ctx.dbo, ctx.out, ctx.err); }; });
  auto* reset = br->add_subcommand("reset", "close the breaker: automatic remediation resumes (changes state)");
  ctx.dbo.add(reset);
  reset->add_option("--by", o->by, "who resets (default: $USER)");
  reset->callback([&ctx, o] { ctx.action = [&ctx, o] { return cmd_breaker_reset(ctx.dbo, o->by, ctx.out, ctx.err); }; });
}

}  // namespace medic::cli
