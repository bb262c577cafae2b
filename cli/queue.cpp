#include "db/queue_store.h"
#include "db/remediation_store.h"
#include "common/json.h"
#include "cli/queue.h"

#include <cstdlib>
#include <unistd.h>

#include "cli/table.h"
#include "triage/incident.h"
#include "remediation/policy.h"
#include "db/incident_store.h"
#include "common/strings.h"
#include "common/files.h"
#include "common/time.h"
#include "service/queue_view.h"

namespace medic::cli {

namespace {

// Who decided: --by, else $USER, else the uid.
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
               const std::string& reason, const std::string& policy_file, std::ostream& out, std::ostream& err) {
  if ((verb == "reject" || verb == "dismiss") && reason.empty()) {
    err << "medic: incidents " << verb << " needs --reason (it goes into the audit trail)\n";
    return 2;
  }
  // The two-person rule: how many must approve this incident's class.
  remediation::RemediationPolicy policy;
  if (verb == "approve") {
    try {
      policy = remediation::RemediationPolicy::load_file(policy_file.empty() ? data_dir() + "/remediation.json"
                                                                              : policy_file);
    } catch (const remediation::PolicyError& e) {
      err << "medic: " << e.what() << '\n';
      return 2;
    }
  }
  auto db = dbo.open();
  db::QueueStore queue(*db);
  db::IncidentStore incidents(*db);
  const Time now = SystemClock().now();
  const db::Actor actor = cli_actor(by);
  if (verb == "approve") {
    const auto row = incidents.incident(id);
    if (!row.ok()) {
      err << "medic: " << row.error() << '\n';
      return 1;
    }
    const auto cls = triage::parse_incident_class(row->incident_class);
    const int required = cls ? policy.approvals_needed(*cls) : 1;
    const auto a = queue.approve_incident(id, actor, required, reason, now);
    if (!a.ok()) {
      err << "medic: " << a.error() << '\n';
      return 1;
    }
    if (a->approved) {
      out << "incident " << id << ": drain approved by " << join(a->by, ", ") << "; medicd drains it when capacity allows\n";
    } else {
      out << "incident " << id << ": approval " << a->given << " of " << a->required << " (by " << actor.name
          << "); another person must approve it\n";
    }
    return 0;
  }
  Status st = Ok{};
  if (verb == "reject" || verb == "dismiss") st = queue.dismiss_incident(id, actor, verb, reason, now);
  if (verb == "repaired") st = queue.mark_repaired(id, actor, reason, now);
  if (!st.ok()) {
    err << "medic: " << st.error() << '\n';
    return 1;
  }
  if (verb == "reject" || verb == "dismiss") {
    out << "incident " << id << ": " << (verb == "reject" ? "rejected" : "dismissed") << " by " << actor.name
        << "; a drained link is put back by medicd\n";
  }
  if (verb == "repaired") out << "incident " << id << ": marked repaired by " << actor.name << "; medicd validates it before the undrain\n";
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

int cmd_breaker_reset(const DbOption& dbo, const std::string& by, const std::string& reason, std::ostream& out,
                      std::ostream& err) {
  if (reason.empty()) {
    err << "medic: breaker reset needs --reason (it goes into the audit trail)\n";
    return 2;
  }
  auto db = dbo.open();
  db::QueueStore queue(*db);
  const db::Actor actor = cli_actor(by);
  if (auto st = queue.reset_breaker(SystemClock().now(), actor, reason); !st.ok()) {
    err << "medic: " << st.error() << '\n';
    return 1;
  }
  out << "circuit breaker reset by " << actor.name << "; automatic remediation resumes\n";
  return 0;
}

}  // namespace

void add_queue_commands(CommandContext& ctx) {
  struct Options {
    bool json = false;
    int64_t id = 0;
    std::string by, reason, policy;
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
                       Verb{"reject", "refuse a waiting drain: the incident is dismissed (changes state; needs --reason)"},
                       Verb{"dismiss", "dismiss an incident as no fault; a drained link is put back (changes state; needs --reason)"},
                       Verb{"repaired", "mark a drained link repaired: medicd validates, then undrains (changes state)"}}) {
    auto* cmd = inc->add_subcommand(v.name, v.help);
    ctx.dbo.add(cmd);
    cmd->add_option("ID", o->id, "incident id")->required()->check(CLI::PositiveNumber);
    cmd->add_option("--by", o->by, "who decides, for the audit trail (default: $USER)");
    cmd->add_option("--reason", o->reason, "why, for the audit trail");
    const std::string verb = v.name;
    if (verb == "approve") {
      cmd->add_option("--policy", o->policy, "the remediation policy, for how many must approve (default data/remediation.json)");
    }
    cmd->callback([&ctx, o, verb] {
      ctx.action = [&ctx, o, verb] {
        return cmd_decide(ctx.dbo, verb, o->id, o->by, o->reason, o->policy, ctx.out, ctx.err);
      };
    });
  }

  auto* br = ctx.app.add_subcommand("breaker", "the circuit breaker that stops automatic remediation");
  br->require_subcommand(1);
  auto* show = br->add_subcommand("show", "open or closed, and why");
  ctx.dbo.add(show);
  show->callback([&ctx] { ctx.action = [&ctx] { return cmd_breaker_show(ctx.dbo, ctx.out, ctx.err); }; });
  auto* reset = br->add_subcommand("reset", "close the breaker: automatic remediation resumes (changes state)");
  ctx.dbo.add(reset);
  reset->add_option("--by", o->by, "who resets, for the audit trail (default: $USER)");
  reset->add_option("--reason", o->reason, "why, for the audit trail (required)");
  reset->callback([&ctx, o] {
    ctx.action = [&ctx, o] { return cmd_breaker_reset(ctx.dbo, o->by, o->reason, ctx.out, ctx.err); };
  });
}

}  // namespace medic::cli
