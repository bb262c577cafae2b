#include "triage/triage.h"

#include <algorithm>

namespace medic::triage {

IncidentClass class_of(detectors::FindingKind k) {
  switch (k) {
    case detectors::FindingKind::link_flap: return IncidentClass::link_flap;
  }
  return IncidentClass::link_flap;
}

void Triage::load_open(std::span<const OpenIncident> open) {
  for (const auto& o : open) open_[{o.cls, o.link}] = o.id;
}

std::vector<IncidentUpdate> Triage::process(std::span<const detectors::Finding> findings) {
  std::vector<IncidentUpdate> updates;
  std::map<std::pair<IncidentClass, fabric::LinkId>, size_t> index;
  for (const auto& f : findings) {
    const auto key = std::make_pair(class_of(f.kind), f.link);
    auto [it, inserted] = index.emplace(key, updates.size());
    if (inserted) {
      IncidentUpdate u;
      const auto open = open_.find(key);
      u.incident_id = open == open_.end() ? 0 : open->second;
      u.cls = key.first;
      u.link = f.link;
      u.severity = f.severity;
      u.started_at = f.first_seen;
      u.detected_at = f.observed_at;
      u.summary = f.summary;
      updates.push_back(std::move(u));
    }
    IncidentUpdate& u = updates[it->second];
    u.severity = std::max(u.severity, f.severity);
    u.started_at = std::min(u.started_at, f.first_seen);
    u.detected_at = std::min(u.detected_at, f.observed_at);
    u.findings.push_back(f);
  }
  return updates;
}

void Triage::bind(IncidentClass cls, fabric::LinkId link, int64_t id) { open_[{cls, link}] = id; }

void Triage::close(int64_t id) {
  std::erase_if(open_, [id](const auto& kv) { return kv.second == id; });
}

}  // namespace medic::triage
