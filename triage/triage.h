// Findings -> incidents. Findings for a link that already has an open incident of the same
// class are attached to it (both ends of a flapping link report it); others open a new one.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "detectors/finding.h"
#include "triage/incident.h"

namespace medic::triage {

struct OpenIncident {
  int64_t id = 0;
  IncidentClass cls = IncidentClass::link_flap;
  fabric::LinkId link = fabric::kNone;
};

struct IncidentUpdate {
  int64_t incident_id = 0;  // 0: a new incident, to be inserted and then bound with bind()
  IncidentClass cls = IncidentClass::link_flap;
  fabric::LinkId link = fabric::kNone;
  detectors::Severity severity = detectors::Severity::warning;
  Time started_at{};   // earliest first_seen of its findings
  Time detected_at{};  // when the first finding concluded
  std::string summary;
  std::vector<detectors::Finding> findings;
};

IncidentClass class_of(detectors::FindingKind k);

class Triage {
 public:
  // Incidents already open (from the database at start-up).
  void load_open(std::span<const OpenIncident> open);

  // New incidents (incident_id 0) and findings for existing ones.
  std::vector<IncidentUpdate> process(std::span<const detectors::Finding> findings);

  // Records the database id given to a new incident.
  void bind(IncidentClass cls, fabric::LinkId link, int64_t id);
  // Forgets an incident that is no longer open.
  void close(int64_t id);

  size_t open_count() const { return open_.size(); }

 private:
  std::map<std::pair<IncidentClass, fabric::LinkId>, int64_t> open_;
};

}  // namespace medic::triage
