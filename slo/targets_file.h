// The SLO targets file (data/slo.json, docs/formats.md): per incident class and stage a target
// time and an objective, optionally scoped to one zone, plane or role. `medic slo apply`
// records its content as versions holding from a given time (slo/compliance.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "slo/compliance.h"

namespace medic::slo {

// The targets of a file's text, each with `from` left at the epoch (the caller sets it).
// Refused (invalid) with "SOURCE: $.targets[N].field: problem" for the first problem:
// unknown keys, an unknown class or stage, a target outside (0 s, 366 days], an objective
// outside (0, 1], a scope other than one of zone, plane or role, the same class, stage and
// scope twice.
Result<std::vector<TargetVersion>> parse_targets(std::string_view text, const std::string& source,
                                                 const std::vector<std::string>& known_classes);

}  // namespace medic::slo
