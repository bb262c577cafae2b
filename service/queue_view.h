// The repair queue as people see it, shared by medicd's API and `medic queue`: what an
// incident waits for, what a role may do with it, and the JSON of the queue.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "db/audit_store.h"
#include "db/incident_store.h"
#include "db/user_store.h"
#include "db/remediation_store.h"
#include "slo/slo.h"

namespace medic::service {

// What an incident in the queue waits for ("approval", "capacity", "repair", "a person",
// "validation"), "" when it is not in the queue.
std::string waits_for(const std::string& state);
// The queue as `medic queue --json` prints it.
nlohmann::json queue_json(const std::vector<db::CaseRow>& cases);

// The decisions a role may take on an incident in `state` (approve, reject, dismiss,
// repaired), in the order the page shows them; the stores refuse the same ones.
// `approved_by_me`: this person approved it already (a second approval is refused);
// `link_drained`: its link is drained (only then can it be marked repaired).
std::vector<std::string> allowed_actions(const std::string& state, const std::string& role, bool approved_by_me,
                                         bool link_drained);
// Roles in order of what they may do: viewer < operator < admin. -1 for anything else.
int role_rank(const std::string& role);

// An incident's stage times, as the SLO arithmetic reads them.
slo::IncidentTimes times_of(const db::IncidentRow& r);

// Every open incident as the page's queue shows it: class, severity, link or device, suspect
// end, age, what it waits for, its approvals, and the SLO budget left of its current stage.
nlohmann::json open_incidents_json(const std::vector<db::IncidentRow>& rows, std::span<const slo::Target> targets,
                                   const std::map<int64_t, std::vector<std::string>>& approvals,
                                   const std::function<int(const std::string&)>& approvals_needed, Time now);
// One incident's header: the same fields as a queue row.
nlohmann::json incident_json(const db::IncidentRow& r, std::span<const slo::Target> targets,
                             const std::vector<std::string>& approvals, int approvals_needed, Time now);

// An audit row and a user (never its token) as `medic audit --json`, `medic users list
// --json` and the API print them.
nlohmann::json audit_json(const db::AuditRow& r);
nlohmann::json user_json(const db::UserRow& u);

}  // namespace medic::service
