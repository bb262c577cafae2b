#include "slo/targets_file.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "common/json.h"
#include "common/strings.h"

namespace medic::slo {

using nlohmann::json;

Result<std::vector<TargetVersion>> parse_targets(std::string_view text, const std::string& source,
                                                 const std::vector<std::string>& known_classes) {
  auto doc = parse_json(text, source);
  if (!doc) return Error::invalid(doc.error());
  auto bad = [&](const std::string& path, const std::string& what) -> Result<std::vector<TargetVersion>> {
    return Error::invalid(source + ": " + path + ": " + what);
  };
  if (!doc->is_object()) return bad("$", std::string("expected an object, got ") + json_type_name(*doc));
  for (const auto& [k, v] : doc->items()) {
    if (k != "version" && k != "comment" && k != "targets") return bad("$", "unknown key " + quote(k) + " (version, comment, targets)");
  }
  if (const auto v = doc->find("version"); v != doc->end() && *v != 1) {
    return bad("$.version", "unsupported version " + v->dump() + " (this build reads version 1)");
  }
  const auto targets = doc->find("targets");
  if (targets == doc->end() || !targets->is_array()) return bad("$.targets", "expected an array of targets");
  std::vector<TargetVersion> out;
  std::set<std::tuple<std::string, Stage, std::string, std::string>> seen;
  for (size_t i = 0; i < targets->size(); ++i) {
    const json& t = (*targets)[i];
    const std::string path = "$.targets[" + std::to_string(i) + "]";
    if (!t.is_object()) return bad(path, std::string("expected an object, got ") + json_type_name(t));
    for (const auto& [k, v] : t.items()) {
      if (k != "class" && k != "stage" && k != "target_s" && k != "objective" && k != "scope" && k != "comment") {
        return bad(path, "unknown key " + quote(k) + " (class, stage, target_s, objective, scope, comment)");
      }
    }
    TargetVersion v;
    const auto cls = t.find("class");
    if (cls == t.end() || !cls->is_string()) return bad(path + ".class", "expected an incident class");
    v.incident_class = cls->get<std::string>();
    if (std::find(known_classes.begin(), known_classes.end(), v.incident_class) == known_classes.end()) {
      return bad(path + ".class", "unknown incident class " + quote(v.incident_class));
    }
    const auto stage = t.find("stage");
    const auto st = stage != t.end() && stage->is_string() ? parse_stage(stage->get<std::string>()) : std::nullopt;
    if (!st) return bad(path + ".stage", "expected detect, mitigate, repair or restore");
    v.stage = *st;
    const auto target = t.find("target_s");
    if (target == t.end() || !target->is_number() || !(target->get<double>() > 0) ||
        !(target->get<double>() <= 366.0 * 86400)) {
      return bad(path + ".target_s", "expected seconds in (0, 31622400] (at most 366 days)");
    }
    v.target = from_seconds(target->get<double>());
    const auto objective = t.find("objective");
    if (objective == t.end() || !objective->is_number() || !(objective->get<double>() > 0) ||
        !(objective->get<double>() <= 1)) {
      return bad(path + ".objective", "expected the share of incidents that must meet the target, in (0, 1]");
    }
    v.objective = objective->get<double>();
    if (const auto scope = t.find("scope"); scope != t.end()) {
      if (!scope->is_object() || scope->size() != 1) {
        return bad(path + ".scope", "expected one of {\"zone\": NAME}, {\"plane\": NAME}, {\"role\": NAME}");
      }
      const std::string kind = scope->begin().key();
      const json& value = scope->begin().value();
      if ((kind != "zone" && kind != "plane" && kind != "role") || !value.is_string() || value.get<std::string>().empty()) {
        return bad(path + ".scope", "expected one of {\"zone\": NAME}, {\"plane\": NAME}, {\"role\": NAME}");
      }
      v.scope_kind = kind;
      v.scope_value = value.get<std::string>();
    }
    if (!seen.emplace(v.incident_class, v.stage, v.scope_kind, v.scope_value).second) {
      return bad(path, "a second target for " + v.incident_class + " " + std::string(to_string(v.stage)) +
                           (v.scope_kind.empty() ? "" : " in " + v.scope_kind + " " + v.scope_value));
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace medic::slo
