// The SLO targets file: what it accepts and the exact error for what it does not.
#include "slo/targets_file.h"

#include <gtest/gtest.h>

namespace medic::slo {
namespace {

const std::vector<std::string> kClasses = {"link_flap", "optics", "corruption"};

std::string err(const std::string& text) {
  const auto r = parse_targets(text, "slo.json", kClasses);
  return r.ok() ? "(accepted)" : r.error();
}

TEST(TargetsFile, ReadsTargetsWithTheirScopes) {
  const auto r = parse_targets(
      R"({"version": 1, "targets": [
           {"class": "link_flap", "stage": "mitigate", "target_s": 120, "objective": 0.99},
           {"class": "link_flap", "stage": "mitigate", "target_s": 60, "objective": 0.999, "scope": {"zone": "zone1"}}]})",
      "slo.json", kClasses);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].stage, Stage::mitigate);
  EXPECT_EQ((*r)[0].target, from_seconds(120));
  EXPECT_EQ((*r)[0].scope_kind, "");
  EXPECT_EQ((*r)[1].scope_kind, "zone");
  EXPECT_EQ((*r)[1].scope_value, "zone1");
  EXPECT_DOUBLE_EQ((*r)[1].objective, 0.999);
}

TEST(TargetsFile, EveryProblemIsNamedWithItsPath) {
  EXPECT_EQ(err("[]"), "slo.json: $: expected an object, got an array");
  EXPECT_EQ(err(R"({"targets": [], "x": 1})"), "slo.json: $: unknown key \"x\" (version, comment, targets)");
  EXPECT_EQ(err(R"({"version": 2, "targets": []})"), "slo.json: $.version: unsupported version 2 (this build reads version 1)");
  EXPECT_EQ(err(R"({})"), "slo.json: $.targets: expected an array of targets");
  EXPECT_EQ(err(R"({"targets": [{"class": "nope", "stage": "detect", "target_s": 1, "objective": 0.9}]})"),
            "slo.json: $.targets[0].class: unknown incident class \"nope\"");
  EXPECT_EQ(err(R"({"targets": [{"class": "optics", "stage": "fix", "target_s": 1, "objective": 0.9}]})"),
            "slo.json: $.targets[0].stage: expected detect, mitigate, repair or restore");
  for (const char* t : {"0", "-1", "\"60\"", "1e9", "null"}) {
    EXPECT_EQ(err(std::string(R"({"targets": [{"class": "optics", "stage": "detect", "target_s": )") + t +
                  R"(, "objective": 0.9}]})"),
              "slo.json: $.targets[0].target_s: expected seconds in (0, 31622400] (at most 366 days)")
        << t;
  }
  for (const char* o : {"0", "1.01", "\"0.9\""}) {
    EXPECT_EQ(err(std::string(R"({"targets": [{"class": "optics", "stage": "detect", "target_s": 60, "objective": )") + o +
                  "}]}"),
              "slo.json: $.targets[0].objective: expected the share of incidents that must meet the target, in (0, 1]")
        << o;
  }
  EXPECT_EQ(err(R"({"targets": [{"class": "optics", "stage": "detect", "target_s": 60, "objective": 0.9,
                                  "scope": {"rack": "r1"}}]})"),
            "slo.json: $.targets[0].scope: expected one of {\"zone\": NAME}, {\"plane\": NAME}, {\"role\": NAME}");
  EXPECT_EQ(err(R"({"targets": [{"class": "optics", "stage": "detect", "target_s": 60, "objective": 0.9},
                                 {"class": "optics", "stage": "detect", "target_s": 30, "objective": 0.9}]})"),
            "slo.json: $.targets[1]: a second target for optics detect");
  EXPECT_EQ(err(R"({"targets": [{"class": "optics", "stage": "detect", "target_s": 60, "objective": 0.9, "by": 1}]})"),
            "slo.json: $.targets[0]: unknown key \"by\" (class, stage, target_s, objective, scope, comment)");
  EXPECT_NE(err("{\"targets\": "), "(accepted)");
}

}  // namespace
}  // namespace medic::slo
