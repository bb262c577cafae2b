// The snapshot JSON document (docs/formats.md "Snapshots"): round trips field by field,
// and every error names the source and the JSON path.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "tests/snapshot/snapshot_fixture.h"

namespace medic::snapshot {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using nlohmann::json;
using telemetry::Counter;

// Every kind of field, with every optional one both set and unset.
Snapshot sample_snapshot() {
  Snapshot s;
  s.id = 42;
  s.scope = "action";
  s.reason = "before drain of \"rtsw0001:eth5\"\n\tcafé ✓";
  s.incident_id = 7;
  s.action_id = 0;  // none
  s.taken_at = from_unix_seconds(1'800'000'000) + Duration(123457);
  s.link = "rtsw0001:eth5--ctsw001:eth1";
  PortReading full;
  full.device = "rtsw0001";
  full.port = "eth5";
  full.link = s.link;
  full.oper = 1;
  full.drained = true;
  full.sampled_at = s.taken_at - Duration(999999);
  for (size_t c = 0; c < telemetry::kCounterCount; ++c) full.set(static_cast<Counter>(c), 1.0 + static_cast<double>(c));
  full.set(Counter::rx_bytes, 18446744073709551615.0);  // a 64-bit counter near its top
  full.set(Counter::tx_bytes, 1.2345678901234567e15);
  full.set(Counter::pre_fec_ber, 1.0000000000000001e-300);
  full.set(Counter::rx_power_dbm, -40);
  full.set(Counter::tx_power_dbm, -0.0);
  full.set(Counter::temperature_c, 0.1 + 0.2);  // not short in decimal
  PortReading silent;
  silent.device = "rtsw0001";
  silent.port = "eth1";
  silent.oper = -1;
  PortReading down;
  down.device = "host0001";
  down.port = "nic0";
  down.link = "host0001:nic0--rtsw0001:eth1";
  down.oper = 0;
  down.sampled_at = s.taken_at;
  down.set(Counter::oper_up, 0);
  s.ports = {full, silent, down};
  s.groups = {{"rtsw0001 uplinks", "tor_uplinks", 0.75, 1600, 1200, 4, 3}, {"plane 1", "plane", 0.85, 3200, 3200, 8, 8},
              {"empty", "custom", 0, 0, 0, 0, 0}};
  s.incidents = {{7, "link_flap", "mitigated", "critical", s.link, "rtsw0001"},
                 {9, "switch_fault", "triaged", "warning", "", "ctsw001"},
                 {11, "gray_failure", "triaged", "warning", "rtsw0002:eth5--ctsw001:eth2", ""}};
  return s;
}

TEST(SnapshotJson, RoundTripsFieldByField) {
  const Snapshot s = sample_snapshot();
  const std::string text = to_json(s).dump(2);
  const auto back = parse_snapshot(text, "snap.json");
  ASSERT_TRUE(back.ok()) << back.error();
  expect_same(s, *back);
  // And through the document directly.
  const auto again = from_json(to_json(*back), "doc");
  ASSERT_TRUE(again.ok()) << again.error();
  expect_same(s, *again);
}

TEST(SnapshotJson, NullsAndAbsentValues) {
  const json j = to_json(sample_snapshot());
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["id"], 42);
  EXPECT_EQ(j["action_id"], nullptr);
  EXPECT_EQ(j["incident_id"], 7);
  EXPECT_EQ(j["taken_at"], "2027-01-15T08:00:00.123457Z");
  EXPECT_EQ(j["port_count"], 3);
  EXPECT_EQ(j["ports"][1]["link"], nullptr);
  EXPECT_EQ(j["ports"][1]["sampled_at"], nullptr);
  EXPECT_EQ(j["ports"][1]["counters"], json::object());
  EXPECT_EQ(j["ports"][0]["sampled_at"], "2027-01-15T07:59:59.123458Z");
  EXPECT_EQ(j["ports"][0]["counters"].size(), telemetry::kCounterCount);
  EXPECT_EQ(j["ports"][2]["counters"], (json{{"oper_up", 0.0}}));
  EXPECT_EQ(j["incidents"][1]["link"], nullptr);
  EXPECT_EQ(j["incidents"][2]["device"], nullptr);
  Snapshot none = sample_snapshot();
  none.id = 0;
  none.incident_id = 0;
  none.link.clear();
  const json n = to_json(none);
  EXPECT_EQ(n["id"], nullptr);
  EXPECT_EQ(n["incident_id"], nullptr);
  EXPECT_EQ(n["link"], nullptr);
  const auto back = from_json(n, "n");
  ASSERT_TRUE(back.ok()) << back.error();
  expect_same(none, *back);
}

TEST(SnapshotJson, NonFiniteReadingsAreLeftOut) {
  Snapshot s = sample_snapshot();
  s.ports[0].set(Counter::rx_errors, std::numeric_limits<double>::quiet_NaN());
  s.ports[0].set(Counter::tx_errors, -std::numeric_limits<double>::infinity());
  const json j = to_json(s);
  EXPECT_FALSE(j["ports"][0]["counters"].contains("rx_errors"));
  EXPECT_FALSE(j["ports"][0]["counters"].contains("tx_errors"));
  const auto back = parse_snapshot(j.dump(), "s");
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_FALSE(back->ports[0].has(Counter::rx_errors));
  EXPECT_TRUE(back->ports[0].has(Counter::rx_crc_errors));
}

TEST(SnapshotJson, StoredFormHasNoPortsAndNoId) {
  const Snapshot s = sample_snapshot();
  const json j = to_json_without_ports(s);
  EXPECT_FALSE(j.contains("ports"));
  EXPECT_FALSE(j.contains("id"));
  EXPECT_EQ(j["port_count"], 3);
  const auto back = from_stored_json(j, "stored");
  ASSERT_TRUE(back.ok()) << back.error();
  Snapshot expected = s;
  expected.id = 0;
  expected.ports.clear();
  expect_same(expected, *back);
  // The document form insists on its ports.
  const auto doc = from_json(j, "doc");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.error(), "doc: $: missing required key \"ports\"");
}

// A valid document with one change; the error it must give.
struct BadCase {
  const char* what;
  std::function<void(json&)> change;
  std::string error;  // after "bad.json: "
};

TEST(SnapshotJson, EveryErrorNamesItsPath) {
  const std::vector<BadCase> cases = {
      {"not an object", [](json& j) { j = json::array(); }, "$: expected a snapshot object, got an array"},
      {"unknown key", [](json& j) { j["colour"] = "red"; }, "$: unknown key \"colour\""},
      {"no version", [](json& j) { j.erase("version"); }, "$: missing required key \"version\""},
      {"version 2", [](json& j) { j["version"] = 2; }, "$.version: unsupported version 2 (this build reads version 1)"},
      {"no scope", [](json& j) { j.erase("scope"); }, "$: missing required key \"scope\""},
      {"scope", [](json& j) { j["scope"] = "zone"; },
       "$.scope: expected \"incident\", \"action\" or \"fabric\", got \"zone\""},
      {"scope type", [](json& j) { j["scope"] = 3; }, "$.scope: expected a string, got an integer"},
      {"reason", [](json& j) { j["reason"] = nullptr; }, "$.reason: expected a string, got null"},
      {"incident id 0", [](json& j) { j["incident_id"] = 0; }, "$.incident_id: expected 1 to 9223372036854775807, got 0"},
      {"action id text", [](json& j) { j["action_id"] = "7"; }, "$.action_id: expected an integer or null, got a string"},
      {"id huge", [](json& j) { j["id"] = 18446744073709551615ull; }, "$.id: out of range: 18446744073709551615"},
      {"link", [](json& j) { j["link"] = 5; }, "$.link: expected a string or null, got an integer"},
      {"taken_at", [](json& j) { j["taken_at"] = "yesterday"; },
       "$.taken_at: expected a time such as \"2026-11-21T16:14:03.123456Z\", got \"yesterday\""},
      {"taken_at without zone", [](json& j) { j["taken_at"] = "2027-01-15T08:00:00"; },
       "$.taken_at: expected a time such as \"2026-11-21T16:14:03.123456Z\", got \"2027-01-15T08:00:00\""},
      {"port_count", [](json& j) { j["port_count"] = 4; }, "$.port_count: 4 but $.ports has 3 entries"},
      {"port_count negative", [](json& j) { j["port_count"] = -1; }, "$.port_count: expected 0 to 2147483647, got -1"},
      {"ports type", [](json& j) { j["ports"] = json::object(); }, "$.ports: expected an array, got an object"},
      {"port not an object", [](json& j) { j["ports"][2] = 5; }, "$.ports[2]: expected an object, got an integer"},
      {"port unknown key", [](json& j) { j["ports"][1]["speed"] = 400; }, "$.ports[1]: unknown key \"speed\""},
      {"port device", [](json& j) { j["ports"][0]["device"] = ""; }, "$.ports[0].device: must not be empty"},
      {"port name", [](json& j) { j["ports"][0].erase("port"); }, "$.ports[0]: missing required key \"port\""},
      {"oper 2", [](json& j) { j["ports"][1]["oper"] = 2; },
       "$.ports[1].oper: expected -1 (unknown), 0 (down) or 1 (up), got 2"},
      {"oper wraps", [](json& j) { j["ports"][1]["oper"] = 18446744073709551615ull; },
       "$.ports[1].oper: expected -1 (unknown), 0 (down) or 1 (up), got 18446744073709551615"},
      {"oper text", [](json& j) { j["ports"][1]["oper"] = "up"; },
       "$.ports[1].oper: expected -1 (unknown), 0 (down) or 1 (up), got \"up\""},
      {"drained", [](json& j) { j["ports"][0]["drained"] = 1; }, "$.ports[0].drained: expected true or false, got an integer"},
      {"sampled_at", [](json& j) { j["ports"][0]["sampled_at"] = "2027-02-30T00:00:00Z"; },
       "$.ports[0].sampled_at: expected a time such as \"2026-11-21T16:14:03.123456Z\", got \"2027-02-30T00:00:00Z\""},
      {"counters without time", [](json& j) { j["ports"][0]["sampled_at"] = nullptr; },
       "$.ports[0].sampled_at: counters without the time they were read"},
      {"unknown counter", [](json& j) { j["ports"][2]["counters"]["rx_frames"] = 1; },
       "$.ports[2].counters: unknown counter \"rx_frames\" (docs/formats.md lists the canonical counters)"},
      {"counter type", [](json& j) { j["ports"][2]["counters"]["rx_errors"] = "3"; },
       "$.ports[2].counters.rx_errors: expected a number, got a string"},
      {"counter null", [](json& j) { j["ports"][2]["counters"]["rx_errors"] = nullptr; },
       "$.ports[2].counters.rx_errors: expected a number, got null"},
      {"counters type", [](json& j) { j["ports"][2]["counters"] = json::array(); },
       "$.ports[2].counters: expected an object, got an array"},
      {"groups missing", [](json& j) { j.erase("groups"); }, "$: missing required key \"groups\""},
      {"group floor", [](json& j) { j["groups"][0]["floor"] = 1.5; }, "$.groups[0].floor: must be within [0, 1], got 1.5"},
      {"group floor negative", [](json& j) { j["groups"][0]["floor"] = -0.1; },
       "$.groups[0].floor: must not be below 0, got -0.1"},
      {"group capacity", [](json& j) { j["groups"][1]["capacity_gbps"] = "big"; },
       "$.groups[1].capacity_gbps: expected a number, got a string"},
      {"group links in service", [](json& j) { j["groups"][0]["links_in_service"] = 5; },
       "$.groups[0].links_in_service: expected 0 to 4, got 5"},
      {"group links", [](json& j) { j["groups"][0]["links"] = 2.5; }, "$.groups[0].links: expected an integer, got a number"},
      {"group unknown key", [](json& j) { j["groups"][2]["members"] = json::array(); },
       "$.groups[2]: unknown key \"members\""},
      {"incident id", [](json& j) { j["incidents"][1]["id"] = -4; },
       "$.incidents[1].id: expected 1 to 9223372036854775807, got -4"},
      {"incident class", [](json& j) { j["incidents"][0].erase("class"); }, "$.incidents[0]: missing required key \"class\""},
      {"incident device", [](json& j) { j["incidents"][2]["device"] = true; },
       "$.incidents[2].device: expected a string or null, got a boolean"},
  };
  const json good = to_json(sample_snapshot());
  ASSERT_TRUE(from_json(good, "bad.json").ok());
  for (const auto& c : cases) {
    json j = good;
    c.change(j);
    const auto r = parse_snapshot(j.dump(), "bad.json");
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_EQ(r.error(), "bad.json: " + c.error) << c.what;
  }
}

TEST(SnapshotJson, InvalidJsonNamesLineAndColumn) {
  const auto r = parse_snapshot("{\n  \"version\": 1,\n  \"scope\": \"fabric\",,\n}", "snap.json");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error(), StartsWith("snap.json: line 3, column 21: invalid JSON: "));
}

TEST(SnapshotJson, ParseTime) {
  const Time t = from_unix_seconds(1'800'000'000);
  EXPECT_EQ(parse_time("2027-01-15T08:00:00Z"), t);
  EXPECT_EQ(parse_time("2027-01-15t08:00:00z"), t);
  EXPECT_EQ(parse_time("2027-01-15 08:00:00Z"), t);
  EXPECT_EQ(parse_time("2027-01-15T08:00:00.5Z"), t + Duration(500000));
  EXPECT_EQ(parse_time("2027-01-15T08:00:00.1234567Z"), t + Duration(123456));  // beyond microseconds: cut
  EXPECT_EQ(parse_time("2027-01-15T09:30:00+01:30"), t);
  EXPECT_EQ(parse_time("2027-01-15T03:00:00-05:00"), t);
  EXPECT_EQ(parse_time("1970-01-01T00:00:00Z"), Time{});
  EXPECT_EQ(parse_time(format_iso8601(t + Duration(7))), t + Duration(7));
  for (const char* bad : {"", "2027-01-15", "2027-01-15T08:00:00", "2027-01-15T08:00:00.Z", "2027-13-01T00:00:00Z",
                          "2027-02-29T00:00:00Z", "2027-01-15T24:00:00Z", "2027-01-15T08:60:00Z",
                          "2027-01-15T08:00:00+24:00", "2027-01-15T08:00:00+0100", "2027-01-15T08:00:00Zjunk",
                          "2027/01/15T08:00:00Z", "+027-01-15T08:00:00Z"}) {
    EXPECT_EQ(parse_time(bad), std::nullopt) << bad;
  }
}

TEST(SnapshotJson, ScopesAreTheThreeKnown) {
  EXPECT_TRUE(valid_scope("incident"));
  EXPECT_TRUE(valid_scope("action"));
  EXPECT_TRUE(valid_scope("fabric"));
  EXPECT_FALSE(valid_scope(""));
  EXPECT_FALSE(valid_scope("Fabric"));
}

}  // namespace
}  // namespace medic::snapshot
