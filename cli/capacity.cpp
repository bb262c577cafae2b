#include "common/files.h"
#include "common/json.h"
#include "cli/capacity.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>

#include "cli/table.h"
#include "common/strings.h"
#include "db/capacity_states.h"
#include "db/connection.h"
#include "fabric/loader.h"
#include "remediation/capacity.h"
#include "remediation/capacity_config.h"
#include "remediation/capacity_view.h"

namespace medic::cli {

namespace {

using fabric::GroupId;
using fabric::LinkId;
using nlohmann::json;
using remediation::CapacityModel;

// Exit statuses of `medic capacity whatif`: allowed, refused, and no answer (bad arguments,
// unreadable files, no database) so that a script never takes trouble for a refusal.
constexpr int kAllowed = 0;
constexpr int kRefused = 1;
constexpr int kNoAnswer = 2;

struct CapacityArgs {
  std::string topology, capacity, group, drain;
  bool json = false;
};

// Where the link states came from, for the reader.
struct States {
  std::string source;  // the database's (redacted) URL; "" when none was given
  int drained = 0, draining = 0, down = 0, oper_unknown = 0, not_in_topology = 0;
};

// A topology with the derived groups and a capacity model holding the recorded states.
struct View {
  fabric::Topology topo;
  remediation::CapacityConfig config;
  std::unique_ptr<CapacityModel> model;
  States states;
};

std::string database_url(const DbOption& dbo) {
  if (!dbo.url.empty()) return dbo.url;
  const char* env = std::getenv("MEDIC_DB_URL");
  return env ? env : "";
}

// Loads the topology and derives the groups with the configured floors. Prints what went
// wrong and returns nullptr on failure.
std::unique_ptr<View> load_view(const CapacityArgs& a, std::ostream& err) {
  auto v = std::make_unique<View>();
  auto loaded = load_topology_reporting(a.topology, err);
  if (!loaded) return nullptr;
  fabric::Topology own = std::move(*loaded);
  try {
    v->config = remediation::CapacityConfig::load_file(
        a.capacity.empty() ? data_dir() + "/capacity.json" : a.capacity);
    v->topo = remediation::with_derived_groups(own, v->config);
  } catch (const remediation::CapacityConfigError& e) {
    err << "medic: " << e.what() << '\n';
    return nullptr;
  }
  v->model = std::make_unique<CapacityModel>(v->topo, v->config.budget());
  return v;
}

// Applies the link states the database records (when one is given). Prints what went
// wrong and returns false on failure.
bool apply_states(View& v, const DbOption& dbo, std::ostream& err) {
  const std::string url = database_url(dbo);
  if (url.empty()) return true;
  v.states.source = db::redact_url(url);
  const auto rows = db::read_link_capacity_states(url);
  if (!rows.ok()) {
    err << "medic: " << rows.error() << '\n';
    return false;
  }
  const auto c = remediation::apply_link_states(*v.model, *rows);
  v.states.drained = c.drained;
  v.states.draining = c.draining;
  v.states.down = c.down;
  v.states.oper_unknown = c.oper_unknown;
  v.states.not_in_topology = c.not_in_topology;
  return true;
}

std::string states_line(const States& s) {
  if (s.source.empty()) return "link states: none (no --db): every link counted up and undrained";
  std::string line = "link states: " + s.source + ": " + std::to_string(s.drained) + " drained, " +
                     std::to_string(s.draining) + " draining, " + std::to_string(s.down) + " down";
  if (s.oper_unknown > 0) line += ", " + std::to_string(s.oper_unknown) + " of unknown oper state (counted up)";
  if (s.not_in_topology > 0) line += "; " + std::to_string(s.not_in_topology) + " links of the database are not in the topology";
  return line;
}

json states_json(const States& s) {
  return {{"source", s.source.empty() ? json(nullptr) : json(s.source)},
          {"drained", s.drained},
          {"draining", s.draining},
          {"down", s.down},
          {"oper_unknown", s.oper_unknown},
          {"not_in_topology", s.not_in_topology}};
}

// How many more links of the group can go out of service before it is below its floor,
// the slowest first; 0 for a group already below.
int headroom(const CapacityModel& m, GroupId g) {
  const auto& grp = m.topology().group(g);
  if (remediation::below_floor(m.fraction_in_service(g), grp.floor)) return 0;
  std::vector<int64_t> speeds;
  for (const LinkId l : grp.links) {
    if (m.in_service(l)) speeds.push_back(m.speed_mbps(l));
  }
  std::sort(speeds.begin(), speeds.end());
  int64_t available = m.available_mbps(g);
  int n = 0;
  for (const int64_t s : speeds) {
    if (remediation::below_floor(m.fraction(g, available - s), grp.floor)) break;
    available -= s;
    ++n;
  }
  return n;
}

std::string gbps(int64_t mbps) { return format_number(static_cast<double>(mbps) / 1000.0); }

std::string link_state(const CapacityModel& m, LinkId l) { return remediation::link_state_text(m, l); }

json group_json(const CapacityModel& m, GroupId g) {
  const auto& grp = m.topology().group(g);
  return {{"name", grp.name},
          {"kind", grp.kind},
          {"links", grp.links.size()},
          {"links_in_service", m.links_in_service(g)},
          {"gbps", static_cast<double>(m.total_mbps(g)) / 1000.0},
          {"gbps_in_service", m.available_gbps(g)},
          {"fraction", m.fraction_in_service(g)},
          {"floor", grp.floor},
          {"below_floor", remediation::below_floor(m.fraction_in_service(g), grp.floor)},
          {"headroom", headroom(m, g)}};
}

// Switches with links drained or draining, the most first (at most `limit`).
std::vector<std::pair<fabric::DeviceId, int>> busiest_switches(const CapacityModel& m, size_t limit) {
  std::vector<std::pair<fabric::DeviceId, int>> out;
  const auto& t = m.topology();
  for (fabric::DeviceId d = 0; d < t.devices().size(); ++d) {
    if (t.device(d).is_switch() && m.budget_used(d) > 0) out.emplace_back(d, m.budget_used(d));
  }
  std::sort(out.begin(), out.end(), [&](const auto& x, const auto& y) {
    if (x.second != y.second) return x.second > y.second;
    return t.device(x.first).name < t.device(y.first).name;
  });
  if (out.size() > limit) out.resize(limit);
  return out;
}

constexpr size_t kBusiest = 10;

int cmd_capacity_show(const CapacityArgs& a, const DbOption& dbo, std::ostream& out, std::ostream& err) {
  const auto v = load_view(a, err);
  if (!v) return 1;
  const CapacityModel& m = *v->model;
  const fabric::Topology& t = v->topo;
  std::vector<GroupId> shown;
  if (!a.group.empty()) {
    const auto g = t.find_group(a.group);
    if (!g) {
      err << "medic: --group " << quote(a.group) << ": no such capacity group in " << a.topology
          << " (groups are named like \"rtsw0001 uplinks\"; medic capacity show lists them)\n";
      return 2;
    }
    shown.push_back(*g);
  } else {
    for (GroupId g = 0; g < t.groups().size(); ++g) shown.push_back(g);
  }
  if (!apply_states(*v, dbo, err)) return 1;
  const auto& budget = m.budget();
  const auto busiest = busiest_switches(m, kBusiest);
  if (a.json) {
    json groups = json::array();
    for (const GroupId g : shown) {
      json gj = group_json(m, g);
      if (!a.group.empty()) {
        json links = json::array();
        for (const LinkId l : t.group(g).links) {
          links.push_back({{"link", t.link(l).name},
                           {"gbps", t.link(l).speed_gbps},
                           {"oper_up", m.oper_up(l)},
                           {"drained", m.drained(l)},
                           {"draining", m.reserved(l)},
                           {"in_service", m.in_service(l)}});
        }
        gj["link_states"] = std::move(links);
      }
      groups.push_back(std::move(gj));
    }
    json sw = json::array();
    for (const auto& [d, n] : busiest) sw.push_back({{"name", t.device(d).name}, {"used", n}});
    out << json{{"topology", a.topology},
                {"states", states_json(v->states)},
                {"groups", std::move(groups)},
                {"budget",
                 {{"fabric", {{"used", m.budget_used()}, {"limit", budget.fabric}}},
                  {"per_switch_limit", budget.per_switch},
                  {"busiest_switches", std::move(sw)}}}}
               .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
        << '\n';
    return 0;
  }
  std::map<std::string, size_t> kinds;
  for (const auto& g : t.groups()) ++kinds[g.kind];
  std::vector<std::string> parts;
  for (const auto& [k, n] : kinds) parts.push_back(k + " " + std::to_string(n));
  out << "capacity groups of " << a.topology << ": " << t.groups().size()
      << (parts.empty() ? "" : " (" + join(parts, ", ") + ")") << '\n';
  out << states_line(v->states) << '\n';
  Table table({"GROUP", "KIND", "LINKS", "GBPS", "IN SERVICE", "FLOOR", "HEADROOM"});
  for (const GroupId g : shown) {
    const auto& grp = t.group(g);
    const bool below = remediation::below_floor(m.fraction_in_service(g), grp.floor);
    table.add({grp.name, grp.kind, std::to_string(m.links_in_service(g)) + "/" + std::to_string(grp.links.size()),
               gbps(m.available_mbps(g)) + "/" + gbps(m.total_mbps(g)), format_percent(m.fraction_in_service(g)),
               format_percent(grp.floor), below ? "0 (BELOW FLOOR)" : std::to_string(headroom(m, g))});
  }
  out << table.render();
  if (!a.group.empty()) {
    Table links({"LINK", "GBPS", "STATE"});
    for (const LinkId l : t.group(shown.front()).links) {
      links.add({t.link(l).name, format_number(t.link(l).speed_gbps), link_state(m, l)});
    }
    out << '\n' << links.render();
  }
  out << "\ndrain budget: " << m.budget_used() << " of " << budget.fabric
      << " links drained or draining fabric-wide; at most " << budget.per_switch << " per switch\n";
  if (busiest.empty()) {
    out << "busiest switches: none (no link drained or draining)\n";
  } else {
    std::vector<std::string> sw;
    for (const auto& [d, n] : busiest) sw.push_back(t.device(d).name + " " + std::to_string(n) + "/" + std::to_string(budget.per_switch));
    out << "busiest switches: " << join(sw, ", ") << '\n';
  }
  return 0;
}

// The links of --drain, each once. Prints every problem and returns nullopt on any.
std::optional<std::vector<LinkId>> parse_drain_list(const std::string& list, const fabric::Topology& t,
                                                   std::ostream& err) {
  std::vector<std::string> items;
  for (const auto& part : split(list, ',')) items.emplace_back(trim(part));
  if (std::all_of(items.begin(), items.end(), [](const std::string& s) { return s.empty(); })) {
    err << "medic: --drain: no links given (L1,L2,... by name or either end as device:port)\n";
    return std::nullopt;
  }
  std::vector<LinkId> links;
  std::vector<std::string> given;  // how each link of `links` was written
  bool ok = true;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string& item = items[i];
    if (item.empty()) {
      err << "medic: --drain: item " << i + 1 << " is empty\n";
      ok = false;
      continue;
    }
    const auto l = t.find_link(item);
    if (!l) {
      err << "medic: --drain: unknown link " << quote(item) << " (a link's name, or either end as device:port)\n";
      ok = false;
      continue;
    }
    const auto seen = std::find(links.begin(), links.end(), *l);
    if (seen != links.end()) {
      const std::string& first = given[static_cast<size_t>(seen - links.begin())];
      if (first == item) {
        err << "medic: --drain: " << quote(item) << " is listed twice\n";
      } else {
        err << "medic: --drain: " << quote(first) << " and " << quote(item) << " are the same link "
            << quote(t.link(*l).name) << '\n';
      }
      ok = false;
      continue;
    }
    links.push_back(*l);
    given.push_back(item);
  }
  if (!ok) return std::nullopt;
  return links;
}

int cmd_capacity_whatif(const CapacityArgs& a, const DbOption& dbo, std::ostream& out, std::ostream& err) {
  const auto v = load_view(a, err);
  if (!v) return kNoAnswer;
  const CapacityModel& m = *v->model;
  const fabric::Topology& t = v->topo;
  const auto links = parse_drain_list(a.drain, t, err);
  if (!links) return kNoAnswer;
  if (!apply_states(*v, dbo, err)) return kNoAnswer;
  const remediation::WhatIf w = m.what_if(*links);

  // Links of each group that are in service now and would not be.
  std::map<GroupId, int> leaving;
  std::vector<LinkId> unchanged;
  for (const LinkId l : *links) {
    if (m.drained(l) || m.reserved(l)) unchanged.push_back(l);
    if (!m.in_service(l)) continue;
    for (const GroupId g : t.groups_of(l)) ++leaving[g];
  }
  // Every group that would change (or break without changing: a group already below its
  // floor losing a link that is down now).
  std::vector<const remediation::GroupImpact*> changed;
  for (const auto& im : w.impacts) {
    if (im.after != im.before || im.breaks_floor) changed.push_back(&im);
  }
  const auto& budget = m.budget();
  const int code = w.allowed ? kAllowed : kRefused;
  if (a.json) {
    json j = remediation::what_if_json(m, *links);
    j["topology"] = a.topology;
    j["states"] = states_json(v->states);
    out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)        << '\n';
    return code;
  }
  out << "what if " << links->size() << " link" << (links->size() == 1 ? " was" : "s were") << " drained:\n";
  for (const LinkId l : *links) {
    const bool held = m.drained(l) || m.reserved(l);
    out << "  " << t.link(l).name << " (" << link_state(m, l) << (held ? ": nothing changes" : "") << ")\n";
  }
  out << states_line(v->states) << '\n';
  if (changed.empty()) {
    out << "no capacity group changes\n";
  } else {
    Table table({"GROUP", "KIND", "BEFORE", "AFTER", "FLOOR", "RESULT"});
    for (const auto* im : changed) {
      const auto& grp = t.group(im->group);
      const int in = m.links_in_service(im->group);
      const std::string total = std::to_string(grp.links.size());
      table.add({grp.name, grp.kind, format_percent(im->before) + " (" + std::to_string(in) + "/" + total + ")",
                 format_percent(im->after) + " (" + std::to_string(in - leaving[im->group]) + "/" + total + ")",
                 format_percent(im->floor), im->breaks_floor ? "BREAKS FLOOR" : "ok"});
    }
    out << table.render();
  }
  out << "drain budget: " << w.drained_before << " -> " << w.drained_after << " of " << budget.fabric
      << " links fabric-wide";
  if (!w.switches.empty()) {
    std::vector<std::string> sw;
    for (const auto& s : w.switches) {
      sw.push_back(t.device(s.device).name + " " + std::to_string(s.before) + " -> " + std::to_string(s.after) +
                   (s.after > budget.per_switch ? " (OVER)" : ""));
    }
    out << "; per switch (at most " << budget.per_switch << "): " << join(sw, ", ");
  }
  out << '\n';
  if (w.allowed) {
    out << "allowed: every group stays at or above its floor and the budget holds\n";
  } else {
    out << "refused: " << w.problems.size() << " problem" << (w.problems.size() == 1 ? "" : "s") << '\n';
    for (const auto& p : w.problems) out << "  " << p << '\n';
  }
  return code;
}

}  // namespace

void add_capacity_commands(CommandContext& ctx) {
  auto* cap = ctx.app.add_subcommand("capacity", "capacity groups, floors and the drain budget; what a drain would do");
  cap->require_subcommand(1);
  auto show_args = std::make_shared<CapacityArgs>();
  auto* show = cap->add_subcommand("show", "every capacity group (or one) in service, its floor and headroom; the budget");
  show->add_option("--topology", show_args->topology, "topology JSON file")->required();
  show->add_option("--capacity", show_args->capacity, "floors per group kind and the budget (default data/capacity.json)");
  show->add_option("--group", show_args->group, "only this group, with the state of each of its links");
  show->add_flag("--json", show_args->json, "print JSON");
  ctx.dbo.add(show);
  show->callback([ctx, show_args] {
    ctx.action = [ctx, show_args] { return cmd_capacity_show(*show_args, ctx.dbo, ctx.out, ctx.err); };
  });

  auto whatif_args = std::make_shared<CapacityArgs>();
  auto* whatif = cap->add_subcommand(
      "whatif", "what draining these links would do: every group that changes, the budget; exit 0 allowed, 1 refused, 2 no answer");
  whatif->add_option("--topology", whatif_args->topology, "topology JSON file")->required();
  whatif->add_option("--drain", whatif_args->drain, "L1,L2,...: links by name or either end as device:port")->required();
  whatif->add_option("--capacity", whatif_args->capacity, "floors per group kind and the budget (default data/capacity.json)");
  whatif->add_flag("--json", whatif_args->json, "print JSON");
  ctx.dbo.add(whatif);
  whatif->callback([ctx, whatif_args] {
    ctx.action = [ctx, whatif_args] {
      try {
        return cmd_capacity_whatif(*whatif_args, ctx.dbo, ctx.out, ctx.err);
      } catch (const std::exception& e) {
        // Exit 1 means "refused" here: anything else that stops an answer is 2.
        ctx.err << "medic: " << e.what() << '\n';
        return kNoAnswer;
      }
    };
  });
}

}  // namespace medic::cli
