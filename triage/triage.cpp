#include "triage/triage.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace medic::triage {

using detectors::Finding;
using detectors::Severity;

namespace {
// Faults that many links of one device show at once when the device itself fails (a line
// card, an ASIC, a power supply): links going down or flapping, frames corrupted. Optics
// readings, congestion and pause frames are per-port matters and are left out.
bool device_fault_kind(detectors::FindingKind k) {
  using K = detectors::FindingKind;
  return k == K::link_flap || k == K::link_down || k == K::corruption || k == K::fec_ber ||
         k == K::fec_uncorrectable;
}
}  // namespace

void TriageConfig::validate() const {
  if (device_fault_links < 2) throw std::invalid_argument("triage device_fault_links must be at least 2");
  if (device_fault_window.count() <= 0) throw std::invalid_argument("triage device_fault_window must be positive");
  if (reopen_window.count() < 0) throw std::invalid_argument("triage reopen_window must not be negative");
}

bool Maintenance::covers(const Finding& f, const fabric::Topology& t, Time now) const {
  if (now < starts_at || now >= ends_at) return false;
  if (link != fabric::kNone && f.link == link) return true;
  if (device != fabric::kNone) {
    if (f.device == device) return true;
    if (f.link != fabric::kNone) {
      const auto& l = t.link(f.link);
      if (t.port(l.a).device == device || t.port(l.b).device == device) return true;
    }
  }
  return false;
}

Triage::Triage(const fabric::Topology& topology, TriageConfig config) : topology_(topology), config_(config) {
  config_.validate();
}

void Triage::reset() {
  open_.clear();
  by_link_.clear();
  by_device_.clear();
  closed_by_link_.clear();
  closed_by_device_.clear();
  recent_.clear();
}

void Triage::resolve_identity(IncidentUpdate& u, Time now) {
  if (u.resolved) {
    // A measurement incident's end: the open incident of its scope now, if any.
    if (u.incident_id == 0) {
      if (const auto it = by_device_.find({u.cls, u.device}); it != by_device_.end()) u.incident_id = it->second;
    }
    return;
  }
  const Scope scope = is_device_class(u.cls) ? Scope{u.cls, fabric::kNone, u.device} : Scope{u.cls, u.link, fabric::kNone};
  IncidentUpdate found;
  start_update(found, scope, now);
  u.incident_id = found.incident_id;
  u.reopened = found.reopened;
  if (found.incident_id != 0 && !found.reopened) {
    // Joins an open incident: its class and severity so far.
    u.cls = found.cls;
    u.previous_severity = found.severity;
    u.severity = std::max(u.severity, found.severity);
    open_.at(found.incident_id).severity = u.severity;
  }
}

void Triage::load_open(std::span<const OpenIncident> open) {
  for (const auto& o : open) {
    open_[o.id] = o;
    if (is_device_class(o.cls)) {
      by_device_[{o.cls, o.device}] = o.id;
    } else if (o.link != fabric::kNone) {
      by_link_[o.link] = o.id;
    }
  }
}

void Triage::load_closed(std::span<const ClosedIncident> closed) {
  for (const auto& c : closed) {
    if (is_device_class(c.cls)) {
      auto& slot = closed_by_device_[{c.cls, c.device}];
      if (slot.closed_at <= c.closed_at) slot = c;
    } else if (c.link != fabric::kNone) {
      auto it = closed_by_link_.find(c.link);
      if (it == closed_by_link_.end() || it->second.closed_at <= c.closed_at) closed_by_link_[c.link] = c;
    }
  }
}

std::vector<OpenIncident> Triage::open_incidents() const {
  std::vector<OpenIncident> out;
  out.reserve(open_.size());
  for (const auto& [id, o] : open_) out.push_back(o);
  std::sort(out.begin(), out.end(), [](const OpenIncident& a, const OpenIncident& b) { return a.id < b.id; });
  return out;
}

std::optional<int64_t> Triage::open_for_link(fabric::LinkId link) const {
  const auto it = by_link_.find(link);
  if (it == by_link_.end()) return std::nullopt;
  return it->second;
}

void Triage::start_update(IncidentUpdate& u, const Scope& scope, Time now) {
  u.cls = scope.cls;
  u.link = scope.link;
  u.device = scope.device;
  const bool device_scope = is_device_class(scope.cls);
  // An open incident of the same scope takes the findings.
  if (device_scope) {
    if (const auto it = by_device_.find({scope.cls, scope.device}); it != by_device_.end()) u.incident_id = it->second;
  } else if (const auto it = by_link_.find(scope.link); it != by_link_.end()) {
    u.incident_id = it->second;
  }
  if (u.incident_id != 0) {
    const OpenIncident& o = open_.at(u.incident_id);
    u.cls = o.cls;
    u.previous_severity = o.severity;
    u.severity = o.severity;
    return;
  }
  // A recently closed one comes back.
  const ClosedIncident* closed = nullptr;
  if (device_scope) {
    if (const auto it = closed_by_device_.find({scope.cls, scope.device}); it != closed_by_device_.end()) closed = &it->second;
  } else if (const auto it = closed_by_link_.find(scope.link); it != closed_by_link_.end()) {
    closed = &it->second;
  }
  if (closed != nullptr && now - closed->closed_at <= config_.reopen_window) {
    u.incident_id = closed->id;
    u.reopened = true;
    u.cls = closed->cls;  // it is the same fault coming back
  }
}

TriageResult Triage::process(std::span<const Finding> findings, Time now, std::span<const Maintenance> maintenance,
                             const Recorded& recorded) {
  apply(recorded);
  TriageResult result;
  std::vector<const Finding*> actionable;
  std::vector<IncidentUpdate> resolved;
  for (const Finding& f : findings) {
    if (f.clears) {
      // The measurement works again: its open incident, if any, is resolved. One not known
      // open here may be waiting to be recorded (found while the database was down): the
      // update goes out without an id and is matched when recorded (resolve_identity).
      const Scope scope{class_of(f.kind), fabric::kNone, f.device};
      IncidentUpdate u;
      u.cls = scope.cls;
      u.device = scope.device;
      u.started_at = f.first_seen;
      u.detected_at = f.observed_at;
      u.summary = f.summary;
      u.resolved = true;
      u.findings.push_back(f);
      if (const auto it = by_device_.find({scope.cls, scope.device}); it != by_device_.end()) {
        u.incident_id = it->second;
        u.severity = u.previous_severity = open_.at(it->second).severity;
      }
      resolved.push_back(std::move(u));
      continue;
    }
    const Maintenance* m = nullptr;
    for (const auto& w : maintenance) {
      if (w.covers(f, topology_, now)) {
        m = &w;
        break;
      }
    }
    if (m != nullptr) {
      result.noted.push_back({f, "maintenance #" + std::to_string(m->id) + (m->reason.empty() ? "" : ": " + m->reason)});
      continue;
    }
    if (f.severity == Severity::info) {
      // Context for an open incident of the link, or just noted.
      if (f.link != fabric::kNone && by_link_.count(f.link) != 0) {
        actionable.push_back(&f);
      } else {
        result.noted.push_back({f, "noted"});
      }
      continue;
    }
    actionable.push_back(&f);
  }

  // Many links of one device failing at once: one device incident.
  for (auto& [dev, q] : recent_) {
    while (!q.empty() && q.front().first < now - config_.device_fault_window) q.pop_front();
  }
  std::map<fabric::DeviceId, std::set<fabric::LinkId>> failing;
  for (const Finding* f : actionable) {
    if (f->link == fabric::kNone || f->severity == Severity::info || !device_fault_kind(f->kind)) continue;
    if (by_link_.count(f->link) != 0) continue;  // already has its own incident
    const auto& l = topology_.link(f->link);
    for (const fabric::PortId p : {l.a, l.b}) failing[topology_.port(p).device].insert(f->link);
  }
  std::map<fabric::LinkId, fabric::DeviceId> reroute;
  std::vector<std::pair<size_t, fabric::DeviceId>> counts;
  std::map<fabric::DeviceId, std::set<fabric::LinkId>> device_links;  // for the summary
  for (auto& [dev, links] : failing) {
    std::set<fabric::LinkId> all = links;
    if (const auto it = recent_.find(dev); it != recent_.end()) {
      for (const auto& [t, l] : it->second) all.insert(l);
    }
    if (static_cast<int>(all.size()) >= config_.device_fault_links) {
      counts.push_back({all.size(), dev});
      device_links[dev] = all;
    }
  }
  // The device with more failing links explains them; on a tie, the one with the larger
  // share of its links failing (a host whose NICs all went down, rather than its ToR).
  auto share = [&](const std::pair<size_t, fabric::DeviceId>& c) {
    const size_t total = std::max<size_t>(1, topology_.ports_of(c.second).size());
    return static_cast<double>(c.first) / static_cast<double>(total);
  };
  std::sort(counts.begin(), counts.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    if (share(a) != share(b)) return share(a) > share(b);
    return a.second < b.second;
  });
  for (const auto& [n, dev] : counts) {
    for (const fabric::LinkId l : failing[dev]) reroute.emplace(l, dev);  // the busiest device wins a link
  }
  // A device already under a switch_fault (host_fault) incident takes its further failing
  // links too: never an incident and a drain per link of a failing device.
  for (const auto& [dev, links] : failing) {
    for (const IncidentClass cls : {IncidentClass::switch_fault, IncidentClass::host_fault}) {
      if (by_device_.count({cls, dev}) == 0) continue;
      for (const fabric::LinkId l : links) reroute.emplace(l, dev);
    }
  }

  std::map<Scope, size_t> index;
  for (const Finding* f : actionable) {
    Scope scope{class_of(f->kind), f->link, fabric::kNone};
    if (const auto r = reroute.find(f->link); r != reroute.end() && f->severity != Severity::info) {
      scope = {topology_.device(r->second).is_switch() ? IncidentClass::switch_fault : IncidentClass::host_fault,
               fabric::kNone, r->second};
    } else if (is_device_class(scope.cls)) {
      scope = {scope.cls, fabric::kNone, f->device};
    } else {
      scope.cls = IncidentClass::link_flap;  // link scopes are keyed by link alone
    }
    auto [it, inserted] = index.emplace(scope, result.updates.size());
    if (inserted) {
      IncidentUpdate u;
      start_update(u, scope, now);
      // When this update's findings began and were concluded (for an open incident, the
      // times of these new findings: they date its events).
      u.started_at = f->first_seen;
      u.detected_at = f->observed_at;
      if (u.is_new() || u.reopened) {
        if (u.is_new()) u.cls = is_device_class(scope.cls) ? scope.cls : class_of(f->kind);
        u.severity = f->severity;
        u.previous_severity = f->severity;
        u.started_at = f->first_seen;
        u.detected_at = f->observed_at;
        u.summary = f->summary;
      }
      result.updates.push_back(std::move(u));
    }
    IncidentUpdate& u = result.updates[it->second];
    if (u.is_new() || u.reopened) {
      // The most severe finding names a new incident's class and summary.
      if (f->severity > u.severity && u.is_new() && !is_device_class(u.cls)) {
        u.cls = class_of(f->kind);
        u.summary = f->summary;
      }
      u.started_at = std::min(u.started_at, f->first_seen);
      u.detected_at = std::min(u.detected_at, f->observed_at);
    } else {
      if (f->severity > u.severity) u.summary = f->summary;
      u.started_at = std::min(u.started_at, f->first_seen);
      u.detected_at = std::min(u.detected_at, f->observed_at);
    }
    // Probes and counters are independent signals: when a finding of one kind joins an
    // incident opened by the other, the fault is confirmed, and a warning becomes critical.
    if (!u.is_new() && !u.reopened && f->severity != Severity::info) {
      const bool probe_finding = class_of(f->kind) == IncidentClass::gray_failure;
      const bool probe_incident = u.cls == IncidentClass::gray_failure;
      if (probe_finding != probe_incident && !is_device_class(u.cls)) {
        u.corroborated = true;
        // The finding that made it critical names it, as any rise does (the stored
        // incident's summary is replaced when its severity rises).
        if (u.severity < Severity::critical) u.summary = f->summary;
        u.severity = Severity::critical;
      }
    }
    u.severity = std::max(u.severity, f->severity);
    if (u.suspect.empty() && !f->suspect.empty()) {
      u.suspect = f->suspect;
      u.suspect_port = f->suspect_port;
    }
    u.findings.push_back(*f);
  }
  // Device incidents say which links they hold, counting those that failed just before.
  for (auto& u : result.updates) {
    if ((u.cls == IncidentClass::switch_fault || u.cls == IncidentClass::host_fault) && (u.is_new() || u.reopened)) {
      std::set<std::string> links;
      for (const auto& f : u.findings) {
        if (f.link != fabric::kNone) links.insert(topology_.link(f.link).name);
      }
      const size_t n = std::max(links.size(), device_links[u.device].size());
      u.summary = topology_.device(u.device).name + ": " + std::to_string(n) + " links failing within " +
                  format_duration(config_.device_fault_window) + " (" + *links.begin() +
                  (links.size() > 1 ? ", ..." : "") + ")";
    }
    // Severity rises on an open incident are remembered here; new ones in bind().
    if (!u.is_new() && !u.reopened) open_.at(u.incident_id).severity = u.severity;
  }
  for (auto& u : resolved) {
    // Findings of this poll that still report the fault win over the clearing one.
    const bool still = std::any_of(result.updates.begin(), result.updates.end(), [&](const IncidentUpdate& x) {
      return x.cls == u.cls && x.device == u.device && x.link == fabric::kNone;
    });
    if (still) continue;
    if (u.incident_id != 0) close(u.incident_id, now);
    result.updates.push_back(std::move(u));
  }
  return result;
}

void Recorded::add_opened(const IncidentUpdate& u, int64_t id) {
  Opened o;
  o.id = id;
  o.cls = u.cls;
  o.link = u.link;
  o.device = u.device;
  o.severity = u.severity;
  o.detected_at = u.detected_at;
  o.device_fault_evidence = std::any_of(u.findings.begin(), u.findings.end(), [](const Finding& f) {
    return f.severity != Severity::info && device_fault_kind(f.kind);
  });
  opened.push_back(o);
}

void Triage::apply(const Recorded& r) {
  for (const auto& o : r.opened) bind(o);
  for (const auto& [id, at] : r.closed) close(id, at);
}

void Triage::bind(const Recorded::Opened& u) {
  const int64_t id = u.id;
  OpenIncident o{id, u.cls, u.link, u.device, u.severity};
  open_[id] = o;
  if (is_device_class(u.cls)) {
    by_device_[{u.cls, u.device}] = id;
    closed_by_device_.erase({u.cls, u.device});
  } else if (u.link != fabric::kNone) {
    by_link_[u.link] = id;
    closed_by_link_.erase(u.link);
    if (u.device_fault_evidence) {
      const auto& l = topology_.link(u.link);
      for (const fabric::PortId p : {l.a, l.b}) recent_[topology_.port(p).device].push_back({u.detected_at, u.link});
    }
  }
}

std::vector<IncidentUpdate> Triage::resolve(std::vector<IncidentUpdate> kept, Time now, const Recorded& recorded) {
  apply(recorded);
  // Scopes an earlier update of this batch opens or reopens, with its index.
  std::map<Scope, int> opening;
  auto scope_of = [](const IncidentUpdate& u) {
    return is_device_class(u.cls) ? Scope{u.cls, fabric::kNone, u.device} : Scope{u.cls, u.link, fabric::kNone};
  };
  for (size_t i = 0; i < kept.size(); ++i) {
    IncidentUpdate& u = kept[i];
    u.follows = -1;
    resolve_identity(u, now);
    if (u.incident_id != 0 && !u.reopened) continue;  // joins (or closes) an incident known open
    const Scope scope = scope_of(u);
    if (const auto it = opening.find(scope); it != opening.end()) {
      // Its incident is the one an earlier update of the batch opens: it joins that one.
      const IncidentUpdate& first = kept[static_cast<size_t>(it->second)];
      u.follows = it->second;
      u.incident_id = 0;
      u.reopened = false;
      u.cls = first.cls;
      u.previous_severity = first.severity;
      u.severity = std::max(u.severity, first.severity);
      continue;
    }
    if (u.resolved) continue;  // nothing of its scope open: nothing to close
    opening[scope] = static_cast<int>(i);
  }
  return kept;
}

void Triage::close(int64_t id, Time at) {
  const auto it = open_.find(id);
  if (it == open_.end()) return;
  const OpenIncident o = it->second;
  open_.erase(it);
  const ClosedIncident c{o.id, o.cls, o.link, o.device, at};
  if (is_device_class(o.cls)) {
    by_device_.erase({o.cls, o.device});
    closed_by_device_[{o.cls, o.device}] = c;
  } else if (o.link != fabric::kNone) {
    by_link_.erase(o.link);
    closed_by_link_[o.link] = c;
  }
}

}  // namespace medic::triage
