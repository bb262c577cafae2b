#include "service/api.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include "common/json.h"
#include "common/strings.h"
#include "common/thread_name.h"
#include "common/time.h"
#include "common/token.h"
#include "db/incident_store.h"
#include "db/inventory_store.h"
#include "db/maintenance_store.h"
#include "db/queue_store.h"
#include "db/remediation_store.h"
#include "db/slo_store.h"
#include "db/snapshot_store.h"
#include "db/user_store.h"
#include "remediation/capacity_view.h"
#include "service/assets.h"
#include "service/queue_view.h"
#include "slo/render.h"
#include "slo/report.h"
#include "triage/incident.h"

namespace medic::service {

using nlohmann::json;

struct Api::Stores {
  Stores(const std::string& url, const db::DbOptions& options) : conn(url, options) {}
  db::Connection conn;
  db::RemediationRecords records{conn};
  db::QueueStore queue{conn};
  db::IncidentStore incidents{conn};
  db::SnapshotStore snapshots{conn};
  db::MaintenanceStore maintenance{conn};
  db::InventoryStore inventory{conn};
  db::AuditStore audit{conn};
  db::UserStore users{conn};
  db::SloStore slo{conn};
};

// One accepted request on its way to its handler.
struct Api::Call {
  const HttpRequest& r;
  const ApiSetup& setup;
  Stores& s;
  std::vector<std::string> args;  // the {id} or {name} segments of the path
  db::Actor who;
  json body = json::object();
  Time now{};
};

namespace {

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

HttpResponse answer(unsigned status, const json& j) {
  HttpResponse res = HttpResponse::json(status, dump(j));
  res.headers.emplace_back("Cache-Control", "no-store");
  res.headers.emplace_back("X-Content-Type-Options", "nosniff");
  return res;
}

HttpResponse error(unsigned status, const std::string& what) {
  HttpResponse res = answer(status, json{{"error", what}, {"status", status}});
  if (status == 401) res.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"medicd\"");
  return res;
}

// The HTTP status for an error, by its kind (never by its text).
unsigned status_of(ErrorKind k) {
  switch (k) {
    case ErrorKind::invalid: return 422;
    case ErrorKind::not_found: return 404;
    case ErrorKind::conflict: return 409;
    case ErrorKind::unavailable: return 503;
    case ErrorKind::forbidden: return 403;
    case ErrorKind::indeterminate: return 504;  // an upstream's answer was lost
    case ErrorKind::internal: return 500;
  }
  return 500;
}

HttpResponse refusal(const Error& e) { return error(status_of(e.kind), e.message); }

std::string iso(const std::optional<Time>& t) { return t ? format_iso8601(*t) : ""; }

// A body field an endpoint takes.
struct Field {
  const char* name;
  const char* type;  // "string" or "number"
  bool required;
  const char* why;  // for a required one: what the refusal says
};

using Handler = HttpResponse (*)(Api::Call&);

struct Endpoint {
  const char* method;
  const char* path;  // segments in braces match one segment of the request's path
  const char* role;  // the least role that may call it; "" for anyone
  bool changes_state;
  std::vector<Field> fields;
  const char* summary;
  Handler handler;
};

// ---- reading ----

HttpResponse get_whoami(Api::Call& c) { return answer(200, {{"name", c.who.name}, {"role", c.who.role}}); }

int approvals_needed(const ApiSetup& setup, const std::string& cls) {
  if (setup.policy == nullptr) return 1;
  const auto c = triage::parse_incident_class(cls);
  return c ? setup.policy->approvals_needed(*c) : 1;
}

HttpResponse get_queue(Api::Call& c) {
  db::IncidentFilter f;
  f.open_only = true;
  auto rows = c.s.incidents.incidents(f);
  if (!rows.ok()) return refusal(rows.failure());
  auto targets = c.s.slo.slo_targets();
  if (!targets.ok()) return refusal(targets.failure());
  auto approvals = c.s.queue.approvals(std::nullopt);
  if (!approvals.ok()) return refusal(approvals.failure());
  auto breaker = c.s.records.breaker();
  if (!breaker.ok()) return refusal(breaker.failure());
  std::sort(rows->begin(), rows->end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  json items = open_incidents_json(
      *rows, *targets, *approvals, [&](const std::string& cls) { return approvals_needed(c.setup, cls); }, c.now);
  for (auto& i : items) {
    const auto& by = i["approvals"];
    const bool mine = std::find(by.begin(), by.end(), c.who.name) != by.end();
    i["allowed"] = allowed_actions(i["state"].get<std::string>(), c.who.role, mine, i["link_drain_state"] == "drained");
  }
  return answer(200, {{"incidents", items},
                      {"breaker_open", breaker->open},
                      {"now", format_iso8601(c.now)}});
}

std::optional<int64_t> positive_id(const std::string& text) {
  int64_t id = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc{} || end != text.data() + text.size() || id <= 0) return std::nullopt;
  return id;
}

// The incident the path names, or the refusal.
Result<db::IncidentRow> incident_of(Api::Call& c) {
  const auto id = positive_id(c.args.at(0));
  if (!id) return Error::not_found("no incident " + quote(c.args.at(0)) + ": an incident id is a positive integer");
  return c.s.incidents.incident(*id);
}

HttpResponse get_incident(Api::Call& c) {
  auto inc = incident_of(c);
  if (!inc.ok()) return refusal(inc.failure());
  const int64_t id = inc->id;
  auto targets = c.s.slo.slo_targets();
  if (!targets.ok()) return refusal(targets.failure());
  auto approvals = c.s.queue.approvals(id);
  if (!approvals.ok()) return refusal(approvals.failure());
  const std::vector<std::string> by = approvals->count(id) ? approvals->at(id) : std::vector<std::string>{};
  json out = incident_json(*inc, *targets, by, approvals_needed(c.setup, inc->incident_class), c.now);
  out["allowed"] = allowed_actions(inc->state, c.who.role, std::find(by.begin(), by.end(), c.who.name) != by.end(),
                                   inc->link_drain_state == "drained");
  out["reopen_count"] = inc->reopen_count;
  out["stages"] = {{"started", iso(inc->started_at)},     {"detected", iso(inc->detected_at)},
                   {"triaged", iso(inc->triaged_at)},     {"mitigated", iso(inc->mitigated_at)},
                   {"repair_requested", iso(inc->repair_requested_at)},
                   {"repaired", iso(inc->repaired_at)},   {"validated", iso(inc->validated_at)},
                   {"undrained", iso(inc->undrained_at)}, {"closed", iso(inc->closed_at)},
                   {"dismissed", iso(inc->dismissed_at)}, {"escalated", iso(inc->escalated_at)}};

  // The timeline: the incident's stages and everyone's decisions, oldest first.
  auto events = c.s.incidents.incident_events(id);
  if (!events.ok()) return refusal(events.failure());
  db::AuditFilter af;
  af.incident_id = id;
  auto audit = c.s.audit.audit(af);
  if (!audit.ok()) return refusal(audit.failure());
  std::vector<std::pair<Time, json>> timeline;
  for (const auto& e : *events) {
    timeline.emplace_back(e.at, json{{"at", format_iso8601(e.at)}, {"kind", "stage"}, {"state", e.state}, {"note", e.note}});
  }
  for (const auto& a : *audit) {
    json j = audit_json(a);
    j["kind"] = "decision";
    timeline.emplace_back(a.at, std::move(j));
  }
  std::stable_sort(timeline.begin(), timeline.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  out["timeline"] = json::array();
  for (auto& [at, j] : timeline) out["timeline"].push_back(std::move(j));

  auto findings = c.s.incidents.findings(id);
  if (!findings.ok()) return refusal(findings.failure());
  out["findings"] = json::array();
  for (const auto& f : *findings) {
    json evidence = json::object();
    if (auto e = parse_json(f.evidence_json, "evidence"); e.ok()) evidence = *e;
    out["findings"].push_back({{"id", f.id},           {"kind", f.kind},
                               {"severity", f.severity}, {"link", f.link},
                               {"device", f.device},   {"port", f.port},
                               {"summary", f.summary}, {"note", f.note},
                               {"first_seen", format_iso8601(f.first_seen)},
                               {"observed_at", format_iso8601(f.observed_at)},
                               {"evidence", evidence}});
  }

  auto actions = c.s.records.actions(id);
  if (!actions.ok()) return refusal(actions.failure());
  out["actions"] = json::array();
  for (const auto& a : *actions) {
    json steps = json::array();
    if (auto s = parse_json(a.steps_json, "steps"); s.ok()) steps = *s;
    out["actions"].push_back({{"id", a.id},         {"kind", a.kind},     {"link", a.link},
                              {"state", a.state},   {"reason", a.reason}, {"intent_at", format_iso8601(a.intent_at)},
                              {"result_at", iso(a.result_at)}, {"steps", steps}});
  }

  // Snapshots, and what changed from each to the next (before and after each action).
  db::SnapshotFilter sf;
  sf.incident_id = id;
  sf.limit = 20;
  auto snaps = c.s.snapshots.snapshots(sf);
  if (!snaps.ok()) return refusal(snaps.failure());
  std::sort(snaps->begin(), snaps->end(), [](const auto& a, const auto& b) { return a.taken_at < b.taken_at; });
  out["snapshots"] = json::array();
  out["diffs"] = json::array();
  std::optional<snapshot::Snapshot> previous;
  int64_t previous_id = 0;
  for (const auto& s : *snaps) {
    out["snapshots"].push_back({{"id", s.id},
                                {"scope", s.scope},
                                {"reason", s.reason},
                                {"link", s.link},
                                {"action", s.action_id},
                                {"taken_at", format_iso8601(s.taken_at)},
                                {"ports", s.port_count},
                                {"groups", s.group_count}});
    auto full = c.s.snapshots.snapshot(s.id);
    if (!full.ok()) return refusal(full.failure());
    if (!*full) continue;
    if (previous) {
      const snapshot::SnapshotDiff d = snapshot::diff(*previous, **full, c.setup.diff_thresholds);
      out["diffs"].push_back(
          {{"from", previous_id}, {"to", s.id}, {"text", snapshot::render_text(d)}, {"diff", snapshot::diff_to_json(d)}});
    }
    previous = std::move(**full);
    previous_id = s.id;
  }

  // What draining its link would do to every capacity group it touches.
  out["what_if"] = nullptr;
  if (c.setup.capacity_topology != nullptr && !inc->link.empty()) {
    if (const auto link = c.setup.capacity_topology->find_link(inc->link)) {
      auto states = c.s.inventory.link_states();
      if (!states.ok()) return refusal(states.failure());
      remediation::CapacityModel model(*c.setup.capacity_topology, c.setup.budget);
      remediation::apply_link_states(model, *states);
      const fabric::LinkId links[] = {*link};
      // A link already out of service changes nothing now: show what taking it out does
      // to its groups, from the fabric as it is with that link back in.
      const bool out_now = !model.in_service(*link);
      const std::string state_now = remediation::link_state_text(model, *link);
      if (out_now) {  // the model is this request's own: put the link back in it
        model.set_drained(*link, false);
        model.set_reserved(*link, false);
        model.set_oper_up(*link, true);
      }
      json w = remediation::what_if_json(model, links);
      w["link_state"] = state_now;
      w["out_of_service"] = out_now;
      out["what_if"] = std::move(w);
    }
  }
  const auto runbook = asset("runbooks/" + inc->incident_class + ".md");
  out["runbook"] = runbook ? std::string(*runbook) : "";
  return answer(200, out);
}

HttpResponse get_breaker(Api::Call& c) {
  auto b = c.s.records.breaker();
  if (!b.ok()) return refusal(b.failure());
  return answer(200, {{"open", b->open},
                      {"reason", b->reason},
                      {"opened_at", iso(b->opened_at)},
                      {"reset_at", iso(b->reset_at)},
                      {"reset_by", b->reset_by}});
}

json maintenance_json(const db::MaintenanceRow& m, Time now) {
  return {{"id", m.id},
          {"link", m.link},
          {"device", m.device},
          {"starts_at", format_iso8601(m.starts_at)},
          {"ends_at", format_iso8601(m.ends_at)},
          {"active", m.starts_at <= now && now < m.ends_at},
          {"reason", m.reason},
          {"created_by", m.created_by}};
}

HttpResponse get_maintenance(Api::Call& c) {
  const auto all = c.r.query.find("all");
  auto rows = c.s.maintenance.maintenance(all != c.r.query.end() && all->second == "1" ? std::nullopt
                                                                                          : std::optional<Time>(c.now));
  if (!rows.ok()) return refusal(rows.failure());
  json a = json::array();
  for (const auto& m : *rows) a.push_back(maintenance_json(m, c.now));
  return answer(200, a);
}

// A query parameter that must be a whole number in [lo, hi].
Result<std::optional<int64_t>> query_int(const HttpRequest& r, const std::string& name, int64_t lo, int64_t hi) {
  const auto it = r.query.find(name);
  if (it == r.query.end()) return std::optional<int64_t>();
  int64_t v = 0;
  const auto& t = it->second;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc{} || end != t.data() + t.size() || v < lo || v > hi) {
    return Error::invalid("query " + name + "=" + quote(t) + ": expected a whole number from " + std::to_string(lo) +
                          " to " + std::to_string(hi));
  }
  return std::optional<int64_t>(v);
}

HttpResponse get_audit(Api::Call& c) {
  db::AuditFilter f;
  auto incident = query_int(c.r, "incident", 1, INT64_MAX);
  if (!incident.ok()) return refusal(incident.failure());
  f.incident_id = *incident;
  auto limit = query_int(c.r, "limit", 1, 10000);
  if (!limit.ok()) return refusal(limit.failure());
  if (*limit) f.limit = static_cast<int>(**limit);
  if (const auto it = c.r.query.find("who"); it != c.r.query.end()) f.who = it->second;
  if (const auto it = c.r.query.find("since"); it != c.r.query.end()) {
    const auto t = parse_time_arg(it->second, c.now);
    if (!t) return error(422, "query since=" + quote(it->second) + ": expected now, -N[smhd], Unix seconds or ISO 8601");
    f.since = *t;
  }
  for (const auto& [k, v] : c.r.query) {
    if (k != "incident" && k != "who" && k != "since" && k != "limit") {
      return error(422, "query " + quote(k) + ": unknown (incident, who, since, limit)");
    }
  }
  auto rows = c.s.audit.audit(f);
  if (!rows.ok()) return refusal(rows.failure());
  json a = json::array();
  for (const auto& r : *rows) a.push_back(audit_json(r));
  return answer(200, a);
}

// The SLO report, with the CLI's parameters (from/to, window, month, class, by) and format
// json (default), html (the whole self-contained file), csv or md.
HttpResponse get_slo(Api::Call& c) {
  std::map<std::string, std::string> params = c.r.query;
  std::string format = "json";
  if (const auto f = params.find("format"); f != params.end()) {
    format = f->second;
    params.erase(f);
    if (format != "json" && format != "html" && format != "html-body" && format != "csv" && format != "md") {
      return error(422, "query \"format\": " + quote(format) + " is not one of json, html, html-body, csv, md");
    }
  }
  const auto q = slo::parse_report_query(params, c.now);
  if (!q.ok()) return error(422, "query: " + q.error());
  if (!q->incident_class.empty() && !triage::parse_incident_class(q->incident_class)) {
    return error(422, "query \"class\": unknown incident class " + quote(q->incident_class));
  }
  auto rep = c.s.slo.report(*q, c.now);
  if (!rep.ok()) return refusal(rep.failure());
  if (format == "json") return answer(200, slo::report_json(*rep));
  HttpResponse res;
  if (format == "html-body") {  // what the page shows under /slo, with /slo_report.css
    res.content_type = "text/html; charset=utf-8";
    res.body = slo::report_html_body(*rep);
  } else if (format == "html") {
    res.content_type = "text/html; charset=utf-8";
    res.body = slo::report_html(*rep);
    // Self-contained: its own stylesheet, no script, nothing fetched.
    res.headers.emplace_back("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'");
  } else if (format == "csv") {
    res.content_type = "text/csv; charset=utf-8";
    res.body = slo::report_csv(*rep);
  } else {
    res.content_type = "text/markdown; charset=utf-8";
    res.body = slo::report_markdown(*rep);
  }
  res.headers.emplace_back("X-Content-Type-Options", "nosniff");
  return res;
}

HttpResponse get_slo_targets(Api::Call& c) {
  auto targets = c.s.slo.slo_targets();
  if (!targets.ok()) return refusal(targets.failure());
  json a = json::array();
  for (const auto& t : *targets) {
    a.push_back({{"class", t.incident_class},
                 {"stage", std::string(slo::to_string(t.stage))},
                 {"target_s", seconds(t.target)},
                 {"objective", t.objective}});
  }
  return answer(200, a);
}

HttpResponse get_users(Api::Call& c) {
  auto users = c.s.users.users();
  if (!users.ok()) return refusal(users.failure());
  json a = json::array();
  for (const auto& u : *users) a.push_back(user_json(u));
  return answer(200, a);
}

// ---- deciding ----

std::string text_field(const Api::Call& c, const char* name) {
  const auto it = c.body.find(name);
  return it == c.body.end() ? "" : it->get<std::string>();
}

HttpResponse post_approve(Api::Call& c) {
  auto inc = incident_of(c);
  if (!inc.ok()) return refusal(inc.failure());
  const int required = approvals_needed(c.setup, inc->incident_class);
  auto a = c.s.queue.approve_incident(inc->id, c.who, required, text_field(c, "reason"), c.now);
  if (!a.ok()) return refusal(a.failure());
  const std::string id = std::to_string(inc->id);
  return answer(200, {{"id", inc->id},
                      {"action", "approve"},
                      {"by", c.who.name},
                      {"approvals", a->by},
                      {"approvals_needed", a->required},
                      {"approved", a->approved},
                      {"message", a->approved ? "incident " + id + ": drain approved by " + join(a->by, ", ")
                                              : "incident " + id + ": approval " + std::to_string(a->given) + " of " +
                                                    std::to_string(a->required) + " (by " + c.who.name +
                                                    "); another operator must approve it"}});
}

HttpResponse decided(const Api::Call& c, int64_t id, const std::string& what) {
  return answer(200, {{"id", id},
                      {"action", what},
                      {"by", c.who.name},
                      {"message", "incident " + std::to_string(id) + ": " + what + " by " + c.who.name}});
}

HttpResponse dismiss_as(Api::Call& c, const std::string& what) {
  auto inc = incident_of(c);
  if (!inc.ok()) return refusal(inc.failure());
  if (auto st = c.s.queue.dismiss_incident(inc->id, c.who, what, text_field(c, "reason"), c.now); !st.ok()) {
    return refusal(st.failure());
  }
  return decided(c, inc->id, what);
}

HttpResponse post_reject(Api::Call& c) { return dismiss_as(c, "reject"); }
HttpResponse post_dismiss(Api::Call& c) { return dismiss_as(c, "dismiss"); }

HttpResponse post_repaired(Api::Call& c) {
  auto inc = incident_of(c);
  if (!inc.ok()) return refusal(inc.failure());
  if (auto st = c.s.queue.mark_repaired(inc->id, c.who, text_field(c, "reason"), c.now); !st.ok()) {
    return refusal(st.failure());
  }
  return decided(c, inc->id, "repaired");
}

HttpResponse post_breaker_reset(Api::Call& c) {
  if (auto st = c.s.queue.reset_breaker(c.now, c.who, text_field(c, "reason")); !st.ok()) return refusal(st.failure());
  return answer(200, {{"message", "circuit breaker reset by " + c.who.name}});
}

HttpResponse post_maintenance(Api::Call& c) {
  db::MaintenanceRow m;
  m.link = text_field(c, "link");
  m.device = text_field(c, "device");
  const std::string from = c.body.contains("from") ? text_field(c, "from") : "now";
  const std::string until = text_field(c, "until");
  const auto start = parse_time_arg(from, c.now);
  if (!start) return error(422, "body: $.from: " + quote(from) + ": expected now, +N[smhd], Unix seconds or ISO 8601");
  const auto end = parse_time_arg(until, c.now);
  if (!end) return error(422, "body: $.until: " + quote(until) + ": expected +N[smhd], Unix seconds or ISO 8601");
  m.starts_at = *start;
  m.ends_at = *end;
  m.reason = text_field(c, "reason");
  m.created_by = c.who.name;
  auto checked = db::checked_window(c.s.inventory, m);
  if (!checked.ok()) return refusal(checked.failure());
  auto id = c.s.maintenance.add_maintenance(*checked, c.who, c.now);
  if (!id.ok()) return refusal(id.failure());
  checked->id = *id;
  return answer(200, maintenance_json(*checked, c.now));
}

HttpResponse post_maintenance_end(Api::Call& c) {
  const auto id = positive_id(c.args.at(0));
  if (!id) return error(404, "no maintenance window " + quote(c.args.at(0)) + ": an id is a positive integer");
  if (auto st = c.s.maintenance.end_maintenance(*id, c.who, c.now); !st.ok()) return refusal(st.failure());
  return answer(200, {{"id", *id}, {"message", "maintenance #" + std::to_string(*id) + " ended by " + c.who.name}});
}

HttpResponse post_slo_target(Api::Call& c) {
  slo::Target t;
  t.incident_class = text_field(c, "class");
  if (!triage::parse_incident_class(t.incident_class)) {
    return error(422, "body: $.class: " + quote(t.incident_class) + " is not an incident class");
  }
  const std::string stage = text_field(c, "stage");
  const auto st = slo::parse_stage(stage);
  if (!st) return error(422, "body: $.stage: " + quote(stage) + " is not detect, mitigate, repair or restore");
  t.stage = *st;
  const double target_s = c.body["target_s"].get<double>();
  if (!(target_s > 0 && target_s <= 366.0 * 86400)) {
    return error(422, "body: $.target_s: " + format_number(target_s) + " is not a time from 0 to 366 days");
  }
  t.target = from_seconds(target_s);
  t.objective = c.body["objective"].get<double>();
  if (!(t.objective > 0 && t.objective <= 1)) {
    return error(422, "body: $.objective: " + format_number(t.objective) + " is not a share in (0, 1]");
  }
  if (auto s = c.s.slo.set_slo_target(t, c.who, c.now); !s.ok()) return refusal(s.failure());
  return answer(200, {{"message", "SLO target " + t.incident_class + " " + stage + " set to " +
                                      format_number(target_s) + " s at " + format_number(t.objective) + " by " +
                                      c.who.name}});
}

HttpResponse post_user(Api::Call& c) {
  const std::string name = text_field(c, "name");
  auto token = c.s.users.add_user(name, text_field(c, "role"), c.who, c.now);
  if (!token.ok()) return refusal(token.failure());
  return answer(200, {{"name", name}, {"token", *token}, {"message", "user " + name + " added; the token is shown once"}});
}

HttpResponse post_user_rotate(Api::Call& c) {
  auto token = c.s.users.rotate_token(c.args.at(0), c.who, c.now);
  if (!token.ok()) return refusal(token.failure());
  return answer(200, {{"name", c.args.at(0)}, {"token", *token}, {"message", "new token for " + c.args.at(0)}});
}

HttpResponse post_user_disable(Api::Call& c) {
  if (auto st = c.s.users.disable_user(c.args.at(0), c.who, c.now); !st.ok()) return refusal(st.failure());
  return answer(200, {{"name", c.args.at(0)}, {"message", "user " + c.args.at(0) + " disabled"}});
}

const Field kReasonOptional{"reason", "string", false, ""};

const std::vector<Endpoint>& endpoints() {
  static const std::vector<Endpoint> e = {
      {"GET", "/api", "", false, {}, "this list", nullptr},
      {"GET", "/api/whoami", "viewer", false, {}, "the name and role the token stands for", get_whoami},
      {"GET", "/api/queue", "viewer", false, {}, "every open incident, what it waits for, its SLO budget left", get_queue},
      {"GET", "/api/incidents/{id}", "viewer", false, {},
       "one incident: timeline, findings, actions, snapshots and their diffs, what-if, runbook, allowed actions",
       get_incident},
      {"POST", "/api/incidents/{id}/approve", "operator", true, {kReasonOptional},
       "approve its drain (a class may need several distinct operators)", post_approve},
      {"POST", "/api/incidents/{id}/reject", "operator", true, {{"reason", "string", true, "a reject needs a reason"}},
       "refuse a drain not yet done; the incident is dismissed", post_reject},
      {"POST", "/api/incidents/{id}/dismiss", "operator", true, {{"reason", "string", true, "a dismiss needs a reason"}},
       "not a fault: dismissed, its link put back if drained", post_dismiss},
      {"POST", "/api/incidents/{id}/repaired", "operator", true, {kReasonOptional},
       "the drained link was repaired: validate and put it back", post_repaired},
      {"GET", "/api/breaker", "viewer", false, {}, "the circuit breaker", get_breaker},
      {"POST", "/api/breaker/reset", "admin", true,
       {{"reason", "string", true, "resetting the circuit breaker needs a reason"}},
       "close the circuit breaker: automatic drains resume", post_breaker_reset},
      {"GET", "/api/maintenance", "viewer", false, {}, "maintenance windows now or ahead (?all=1: every one)",
       get_maintenance},
      {"POST", "/api/maintenance", "operator", true,
       {{"link", "string", false, ""},
        {"device", "string", false, ""},
        {"from", "string", false, ""},
        {"until", "string", true, "a maintenance window needs its end (until)"},
        {"reason", "string", true, "a maintenance window needs a reason"}},
       "declare a window on a link or a device: its findings are noted, not acted on", post_maintenance},
      {"POST", "/api/maintenance/{id}/end", "operator", true, {}, "end a window now", post_maintenance_end},
      {"GET", "/api/audit", "viewer", false, {}, "the audit trail (?incident=N&who=NAME&since=T&limit=N)", get_audit},
      {"GET", "/api/slo", "viewer", false, {},
       "the SLO report (?window=7d|28d|90d, ?month=YYYY-MM or ?from=&to=; ?class=, ?by=zone|plane|role; "
       "?format=json|html|html-body|csv|md)",
       get_slo},
      {"GET", "/api/slo/targets", "viewer", false, {}, "the SLO targets", get_slo_targets},
      {"POST", "/api/slo/targets", "admin", true,
       {{"class", "string", true, "an SLO target needs its class"},
        {"stage", "string", true, "an SLO target needs its stage"},
        {"target_s", "number", true, "an SLO target needs target_s"},
        {"objective", "number", true, "an SLO target needs its objective"}},
       "set one class and stage's target", post_slo_target},
      {"GET", "/api/users", "admin", false, {}, "people and service accounts", get_users},
      {"POST", "/api/users", "admin", true,
       {{"name", "string", true, "a user needs a name"}, {"role", "string", true, "a user needs a role"}},
       "add a user; answers its token, once", post_user},
      {"POST", "/api/users/{name}/rotate", "admin", true, {}, "a new token; the old one stops working", post_user_rotate},
      {"POST", "/api/users/{name}/disable", "admin", true, {}, "the user's token stops working", post_user_disable},
  };
  return e;
}

std::vector<std::string> segments(const std::string& path) {
  std::vector<std::string> out;
  size_t i = 1;
  while (i <= path.size()) {
    const size_t j = path.find('/', i);
    out.push_back(path.substr(i, j == std::string::npos ? std::string::npos : j - i));
    if (j == std::string::npos) break;
    i = j + 1;
  }
  return out;
}

// Whether `path` matches the endpoint's pattern; fills the braced segments.
bool matches(const Endpoint& e, const std::vector<std::string>& path, std::vector<std::string>& args) {
  const auto pattern = segments(e.path);
  if (pattern.size() != path.size()) return false;
  std::vector<std::string> got;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (!pattern[i].empty() && pattern[i].front() == '{') {
      if (path[i].empty()) return false;
      got.push_back(path[i]);
    } else if (pattern[i] != path[i]) {
      return false;
    }
  }
  args = std::move(got);
  return true;
}

// The endpoint for (r.method, r.path), its path arguments, and the methods the path allows.
void find_endpoint(const HttpRequest& r, const Endpoint*& found, std::vector<std::string>& args,
                   std::vector<std::string>& allow) {
  const auto path = segments(r.path);
  for (const auto& e : endpoints()) {
    std::vector<std::string> a;
    if (!matches(e, path, a)) continue;
    allow.emplace_back(e.method);
    if (r.method == e.method || (r.method == "HEAD" && std::string(e.method) == "GET")) {
      found = &e;
      args = std::move(a);
    }
  }
}

// Whether the call's body is read and checked: every call that changes state, and any
// other that came with one.
bool takes_body(const Endpoint& e, const HttpRequest& r) { return e.changes_state || !r.body.empty(); }

// The body as the endpoint takes it: an object of its fields, each of its type; required
// strings not empty. Empty bodies are {}.
std::optional<HttpResponse> read_body(const Endpoint& e, const HttpRequest& r, json& body) {
  if (r.body.size() > kApiBodyLimit) {
    return error(413, "body: " + std::to_string(r.body.size()) + " bytes, over the limit of " +
                          std::to_string(kApiBodyLimit));
  }
  if (!r.body.empty()) {
    const std::string* ct = r.header("content-type");
    const std::string type = ct ? ascii_lower(trim(std::string_view(*ct).substr(0, ct->find(';')))) : "";
    if (type != "application/json") {
      return error(415, "body: Content-Type " + (ct ? quote(*ct) : std::string("missing")) +
                            ": send application/json");
    }
    auto doc = parse_json(r.body, "body");
    if (!doc.ok()) return error(422, doc.error());
    body = std::move(*doc);
  }
  if (!body.is_object()) return error(422, std::string("body: $: expected an object, got ") + json_type_name(body));
  for (const auto& [k, v] : body.items()) {
    const auto f = std::find_if(e.fields.begin(), e.fields.end(), [&key = k](const Field& f) { return key == f.name; });
    if (f == e.fields.end()) {
      std::vector<std::string> names;
      for (const auto& g : e.fields) names.emplace_back(g.name);
      return error(422, "body: $: unknown key " + quote(k) +
                            (names.empty() ? std::string(" (this call takes no fields)") : " (" + join(names, ", ") + ")"));
    }
    const bool ok = std::string(f->type) == "string" ? v.is_string() : v.is_number();
    if (!ok) return error(422, "body: $." + k + ": expected a " + f->type + ", got " + json_type_name(v));
    if (v.is_string() && v.get<std::string>().size() > 1000) {
      return error(422, "body: $." + k + ": longer than 1000 characters");
    }
  }
  for (const auto& f : e.fields) {
    if (!f.required) continue;
    const auto it = body.find(f.name);
    if (it == body.end() || (it->is_string() && trim(it->get<std::string>()).empty())) {
      return error(422, std::string("body: $.") + f.name + ": required: " + f.why);
    }
  }
  return std::nullopt;
}

// "127.0.0.1:53122" -> "127.0.0.1"
std::string host_of(const std::string& peer) {
  const size_t colon = peer.rfind(':');
  return colon == std::string::npos ? peer : peer.substr(0, colon);
}

bool is_page(const std::string& p) {
  if (p == "/" || p == "/app.js" || p == "/app.css" || p == "/slo" || p == "/slo_report.css" || p == "/favicon.ico") {
    return true;
  }
  return p.rfind("/incidents/", 0) == 0;
}

HttpResponse page(const HttpRequest& r) {
  if (r.method != "GET" && r.method != "HEAD") {
    HttpResponse res = error(405, r.path + ": GET only");
    res.headers.emplace_back("Allow", "GET, HEAD");
    return res;
  }
  if (r.path == "/favicon.ico") {  // none: answered so that browsers log no error
    HttpResponse res;
    res.status = 204;
    return res;
  }
  std::string name = "index.html";
  std::string type = "text/html; charset=utf-8";
  if (r.path == "/app.js") {
    name = "app.js";
    type = "text/javascript; charset=utf-8";
  } else if (r.path == "/app.css") {
    name = "app.css";
    type = "text/css; charset=utf-8";
  } else if (r.path == "/slo_report.css") {
    type = "text/css; charset=utf-8";
  } else if (r.path != "/" && r.path != "/slo") {
    const std::string id = r.path.substr(std::string("/incidents/").size());
    if (!positive_id(id)) return error(404, "no such page: " + r.path);
  }
  // The SLO report's stylesheet is the one its self-contained HTML file inlines.
  const auto body = r.path == "/slo_report.css" ? std::optional<std::string_view>(slo::report_css()) : asset(name);
  if (!body) return error(500, "medicd was built without its page (" + name + ")");
  HttpResponse res;
  res.content_type = type;
  res.body = std::string(*body);
  res.headers.emplace_back("Content-Security-Policy",
                           "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                           "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
  res.headers.emplace_back("X-Content-Type-Options", "nosniff");
  res.headers.emplace_back("Referrer-Policy", "no-referrer");
  res.headers.emplace_back("X-Frame-Options", "DENY");
  res.headers.emplace_back("Cache-Control", "no-cache");
  return res;
}

}  // namespace

json api_description() {
  json a = json::array();
  for (const auto& e : endpoints()) {
    json fields = json::object();
    for (const auto& f : e.fields) fields[f.name] = std::string(f.type) + (f.required ? ", required" : ", optional");
    a.push_back({{"method", e.method},
                 {"path", e.path},
                 {"role", *e.role ? e.role : "none"},
                 {"changes_state", e.changes_state},
                 {"body", fields},
                 {"summary", e.summary}});
  }
  return {{"endpoints", a},
          {"auth", "Authorization: Bearer TOKEN (medic users add NAME --role viewer|operator|admin prints one)"},
          {"roles", {"viewer", "operator", "admin"}},
          {"body_limit", kApiBodyLimit}};
}

Api::Api(ApiSetup setup) : setup_(std::move(setup)) {
  worker_ = std::thread([this] {
    name_this_thread("medic-api");
    std::unique_lock lock(queue_mu_);
    while (true) {
      queue_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      Waiting w = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      auto res = handle(w.request);
      w.reply(res ? std::move(*res) : error(404, "no such path: " + w.request.path));
      lock.lock();
    }
  });
  reaper_ = std::thread([this] {
    name_this_thread("medic-api-reap");
    std::unique_lock lock(queue_mu_);
    while (!stopping_) {
      queue_cv_.wait_for(lock, std::chrono::milliseconds(200));
      const auto limit =
          std::chrono::steady_clock::now() -
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(setup_.queue_wait_s));
      while (!queue_.empty() && queue_.front().since < limit) {
        queue_.front().reply(error(503, "the database did not answer the request before it within " +
                                            format_number(setup_.queue_wait_s) + " s; try again"));
        queue_.pop_front();
      }
    }
  });
}

Api::~Api() {
  {
    std::lock_guard lock(queue_mu_);
    stopping_ = true;
    for (auto& w : queue_) w.reply(error(503, "medicd is stopping"));
    queue_.clear();
  }
  queue_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  if (reaper_.joinable()) reaper_.join();
}

bool Api::owns(const std::string& path) { return is_page(path) || path == "/api" || path.rfind("/api/", 0) == 0; }

bool Api::submit(HttpRequest r, HttpRespond reply) {
  if (!owns(r.path)) return false;
  if (is_page(r.path) || r.path == "/api") {  // no database needed
    reply(*handle(r));
    return true;
  }
  if (setup_.db_down) {
    if (const std::string why = setup_.db_down(); !why.empty()) {
      reply(error(503, "the database does not answer (" + why + "); nothing can be read or decided now"));
      return true;
    }
  }
  std::lock_guard lock(queue_mu_);
  if (stopping_) {
    reply(error(503, "medicd is stopping"));
  } else if (queue_.size() >= setup_.queue_limit) {
    reply(error(503, "busy: " + std::to_string(queue_.size()) + " requests wait for the database"));
  } else {
    queue_.push_back({std::move(r), std::move(reply), std::chrono::steady_clock::now()});
    queue_cv_.notify_all();
  }
  return true;
}

Api::Stores& Api::db() {
  if (!db_) {
    // A database that could not be reached is not tried again for every request.
    if (std::chrono::steady_clock::now() < connect_after_) throw db::DbError(connect_error_ + " (not retried yet)");
    try {
      db_ = std::make_unique<Stores>(setup_.db_url, setup_.db_options);
    } catch (const db::DbError& e) {
      connect_error_ = e.what();
      connect_after_ = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      throw;
    }
  }
  return *db_;
}

std::optional<HttpResponse> Api::handle(const HttpRequest& r) {
  if (!owns(r.path)) return std::nullopt;
  if (is_page(r.path)) return page(r);
  // The description needs no database: never behind a request that waits on it.
  if (r.path == "/api" && (r.method == "GET" || r.method == "HEAD")) return answer(200, api_description());
  std::lock_guard lock(mu_);
  try {
    return route(r);
  } catch (const std::exception& e) {
    db_.reset();  // reconnect next time
    return error(503, std::string("database: ") + e.what());
  }
}

HttpResponse Api::route(const HttpRequest& r) {
  // The path first (404), then the method (405), who asks (401), the role (403), the body
  // (413, 415, 422), and only then the stores, which refuse by state (404, 409).
  const Endpoint* found = nullptr;
  std::vector<std::string> args;
  std::vector<std::string> allow;
  find_endpoint(r, found, args, allow);
  if (allow.empty()) return error(404, "no such path: " + r.path + " (GET /api lists them)");
  if (found == nullptr) {
    HttpResponse res = error(405, r.method + " " + r.path + ": allowed: " + join(allow, ", "));
    res.headers.emplace_back("Allow", join(allow, ", "));
    return res;
  }
  if (found->handler == nullptr) return answer(200, api_description());

  // Who asks: the bearer token's owner, never anything the body says. Nothing without a
  // token reaches the database.
  const std::string* h = r.header("authorization");
  std::string token;
  if (h != nullptr && h->size() > 7 && ascii_lower(h->substr(0, 7)) == "bearer ") {
    token = std::string(trim(std::string_view(*h).substr(7)));
  }
  if (token.empty()) {
    return error(401, "no bearer token: send Authorization: Bearer TOKEN (medic users add prints one)");
  }
  const bool bootstrap = !setup_.bootstrap_token.empty() && same_bytes(token, setup_.bootstrap_token);
  if (!bootstrap && !parse_token(token)) return error(401, "unknown or revoked token");
  Call call{r, setup_, db(), std::move(args), {}, json::object(), SystemClock().now()};
  const std::string source = "http from " + host_of(r.peer);
  if (bootstrap) {
    // It reads and manages users, nothing else: a person holding it and a token of their own
    // is still one approver.
    if (found->changes_state && std::string(found->path).rfind("/api/users", 0) != 0) {
      return error(403, std::string("the bootstrap token (--api-token) may not ") + found->method + " " + found->path +
                            ": it only reads and manages users; decide with a user's own token");
    }
    call.who = db::Actor{"bootstrap", "admin", source};
  } else {
    auto id = call.s.users.authenticate(token);
    if (!id.ok()) return refusal(id.failure());
    if (!*id) return error(401, "unknown or revoked token");
    if ((*id)->disabled) return error(401, "user " + (*id)->name + " is disabled");
    call.who = db::Actor{(*id)->name, (*id)->role, source};
  }
  if (role_rank(call.who.role) < role_rank(found->role)) {
    return error(403, call.who.role + " " + call.who.name + " may not " + found->method + " " + found->path +
                          ": it needs " + found->role);
  }
  if (takes_body(*found, r)) {
    if (auto bad = read_body(*found, r, call.body)) return *bad;
  }
  return found->handler(call);
}

std::optional<HttpResponse> check_body(const HttpRequest& r) {
  const Endpoint* found = nullptr;
  std::vector<std::string> args;
  std::vector<std::string> allow;
  find_endpoint(r, found, args, allow);
  if (found == nullptr || found->handler == nullptr || !takes_body(*found, r)) return std::nullopt;
  json body = json::object();
  return read_body(*found, r, body);
}

}  // namespace medic::service
