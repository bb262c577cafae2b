#include "remediation/policy.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/support/testing.h"

namespace medic::remediation {
namespace {

using triage::IncidentClass;

// The message of the PolicyError that parsing `text` as "p.json" throws ("" if none).
std::string policy_error_of(const std::string& text) {
  try {
    RemediationPolicy::parse(text, "p.json");
  } catch (const PolicyError& e) {
    return e.what();
  }
  return "";
}

TEST(Policy, DefaultsWhenTheFileSaysNothing) {
  const RemediationPolicy p = RemediationPolicy::parse("{}", "p.json");
  for (const auto c : {IncidentClass::link_flap, IncidentClass::optics, IncidentClass::corruption, IncidentClass::fec,
                       IncidentClass::gray_failure}) {
    EXPECT_EQ(p.mode(c), Mode::automatic) << triage::to_string(c);
  }
  EXPECT_EQ(p.per_switch.actions, 3);
  EXPECT_EQ(p.per_switch.window, std::chrono::hours(1));
  EXPECT_EQ(p.fabric.actions, 20);
  EXPECT_EQ(p.fabric.window, std::chrono::minutes(10));
  EXPECT_EQ(p.breaker_incidents, 20);
  EXPECT_EQ(p.breaker_window, std::chrono::minutes(5));
  EXPECT_EQ(p.verify_window, std::chrono::seconds(30));
  EXPECT_DOUBLE_EQ(p.verify_min_pps, 50);
  EXPECT_DOUBLE_EQ(p.verify_moved_fraction, 0.1);
  EXPECT_EQ(p.soak, std::chrono::minutes(5));
  EXPECT_EQ(p.max_validation_failures, 2);
}

// The shipped file loads and says what the defaults say, so an operator who copies it
// starts from the same policy as one who gives no file.
TEST(Policy, ShippedFileLoadsAndMatchesTheDefaults) {
  const RemediationPolicy f = RemediationPolicy::load_file(testing::source_dir() + "/data/remediation.json");
  const RemediationPolicy d;
  EXPECT_EQ(f.modes, d.modes);
  EXPECT_EQ(f.per_switch.actions, d.per_switch.actions);
  EXPECT_EQ(f.per_switch.window, d.per_switch.window);
  EXPECT_EQ(f.fabric.actions, d.fabric.actions);
  EXPECT_EQ(f.fabric.window, d.fabric.window);
  EXPECT_EQ(f.breaker_incidents, d.breaker_incidents);
  EXPECT_EQ(f.breaker_window, d.breaker_window);
  EXPECT_EQ(f.blast_drains, d.blast_drains);
  EXPECT_EQ(f.blast_share, d.blast_share);
  EXPECT_EQ(f.verify_window, d.verify_window);
  EXPECT_EQ(f.verify_min_pps, d.verify_min_pps);
  EXPECT_EQ(f.verify_moved_fraction, d.verify_moved_fraction);
  EXPECT_EQ(f.soak, d.soak);
  EXPECT_EQ(f.max_validation_failures, d.max_validation_failures);
}

TEST(Policy, EveryFieldIsRead) {
  const RemediationPolicy p = RemediationPolicy::parse(R"({
    "version": 1, "comment": "test",
    "classes": {"comment": "x", "link_flap": "approval", "optics": "auto", "gray_failure": "approval"},
    "rate_limits": {"per_switch": {"drains": 1, "window_s": 60}, "fabric": {"drains": 0, "window_s": 1.5}},
    "breaker": {"incidents": 7, "window_s": 90},
    "blast_radius": {"drains": 3, "share": 0.02},
    "verify": {"window_s": 0.5, "min_pps": 0, "moved_fraction": 0.25},
    "validation": {"soak_s": 600, "max_failures": 3}
  })",
                                                       "p.json");
  EXPECT_EQ(p.mode(IncidentClass::link_flap), Mode::approval);
  EXPECT_EQ(p.mode(IncidentClass::optics), Mode::automatic);
  EXPECT_EQ(p.mode(IncidentClass::corruption), Mode::automatic);  // not named: the default
  EXPECT_EQ(p.mode(IncidentClass::gray_failure), Mode::approval);
  EXPECT_EQ(p.per_switch.actions, 1);
  EXPECT_EQ(p.per_switch.window, std::chrono::minutes(1));
  EXPECT_EQ(p.fabric.actions, 0);  // no limit
  EXPECT_EQ(p.fabric.window, std::chrono::milliseconds(1500));
  EXPECT_EQ(p.breaker_incidents, 7);
  EXPECT_EQ(p.breaker_window, std::chrono::seconds(90));
  EXPECT_EQ(p.blast_drains, 3);
  EXPECT_DOUBLE_EQ(p.blast_share, 0.02);
  EXPECT_EQ(p.verify_window, std::chrono::milliseconds(500));
  EXPECT_DOUBLE_EQ(p.verify_min_pps, 0);
  EXPECT_DOUBLE_EQ(p.verify_moved_fraction, 0.25);
  EXPECT_EQ(p.soak, std::chrono::minutes(10));
  EXPECT_EQ(p.max_validation_failures, 3);
}

TEST(Policy, EveryParseErrorIsExact) {
  const std::pair<const char*, const char*> cases[] = {
      {"[]", "p.json: $: expected an object, got an array"},
      {R"({"mode": 1})", "p.json: $: unknown key \"mode\""},
      {R"({"version": 2})", "p.json: $.version: unsupported version 2 (this build reads version 1)"},
      {R"({"version": "1"})", "p.json: $.version: unsupported version \"1\" (this build reads version 1)"},
      {R"({"version": 1.0})", "p.json: $.version: unsupported version 1.0 (this build reads version 1)"},
      {R"({"classes": []})", "p.json: $.classes: expected an object of class: \"auto\" or \"approval\""},
      {R"({"classes": {"flap": "auto"}})", "p.json: $.classes: unknown incident class \"flap\""},
      {R"({"classes": {"link_down": "auto"}})",
       "p.json: $.classes.link_down: incidents of class link_down are never drained; only link_flap, optics, "
       "corruption, fec and gray_failure take a mode"},
      {R"({"classes": {"fec": "manual"}})", "p.json: $.classes.fec: expected \"auto\" or \"approval\", got \"manual\""},
      {R"({"classes": {"fec": true}})", "p.json: $.classes.fec: expected \"auto\" or \"approval\", got true"},
      {R"({"rate_limits": 3})", "p.json: $.rate_limits: expected an object, got an integer"},
      {R"({"rate_limits": {"switch": {}}})", "p.json: $.rate_limits: unknown key \"switch\""},
      {R"({"rate_limits": {"fabric": []}})", "p.json: $.rate_limits.fabric: expected an object, got an array"},
      {R"({"rate_limits": {"fabric": {"drain": 1}}})", "p.json: $.rate_limits.fabric: unknown key \"drain\""},
      {R"({"rate_limits": {"fabric": {"drains": -1}}})",
       "p.json: $.rate_limits.fabric.drains: expected a whole number in [0, 1000000], got -1"},
      {R"({"rate_limits": {"per_switch": {"drains": 2.5}}})",
       "p.json: $.rate_limits.per_switch.drains: expected a whole number in [0, 1000000], got 2.5"},
      {R"({"rate_limits": {"per_switch": {"drains": 18446744073709551615}}})",
       "p.json: $.rate_limits.per_switch.drains: expected a whole number in [0, 1000000], got 18446744073709551615"},
      {R"({"rate_limits": {"per_switch": {"window_s": 0}}})",
       "p.json: $.rate_limits.per_switch.window_s: expected seconds in [1, 604800], got 0"},
      {R"({"rate_limits": {"fabric": {"window_s": "60"}}})",
       "p.json: $.rate_limits.fabric.window_s: expected seconds in [1, 604800], got \"60\""},
      {R"({"breaker": {"incidents": 0}})", "p.json: $.breaker.incidents: expected a whole number in [1, 1000000], got 0"},
      {R"({"breaker": {"window_s": 86401}})", "p.json: $.breaker.window_s: expected seconds in [1, 86400], got 86401"},
      {R"({"breaker": {"open": true}})", "p.json: $.breaker: unknown key \"open\""},
      {R"({"verify": {"window_s": 0.05}})", "p.json: $.verify.window_s: expected seconds in [0.1, 3600], got 0.05"},
      {R"({"verify": {"min_pps": -1}})", "p.json: $.verify.min_pps: expected packets per second >= 0, got -1"},
      {R"({"verify": {"min_pps": 1e308}})",
       "p.json: $.verify.min_pps: expected at most 1000000000000 packets per second, got 1e+308"},
      {R"({"blast_radius": {"drains": 0}})", "p.json: $.blast_radius.drains: expected a whole number in [1, 1000000], got 0"},
      {R"({"blast_radius": {"share": 0}})", "p.json: $.blast_radius.share: expected a share of the fabric's links in (0, 1], got 0"},
      {R"({"blast_radius": {"share": "5%"}})",
       "p.json: $.blast_radius.share: expected a share of the fabric's links in (0, 1], got \"5%\""},
      {R"({"blast_radius": {"links": 3}})", "p.json: $.blast_radius: unknown key \"links\""},
      {R"({"verify": {"moved_fraction": 1}})", "p.json: $.verify.moved_fraction: expected a fraction in (0, 1), got 1"},
      {R"({"verify": {"moved_fraction": 0}})", "p.json: $.verify.moved_fraction: expected a fraction in (0, 1), got 0"},
      {R"({"validation": {"soak_s": 0}})", "p.json: $.validation.soak_s: expected seconds in [0.1, 2592000], got 0"},
      {R"({"validation": {"max_failures": 101}})",
       "p.json: $.validation.max_failures: expected a whole number in [1, 100], got 101"},
      {R"({"validation": {"soak": 1}})", "p.json: $.validation: unknown key \"soak\""},
      {R"({"verify": null})", "p.json: $.verify: expected an object, got null"},
  };
  for (const auto& [text, message] : cases) EXPECT_EQ(policy_error_of(text), message) << text;
}

TEST(Policy, SyntaxErrorsNameFileLineAndColumn) {
  EXPECT_EQ(policy_error_of("{\n  \"breaker\": {\"incidents\": 3,}\n}").rfind("p.json: line 2, column 30: invalid JSON: ", 0), 0u)
      << policy_error_of("{\n  \"breaker\": {\"incidents\": 3,}\n}");
}

TEST(Policy, UnreadableFileIsNamed) {
  try {
    RemediationPolicy::load_file("/nonexistent/remediation.json");
    FAIL() << "no error";
  } catch (const PolicyError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/remediation.json: cannot open: No such file or directory");
  }
}

TEST(Policy, LossEstimateTakesTheWorstFinding) {
  triage::IncidentUpdate u;
  EXPECT_EQ(loss_estimate(u), 0.0);
  detectors::Finding corrupt;
  corrupt.kind = detectors::FindingKind::corruption;
  corrupt.evidence = {{"loss_rate", 2e-3}};
  u.findings.push_back(corrupt);
  EXPECT_DOUBLE_EQ(loss_estimate(u), 2e-3);
  detectors::Finding probe;
  probe.kind = detectors::FindingKind::probe_loss;
  probe.evidence = {{"loss", 0.05}};
  u.findings.push_back(probe);
  EXPECT_DOUBLE_EQ(loss_estimate(u), 0.05);
  detectors::Finding flap;
  flap.kind = detectors::FindingKind::link_flap;
  flap.severity = detectors::Severity::critical;
  u.findings.push_back(flap);
  EXPECT_DOUBLE_EQ(loss_estimate(u), 1.0);
  // Evidence beyond a fraction is clamped.
  triage::IncidentUpdate odd;
  probe.evidence = {{"loss", 7}};
  odd.findings.push_back(probe);
  EXPECT_DOUBLE_EQ(loss_estimate(odd), 1.0);
}

}  // namespace
}  // namespace medic::remediation
