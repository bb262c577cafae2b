#include "cli/slo.h"

#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/table.h"
#include "common/files.h"
#include "common/json.h"
#include "common/strings.h"
#include "common/time.h"
#include "db/slo_store.h"
#include "slo/render.h"
#include "slo/targets_file.h"
#include "triage/incident.h"

namespace medic::cli {

namespace {

using nlohmann::json;

std::vector<std::string> class_names() {
  std::vector<std::string> out;
  for (size_t c = 0; c < triage::kIncidentClassCount; ++c) {
    out.emplace_back(triage::to_string(static_cast<triage::IncidentClass>(c)));
  }
  return out;
}

std::string scope_text(const slo::TargetVersion& v) {
  return v.scope_kind.empty() ? "-" : v.scope_kind + "=" + v.scope_value;
}

std::string target_line(const slo::TargetVersion& v) {
  return v.incident_class + " " + std::string(slo::to_string(v.stage)) +
         (v.scope_kind.empty() ? "" : " (" + scope_text(v) + ")") + ": " + format_duration(v.target) + ", " +
         format_percent(v.objective);
}

int cmd_slo_apply(const DbOption& dbo, const std::string& file, const std::string& from_arg, const std::string& by,
                  std::ostream& out, std::ostream& err) {
  const Time now = SystemClock().now();
  const auto from = parse_time_arg(from_arg, now);
  if (!from) {
    err << "medic: --from: not a time: " << quote(from_arg) << " (now, -7d, 2026-11-01, RFC 3339, unix seconds)\n";
    return 2;
  }
  const auto text = read_data_file(file);
  if (!text.ok()) {
    err << "medic: " << text.error() << '\n';
    return 2;
  }
  const auto targets = slo::parse_targets(*text, file, class_names());
  if (!targets.ok()) {
    err << "medic: " << targets.error() << '\n';
    return 2;
  }
  auto db = dbo.open();
  db::SloStore slos(*db);
  const auto applied = slos.apply_targets(*targets, *from, cli_actor(by), now);
  if (!applied.ok()) {
    err << "medic: " << applied.error() << '\n';
    return applied.kind() == ErrorKind::conflict ? 2 : 1;
  }
  out << file << ": " << targets->size() << " targets; " << applied->written.size() << " changed from "
      << format_iso8601(*from) << ", " << applied->unchanged.size() << " unchanged\n";
  for (const auto& v : applied->written) out << "  changed: " << target_line(v) << '\n';
  for (const auto& v : applied->not_in_file) {
    out << "  kept (not in the file; targets are changed, never removed): " << target_line(v) << '\n';
  }
  return 0;
}

int cmd_slo_targets(const DbOption& dbo, const std::string& at_arg, bool history, bool as_json, std::ostream& out,
                    std::ostream& err) {
  const Time now = SystemClock().now();
  const auto at = parse_time_arg(at_arg, now);
  if (!at) {
    err << "medic: --at: not a time: " << quote(at_arg) << " (now, -7d, 2026-11-01, RFC 3339, unix seconds)\n";
    return 2;
  }
  auto db = dbo.open();
  db::SloStore slos(*db);
  const auto targets = history ? slos.target_versions() : slos.targets_at(*at);
  if (!targets.ok()) {
    err << "medic: " << targets.error() << '\n';
    return 1;
  }
  if (as_json) {
    json arr = json::array();
    for (const auto& v : *targets) {
      json j = {{"class", v.incident_class}, {"stage", std::string(slo::to_string(v.stage))},
                {"target_s", seconds(v.target)}, {"objective", v.objective}, {"from", format_iso8601(v.from)}};
      if (!v.scope_kind.empty()) j["scope"] = {{v.scope_kind, v.scope_value}};
      arr.push_back(std::move(j));
    }
    out << json_text(arr, 2) << '\n';
    return 0;
  }
  Table t({"CLASS", "STAGE", "SCOPE", "TARGET", "OBJECTIVE", "FROM"});
  for (const auto& v : *targets) {
    t.add({v.incident_class, std::string(slo::to_string(v.stage)), scope_text(v), format_duration(v.target),
           format_percent(v.objective), format_iso8601(v.from).substr(0, 19) + "Z"});
  }
  if (!history) out << "SLO targets in force at " << format_iso8601(*at) << '\n';
  out << t.render();
  return 0;
}

int cmd_slo_set(const DbOption& dbo, const std::string& cls, const std::string& stage, double target_s,
                double objective, const std::string& by, std::ostream& out, std::ostream& err) {
  const auto st = slo::parse_stage(stage);
  if (!st) {
    err << "medic: unknown stage " << quote(stage) << " (detect, mitigate, repair, restore)\n";
    return 2;
  }
  if (!triage::parse_incident_class(cls)) {
    err << "medic: unknown incident class " << quote(cls) << '\n';
    return 2;
  }
  if (!(target_s > 0 && target_s <= 366 * 86400.0)) {
    err << "medic: target must be a positive number of seconds, at most 366 days\n";
    return 2;
  }
  if (!(objective > 0 && objective <= 1)) {
    err << "medic: --objective must be a fraction in (0, 1]\n";
    return 2;
  }
  auto db = dbo.open();
  db::SloStore slos(*db);
  slo::Target t{cls, *st, from_seconds(target_s), objective};
  if (auto s = slos.set_slo_target(t, cli_actor(by), SystemClock().now()); !s.ok()) {
    err << "medic: " << s.error() << '\n';
    return 1;
  }
  out << cls << " " << stage << ": target " << format_duration(t.target) << ", objective " << format_percent(objective)
      << " from now on\n";
  return 0;
}

std::string opt_dur(const std::optional<double>& s) { return s ? format_duration(from_seconds(*s)) : "-"; }

std::string report_table(const slo::Report& r) {
  std::ostringstream o;
  o << "SLO compliance, " << r.query.label << ": [" << format_iso8601(r.query.window.from) << ", "
    << format_iso8601(r.query.window.to) << ") UTC, " << r.incidents_read << " incidents read\n";
  std::vector<std::string> head = {"CLASS", "STAGE"};
  if (!r.query.by.empty()) head.emplace_back("GROUP");
  for (const char* h : {"TARGET", "OBJECTIVE", "DECIDED", "MET", "MISSED", "PENDING", "COMPLIANCE", "BUDGET LEFT",
                        "BURN 1H", "BURN 6H", "BURN 3D", "P50", "P90", "P99", "MAX"}) {
    head.emplace_back(h);
  }
  Table t(head);
  for (const auto& l : r.slos) {
    const slo::Compliance c = l.compliance();
    const auto left = slo::budget_remaining(l);
    std::vector<std::string> row = {l.incident_class, std::string(slo::to_string(l.stage))};
    if (!r.query.by.empty()) row.push_back(l.group);
    const bool breached = c.decided && l.missed > l.allowed_misses + 1e-9;
    for (std::string s : {format_duration(l.target), format_percent(l.objective), std::to_string(c.decided),
                          std::to_string(l.met), std::to_string(l.missed), std::to_string(l.pending),
                          c.decided ? format_percent(c.compliance) + (breached ? "!" : "") : "-",
                          left ? format_percent(*left) : "none", format_number(l.burn.at("1h")),
                          format_number(l.burn.at("6h")), format_number(l.burn.at("3d")), opt_dur(l.seconds.quantile(0.5)),
                          opt_dur(l.seconds.quantile(0.9)), opt_dur(l.seconds.quantile(0.99)), opt_dur(l.seconds.max())}) {
      row.push_back(std::move(s));
    }
    t.add(std::move(row));
  }
  o << t.render();
  o << "\nbreaches: " << r.breaches.size() << '\n';
  constexpr size_t kShown = 20;
  for (size_t i = 0; i < r.breaches.size() && i < kShown; ++i) {
    const auto& b = r.breaches[i];
    std::string went;
    for (const auto& s : b.time_went) went += (went.empty() ? "" : ", ") + s.what + " " + format_duration(s.time);
    o << "  #" << b.incident_id << " " << b.incident_class << " " << b.where << " " << slo::to_string(b.stage) << ": late "
      << format_duration(b.late) << " (took " << format_duration(b.elapsed) << (b.finished ? "" : ", unfinished")
      << "; " << (went.empty() ? "-" : went) << ")\n";
  }
  if (r.breaches.size() > kShown) o << "  ... " << r.breaches.size() - kShown << " more (--format json has them all)\n";
  o << "capacity: " << r.capacity.drains << " drains, " << format_number(r.capacity.link_hours) << " link-hours, "
    << format_number(r.capacity.tbps_hours) << " Tb/s-hours out of service";
  if (const auto& lh = r.capacity.lowest) {
    o << "; lowest headroom " << format_percent(lh->headroom) << " (" << lh->group << ", " << format_iso8601(lh->at)
      << ", snapshot #" << lh->snapshot_id << ")";
  }
  o << '\n';
  o << "repeat offenders: " << r.offenders.size() + r.offenders_left_off << '\n';
  for (const auto& x : r.offenders) {
    std::string ids;
    for (const auto id : x.incidents) ids += (ids.empty() ? "#" : " #") + std::to_string(id);
    o << "  " << x.kind << " " << x.name << ": " << ids << '\n';
  }
  o << "trend:";
  for (const auto& w : r.trend) {
    const int d = w.met + w.missed;
    o << "  " << w.iso << " " << (d ? format_percent(w.compliance()) : "-") << " (" << d << ")";
  }
  o << '\n';
  return o.str();
}

struct ReportArgs {
  std::string from, to, window, month, cls, by, format = "table", out_file;
};

int cmd_slo_report(const DbOption& dbo, const ReportArgs& a, std::ostream& out, std::ostream& err) {
  std::map<std::string, std::string> params;
  auto put = [&](const char* k, const std::string& v) {
    if (!v.empty()) params[k] = v;
  };
  put("from", a.from);
  put("to", a.to);
  put("window", a.window);
  put("month", a.month);
  put("class", a.cls);
  put("by", a.by);
  const Time now = SystemClock().now();
  const auto q = slo::parse_report_query(params, now, "--");
  if (!q.ok()) {
    err << "medic: " << q.error() << '\n';
    return 2;
  }
  if (!q->incident_class.empty() && !triage::parse_incident_class(q->incident_class)) {
    err << "medic: --class: unknown incident class " << quote(q->incident_class) << '\n';
    return 2;
  }
  auto db = dbo.open();
  db::SloStore slos(*db);
  const auto rep = slos.report(*q, now);
  if (!rep.ok()) {
    err << "medic: " << rep.error() << '\n';
    return 1;
  }
  std::string text;
  if (a.format == "json") {
    text = json_text(slo::report_json(*rep), 2) + "\n";
  } else if (a.format == "csv") {
    text = slo::report_csv(*rep);
  } else if (a.format == "md") {
    text = slo::report_markdown(*rep);
  } else if (a.format == "html") {
    text = slo::report_html(*rep);
  } else {
    text = report_table(*rep);
  }
  if (a.out_file.empty()) {
    out << text;
    return 0;
  }
  // Written whole or not at all: a temporary file renamed over the target.
  if (auto st = write_file_atomically(a.out_file, text); !st.ok()) {
    err << "medic: --out: " << st.error() << '\n';
    return 1;
  }
  out << "wrote " << a.out_file << " (" << text.size() << " bytes, " << rep->slos.size() << " SLOs, "
      << rep->breaches.size() << " breaches)\n";
  return 0;
}

}  // namespace

void add_slo_commands(CommandContext& ctx) {
  struct Options {
    ReportArgs report;
    std::string file, from = "now", by, at = "now", set_class, set_stage;
    double set_target = 0, set_objective = 0.99;
    bool history = false, json = false;
  };
  auto o = std::make_shared<Options>();
  auto* slo_cmd = ctx.app.add_subcommand("slo", "SLO targets (versioned) and compliance reports");
  slo_cmd->require_subcommand(1);

  auto* report = slo_cmd->add_subcommand("report", "SLO compliance over a window: budgets, burn rates, breaches, capacity cost, repeat offenders, trend");
  ctx.dbo.add(report);
  report->add_option("--from", o->report.from, "window start (with --to): now, -7d, 2026-11-01, RFC 3339, unix seconds");
  report->add_option("--to", o->report.to, "window end, not included (with --from)");
  report->add_option("--window", o->report.window, "the N days (or hours) ending now: 7d, 28d, 90d (default 7d)");
  report->add_option("--month", o->report.month, "one calendar month in UTC: YYYY-MM");
  report->add_option("--class", o->report.cls, "only this incident class");
  report->add_option("--by", o->report.by, "one SLO line per zone, plane or role");
  report->add_option("--format", o->report.format, "table (default), json, csv, md or html")
      ->check(CLI::IsMember({"table", "json", "csv", "md", "html"}));
  report->add_option("--out", o->report.out_file, "write to this file instead of standard output");
  report->callback([&ctx, o] { ctx.action = [&ctx, o] { return cmd_slo_report(ctx.dbo, o->report, ctx.out, ctx.err); }; });

  auto* apply = slo_cmd->add_subcommand("apply", "load a targets file (data/slo.json) as the targets from --from on (changes state)");
  ctx.dbo.add(apply);
  apply->add_option("FILE", o->file, "the targets file")->required();
  apply->add_option("--from", o->from, "the time the new targets hold from (default now)");
  apply->add_option("--by", o->by, "who applies it, for the audit trail (default: $USER)");
  apply->callback([&ctx, o] {
    ctx.action = [&ctx, o] { return cmd_slo_apply(ctx.dbo, o->file, o->from, o->by, ctx.out, ctx.err); };
  });

  auto* targets = slo_cmd->add_subcommand("targets", "the targets in force at a time (default now), or every version");
  ctx.dbo.add(targets);
  targets->add_option("--at", o->at, "the time: now, -30d, 2026-10-01, RFC 3339, unix seconds");
  targets->add_flag("--history", o->history, "every version of every target");
  targets->add_flag("--json", o->json, "print JSON");
  targets->callback([&ctx, o] {
    ctx.action = [&ctx, o] { return cmd_slo_targets(ctx.dbo, o->at, o->history, o->json, ctx.out, ctx.err); };
  });

  auto* set = slo_cmd->add_subcommand("set", "change one class and stage's target from now on (changes state)");
  ctx.dbo.add(set);
  set->add_option("class", o->set_class, "incident class, e.g. link_flap")->required();
  set->add_option("stage", o->set_stage, "detect, mitigate, repair or restore")->required();
  set->add_option("seconds", o->set_target, "target in seconds")->required();
  set->add_option("--objective", o->set_objective, "share of incidents that must meet it (default 0.99)");
  set->add_option("--by", o->by, "who changes it, for the audit trail (default: $USER)");
  set->callback([&ctx, o] {
    ctx.action = [&ctx, o] {
      return cmd_slo_set(ctx.dbo, o->set_class, o->set_stage, o->set_target, o->set_objective, o->by, ctx.out, ctx.err);
    };
  });
}

}  // namespace medic::cli
