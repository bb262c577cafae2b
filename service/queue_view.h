// The repair queue as people see it, shared by medicd's API and `medic queue`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "db/remediation_store.h"

namespace medic::service {

// What an incident in the queue waits for ("approval", "capacity", "repair", "a person",
// "validation"), "" when it is not in the queue.
std::string waits_for(const std::string& state);
// The queue as `medic queue --json` and GET /api/queue print it.
nlohmann::json queue_json(const std::vector<db::CaseRow>& cases);

}  // namespace medic::service
