// `medic snapshot list|show|diff|take|prune` against a fresh PostgreSQL database per test;
// `take` scrapes a real fabsim on loopback. Bad input: an exact message, a non-zero exit,
// nothing written.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "tests/db/all_stores.h"
#include "fabric/generator.h"
#include "fabric/loader.h"
#include "remediation/capacity.h"
#include "remediation/capacity_config.h"
#include "snapshot/snapshot.h"
#include "tests/cli/cli_fixture.h"
#include "tests/support/epoch.h"
#include "tests/support/testing.h"

namespace medic::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;
using ::testing::StartsWith;
using nlohmann::json;
using namespace std::chrono_literals;
using telemetry::Counter;

// The words of the one line whose words begin with `first` (and `second`, when given).
std::vector<std::string> line_words(const std::string& text, const std::string& first, const std::string& second = "") {
  std::vector<std::vector<std::string>> found;
  for (const auto& l : lines_of(text)) {
    auto w = words(l);
    if (!w.empty() && w[0] == first && (second.empty() || (w.size() > 1 && w[1] == second))) found.push_back(w);
  }
  if (found.size() != 1) return {"<" + std::to_string(found.size()) + " lines for " + first + " " + second + ">"};
  return found.front();
}

const Time kT0 = from_unix_seconds(1'800'000'000);  // 2027-01-15T08:00:00Z

// A migrated database with the demo inventory, and what snapshots of it are made from.
class CliSnapshot : public CliDbTest {
 protected:
  CliSnapshot()
      : CliDbTest(remediation::with_derived_groups(fabric::generate_clos(*fabric::preset("demo")),
                                                  remediation::CapacityConfig{})) {}
  Ran snap(std::vector<std::string> args) {
    args.insert(args.begin(), "snapshot");
    args.push_back("--db");
    args.push_back(url());
    return medic(args);
  }
  fabric::PortId port(const std::string& d, const std::string& p) const { return *topo_.find_port(d, p); }
  int64_t incident(const std::string& ref, const std::string& state = "triaged") {
    return std::stoll(tdb_.scalar("INSERT INTO incidents (class, state, severity, link, device, detected_at) VALUES "
                                  "('link_flap', '" + state + "', 'critical', '" + link_name(ref) +
                                  "', 'rtsw0001', '2027-01-15T08:00:00Z') RETURNING id"));
  }
  snapshot::FabricState state(Time now) const {
    return {topo_,
            model_,
            [this](fabric::PortId p) -> const telemetry::PortSample& { return samples_[p]; },
            [this](fabric::PortId p) { return oper_[p]; },
            open_,
            now};
  }
  void read(fabric::PortId p, Time when) {
    telemetry::PortSample s;
    s.port = p;
    s.time = when;
    s.set(Counter::oper_up, oper_[p] > 0 ? 1 : 0);
    s.set(Counter::carrier_changes, 4);
    s.set(Counter::rx_bytes, 1.7e15);
    s.set(Counter::rx_errors, 0);
    s.set(Counter::rx_crc_errors, 12);
    s.set(Counter::fec_uncorrectable_codewords, 0);
    s.set(Counter::rx_discards, 3);
    s.set(Counter::rx_power_dbm, -1.93);
    s.set(Counter::tx_power_dbm, 0.41);
    s.set(Counter::temperature_c, 47.5);
    samples_[p] = s;
  }
  int64_t write(snapshot::Snapshot s, int64_t incident_id = 0) {
    s.incident_id = incident_id;
    const auto id = db_->write_snapshot(s);
    if (!id.ok()) throw std::runtime_error(id.error());
    return *id;
  }
  size_t count(const std::string& table) const { return std::stoul(tdb_.scalar("SELECT count(*) FROM " + table)); }

  // The incident on rtsw0001:eth5 as it opened: the link drained, its neighbour down,
  // rtsw0001 read a second earlier, ctsw001 silent.
  int64_t incident_snapshot() {
    inc_ = incident("rtsw0001:eth5");
    open_ = {{inc_, "link_flap", "triaged", "critical", link_name("rtsw0001:eth5"), "rtsw0001"}};
    model_.set_drained(*topo_.find_link("rtsw0001:eth5"), true);
    model_.set_oper_up(*topo_.find_link("rtsw0001:eth6"), false);
    oper_[port("rtsw0001", "eth6")] = 0;
    for (const fabric::PortId p : topo_.ports_of(*topo_.find_device("ctsw001"))) oper_[p] = -1;
    for (const fabric::PortId p : topo_.ports_of(*topo_.find_device("rtsw0001"))) read(p, at(-1));
    return write(snapshot::capture_link(state(at(0)), *topo_.find_link("rtsw0001:eth5"), "incident", "incident opened"),
                 inc_);
  }

  remediation::CapacityModel model_{topo_};
  std::vector<telemetry::PortSample> samples_ = std::vector<telemetry::PortSample>(topo_.ports().size());
  std::vector<int> oper_ = std::vector<int>(topo_.ports().size(), 1);
  std::vector<snapshot::IncidentReading> open_;
  int64_t inc_ = 0;
};

// --- list -------------------------------------------------------------------------------

TEST_F(CliSnapshot, ListWhenThereAreNone) {
  const Ran r = snap({"list"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "no snapshots\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(CliSnapshot, ListNewestFirst) {
  const int64_t a = incident_snapshot();
  snapshot::Snapshot act = snapshot::capture_link(state(at(2)), *topo_.find_link("rtsw0001:eth5"), "action", "after drain");
  act.action_id = std::stoll(tdb_.scalar("INSERT INTO actions (incident_id, link, kind, state, intent_at) VALUES (" +
                                         std::to_string(inc_) + ", '" + link_name("rtsw0001:eth5") +
                                         "', 'drain', 'succeeded', '2027-01-15T08:00:01Z') RETURNING id"));
  const int64_t b = write(act, inc_);
  const int64_t c = write(snapshot::capture_fabric(state(at(3600)), "nightly"));
  const Ran r = snap({"list"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto ls = lines_of(r.out);
  ASSERT_EQ(ls.size(), 4u) << r.out;
  EXPECT_THAT(words(ls[0]), ElementsAre("ID", "TAKEN", "AT", "SCOPE", "INCIDENT", "ACTION", "LINK", "PORTS", "REASON"));
  EXPECT_THAT(words(ls[1]), ElementsAre(std::to_string(c), "2027-01-15T09:00:00Z", "fabric", "-", "-", "-",
                                        std::to_string(topo_.ports().size()), "nightly"));
  EXPECT_THAT(words(ls[2]), ElementsAre(std::to_string(b), "2027-01-15T08:00:02Z", "action", std::to_string(inc_),
                                        std::to_string(act.action_id), link_name("rtsw0001:eth5"), "14", "after",
                                        "drain"));
  EXPECT_THAT(words(ls[3]), ElementsAre(std::to_string(a), "2027-01-15T08:00:00Z", "incident", std::to_string(inc_), "-",
                                        link_name("rtsw0001:eth5"), "14", "incident", "opened"));
}

TEST_F(CliSnapshot, ListFilters) {
  const int64_t a = incident_snapshot();
  const int64_t other = incident("rtsw0002:eth6");
  const int64_t b = write(snapshot::capture_link(state(at(1)), *topo_.find_link("rtsw0002:eth6"), "incident", "x"), other);
  const int64_t c = write(snapshot::capture_fabric(state(at(2)), "nightly"));
  auto ids = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "list");
    const Ran r = snap(args);
    EXPECT_EQ(r.code, 0) << r.err;
    std::vector<std::string> out;
    const auto ls = lines_of(r.out);
    for (size_t i = 1; i < ls.size(); ++i) out.push_back(words(ls[i])[0]);
    if (r.out == "no snapshots\n") out.push_back("none");
    return out;
  };
  const std::string sa = std::to_string(a), sb = std::to_string(b), sc = std::to_string(c);
  EXPECT_THAT(ids({}), ElementsAre(sc, sb, sa));
  EXPECT_THAT(ids({"--incident", std::to_string(inc_)}), ElementsAre(sa));
  EXPECT_THAT(ids({"--incident", std::to_string(other)}), ElementsAre(sb));
  EXPECT_THAT(ids({"--incident", "9999"}), ElementsAre("none"));
  EXPECT_THAT(ids({"--scope", "incident"}), ElementsAre(sb, sa));
  EXPECT_THAT(ids({"--scope", "fabric"}), ElementsAre(sc));
  EXPECT_THAT(ids({"--scope", "action"}), ElementsAre("none"));
  EXPECT_THAT(ids({"--limit", "2"}), ElementsAre(sc, sb));
  EXPECT_THAT(ids({"--scope", "incident", "--limit", "1"}), ElementsAre(sb));
}

TEST_F(CliSnapshot, ListRejectsBadInput) {
  struct Case {
    std::vector<std::string> args;
    std::string err;
  };
  for (const auto& c : std::vector<Case>{
           {{"--scope", "zone"}, "medic: --scope \"zone\": expected incident, action or fabric\n"},
           {{"--scope", ""}, ""},  // empty: no filter
           {{"--incident", "x"}, "medic: --incident \"x\": expected an incident id (a positive integer)\n"},
           {{"--incident", "0"}, "medic: --incident \"0\": expected an incident id (a positive integer)\n"},
           {{"--incident", "-4"}, "medic: --incident \"-4\": expected an incident id (a positive integer)\n"},
           {{"--incident", "3.5"}, "medic: --incident \"3.5\": expected an incident id (a positive integer)\n"},
       }) {
    std::vector<std::string> args = {"list"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const Ran r = snap(args);
    if (c.err.empty()) {
      EXPECT_EQ(r.code, 0) << r.err;
      continue;
    }
    EXPECT_EQ(r.code, 2) << c.args[1];
    EXPECT_EQ(r.err, c.err);
    EXPECT_EQ(r.out, "");
  }
  for (const char* limit : {"0", "-1", "many"}) {
    const Ran r = snap({"list", "--limit", limit});
    EXPECT_EQ(r.code, 2) << limit;
    EXPECT_THAT(r.err, HasSubstr("--limit")) << limit;
    EXPECT_EQ(r.out, "");
  }
}

// --- show -------------------------------------------------------------------------------

TEST_F(CliSnapshot, ShowSummarizesGroupsIncidentsAndPorts) {
  const int64_t id = incident_snapshot();
  const Ran r = snap({"show", std::to_string(id)});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string link = link_name("rtsw0001:eth5");
  EXPECT_THAT(r.out, StartsWith("snapshot " + std::to_string(id) + " (incident on " + link + ", incident " +
                                std::to_string(inc_) + ") taken 2027-01-15T08:00:00.000000Z\n"
                                "reason:   incident opened\n"
                                "ports:    14 on 2 devices: 8 read, 6 never answered; 7 up, 1 down, 6 unknown; "
                                "2 drained\n"));
  EXPECT_THAT(r.out, HasSubstr("\ncapacity groups (10; 1 below floor):\n"));
  EXPECT_THAT(line_words(r.out, "GROUP"), ElementsAre("GROUP", "KIND", "IN", "SERVICE", "LINKS", "FLOOR", "STATUS"));
  EXPECT_THAT(line_words(r.out, "rtsw0001", "uplinks"),
              ElementsAre("rtsw0001", "uplinks", "tor_uplinks", "50.0%", "2/4", "75.0%", "BELOW", "FLOOR"));
  EXPECT_THAT(line_words(r.out, "ctsw001", "downlinks"),
              ElementsAre("ctsw001", "downlinks", "spine_downlinks", "75.0%", "3/4", "75.0%", "headroom", "0.0%"));
  EXPECT_THAT(line_words(r.out, "ctsw001", "uplinks"),
              ElementsAre("ctsw001", "uplinks", "spine_uplinks", "100.0%", "2/2", "75.0%", "headroom", "25.0%"));
  EXPECT_THAT(r.out, HasSubstr("\nincidents (1 open):\n  #" + std::to_string(inc_) + " link_flap on " + link +
                               ": triaged, critical\n"));
  EXPECT_THAT(r.out, HasSubstr("\nports down or drained (3):\n"
                               "  rtsw0001:eth5 [" + link + "]: drained\n"
                               "  rtsw0001:eth6 [" + link_name("rtsw0001:eth6") + "]: down\n"
                               "  ctsw001:eth1 [" + link + "]: drained\n"));
  EXPECT_EQ(r.err, "");
}

TEST_F(CliSnapshot, ShowPortsListsEveryPortWithItsCounters) {
  const int64_t id = incident_snapshot();
  const Ran r = snap({"show", std::to_string(id), "--ports"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\nports (14):\n"));
  EXPECT_THAT(line_words(r.out, "PORT"), ElementsAre("PORT", "LINK", "OPER", "DRAINED", "SAMPLED", "AT", "CARRIER",
                                                     "RX", "ERR", "CRC", "FEC", "UNCORR", "DISCARDS", "RX", "DBM", "TX",
                                                     "DBM", "TEMP", "C"));
  EXPECT_THAT(line_words(r.out, "rtsw0001:eth5"),
              ElementsAre("rtsw0001:eth5", link_name("rtsw0001:eth5"), "up", "yes", "2027-01-15T07:59:59Z", "4", "0",
                          "12", "0", "3", "-1.93", "0.41", "47.50"));
  EXPECT_THAT(line_words(r.out, "rtsw0001:eth6"),
              ElementsAre("rtsw0001:eth6", link_name("rtsw0001:eth6"), "down", "no", "2027-01-15T07:59:59Z", "4", "0",
                          "12", "0", "3", "-1.93", "0.41", "47.50"));
  EXPECT_THAT(line_words(r.out, "ctsw001:eth2"), ElementsAre("ctsw001:eth2", link_name("rtsw0002:eth5"), "unknown",
                                                             "no", "-", "-", "-", "-", "-", "-", "-", "-", "-"));
  EXPECT_THAT(r.out, Not(HasSubstr("ports down or drained")));
}

TEST_F(CliSnapshot, ShowJsonIsTheWholeDocument) {
  const int64_t id = incident_snapshot();
  const Ran r = snap({"show", std::to_string(id), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["id"], id);
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["scope"], "incident");
  EXPECT_EQ(j["incident_id"], inc_);
  EXPECT_EQ(j["action_id"], nullptr);
  EXPECT_EQ(j["ports"].size(), 14u);
  EXPECT_EQ(j["groups"].size(), 10u);
  EXPECT_EQ(j["incidents"].size(), 1u);
  const auto back = snapshot::parse_snapshot(r.out, "stdout");
  ASSERT_TRUE(back.ok()) << back.error();
  const auto stored = db_->snapshot(id);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ(snapshot::to_json(*back), snapshot::to_json(**stored));
}

TEST_F(CliSnapshot, ShowAFabricSnapshotListsOnlyGroupsNotFullyInService) {
  model_.set_oper_up(*topo_.find_link("rtsw0003:eth6"), false);
  oper_[port("rtsw0003", "eth6")] = 0;
  const int64_t id = write(snapshot::capture_fabric(state(at(0)), "nightly"));
  const Ran r = snap({"show", std::to_string(id)});
  ASSERT_EQ(r.code, 0) << r.err;
  // rtsw0003's uplinks, ctsw002's downlinks.
  EXPECT_THAT(r.out, HasSubstr("\ncapacity groups (" + std::to_string(topo_.groups().size()) + "; 0 below floor; " +
                               std::to_string(topo_.groups().size() - 2) + " fully in service, not listed):\n"));
  EXPECT_THAT(line_words(r.out, "rtsw0003", "uplinks"),
              ElementsAre("rtsw0003", "uplinks", "tor_uplinks", "75.0%", "3/4", "75.0%", "headroom", "0.0%"));
  EXPECT_THAT(line_words(r.out, "rtsw0001", "uplinks"), ElementsAre("<0 lines for rtsw0001 uplinks>"));
  EXPECT_THAT(r.out, HasSubstr("\nincidents (0 open)\n"));
  EXPECT_THAT(r.out, HasSubstr("\nports down or drained (1):\n  rtsw0003:eth6 [" + link_name("rtsw0003:eth6") +
                               "]: down\n"));
}

TEST_F(CliSnapshot, ShowRejectsBadIds) {
  incident_snapshot();
  for (const char* bad : {"abc", "0", "-1", "1.5", "1e3", " 1", "99999999999999999999"}) {
    const Ran r = snap({"show", bad});
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_EQ(r.err, std::string("medic: snapshot id \"") + bad + "\": expected a positive integer\n");
    EXPECT_EQ(r.out, "");
  }
  const Ran unknown = snap({"show", "4242"});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_EQ(unknown.err, "medic: no snapshot with id 4242\n");
  EXPECT_EQ(unknown.out, "");
  const Ran none = medic({"snapshot", "show", "--db", url()});
  EXPECT_EQ(none.code, 2);
  EXPECT_THAT(none.err, HasSubstr("id is required"));
}

// --- diff -------------------------------------------------------------------------------

TEST_F(CliSnapshot, DiffShowsWhatChanged) {
  const int64_t a = incident_snapshot();
  // Thirty seconds later: the drain is undone, eth6 came back, errors grew, a new incident.
  model_.set_drained(*topo_.find_link("rtsw0001:eth5"), false);
  model_.set_oper_up(*topo_.find_link("rtsw0001:eth6"), true);
  oper_[port("rtsw0001", "eth6")] = 1;
  for (const fabric::PortId p : topo_.ports_of(*topo_.find_device("rtsw0001"))) read(p, at(29));
  samples_[port("rtsw0001", "eth7")].set(Counter::rx_crc_errors, 5012);
  const int64_t second = incident("rtsw0001:eth7");
  open_.push_back({second, "corruption", "triaged", "critical", link_name("rtsw0001:eth7"), "rtsw0001"});
  open_[0].state = "undrained";
  const int64_t b =
      write(snapshot::capture_link(state(at(30)), *topo_.find_link("rtsw0001:eth5"), "incident", "later"), inc_);

  const Ran r = snap({"diff", std::to_string(a), std::to_string(b)});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string l5 = link_name("rtsw0001:eth5"), l6 = link_name("rtsw0001:eth6"), l7 = link_name("rtsw0001:eth7");
  EXPECT_THAT(r.out, StartsWith("from snapshot " + std::to_string(a) + " (incident on " + l5 + ", incident " +
                                std::to_string(inc_) + ") taken 2027-01-15T08:00:00.000000Z: incident opened\n"
                                "to   snapshot " + std::to_string(b) + " (incident on " + l5 + ", incident " +
                                std::to_string(inc_) + ") taken 2027-01-15T08:00:30.000000Z: later\n"
                                "30.0s later; 14 ports and 10 capacity groups in both\n"));
  EXPECT_THAT(r.out, HasSubstr("  recovered    rtsw0001 uplinks (tor_uplinks): 50.0% -> 100.0% in service "
                               "(2 -> 4 of 4 links), floor 75.0%\n"));
  EXPECT_THAT(r.out, HasSubstr("\nincidents (1 opened, 1 changed):\n"
                               "  opened   #" + std::to_string(second) + " corruption on " + l7 + ": triaged, critical\n"
                               "  changed  #" + std::to_string(inc_) + " link_flap on " + l5 +
                               ": triaged -> undrained\n"));
  EXPECT_THAT(r.out, HasSubstr("  rtsw0001:eth5 [" + l5 + "]: drained yes -> no\n"));
  EXPECT_THAT(r.out, HasSubstr("  rtsw0001:eth6 [" + l6 + "]: oper down -> up\n      oper_up 0 -> 1\n"));
  EXPECT_THAT(r.out, HasSubstr("  rtsw0001:eth7 [" + l7 + "]\n      rx_crc_errors +5,000\n"));

  const Ran j = snap({"diff", std::to_string(a), std::to_string(b), "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  const json d = json::parse(j.out);
  EXPECT_EQ(d["a"]["id"], a);
  EXPECT_EQ(d["b"]["id"], b);
  EXPECT_EQ(d["interval_s"], 30.0);
  EXPECT_EQ(d["ports_compared"], 14);
  EXPECT_EQ(d["incidents"].size(), 2u);
  EXPECT_EQ(d["groups"][0]["name"], "rtsw0001 uplinks");
  EXPECT_EQ(d["ports"][0]["importance"], "state");
}

TEST_F(CliSnapshot, DiffOfASnapshotWithItself) {
  const int64_t a = incident_snapshot();
  const Ran r = snap({"diff", std::to_string(a), std::to_string(a)});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\n0ms later; 14 ports and 10 capacity groups in both\nno changes\n"));
  const Ran j = snap({"diff", std::to_string(a), std::to_string(a), "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(json::parse(j.out)["ports"], json::array());
}

TEST_F(CliSnapshot, DiffRejectsBadIds) {
  const int64_t a = incident_snapshot();
  const std::string sa = std::to_string(a);
  const Ran first = snap({"diff", "x", sa});
  EXPECT_EQ(first.code, 2);
  EXPECT_EQ(first.err, "medic: snapshot id \"x\": expected a positive integer\n");
  const Ran second = snap({"diff", sa, "-2"});
  EXPECT_EQ(second.code, 2);
  EXPECT_EQ(second.err, "medic: snapshot id \"-2\": expected a positive integer\n");
  const Ran unknown = snap({"diff", sa, "777"});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_EQ(unknown.err, "medic: no snapshot with id 777\n");
  EXPECT_EQ(unknown.out, "");
  const Ran one = snap({"diff", sa});
  EXPECT_EQ(one.code, 2);
  EXPECT_THAT(one.err, HasSubstr("b is required"));
}

// --- prune ------------------------------------------------------------------------------

TEST_F(CliSnapshot, PruneDeletesWhatIsOlderThanDays) {
  // Relative to now: prune reads the clock.
  const Time now = SystemClock().now();
  const int64_t old_fabric = write(snapshot::capture_fabric(state(now - from_seconds(40 * 86400.0)), "old"));
  write(snapshot::capture_link(state(now - from_seconds(31 * 86400.0)), *topo_.find_link("rtsw0001:eth5"), "incident", ""));
  const int64_t young = write(snapshot::capture_fabric(state(now - from_seconds(29 * 86400.0)), "young"));
  const Ran r = snap({"prune", "--older-than", "30"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, MatchesRegex("pruned 2 snapshots taken before 20[0-9-]+T[0-9:.]+Z\n"));
  EXPECT_EQ(tdb_.scalar("SELECT string_agg(id::text, ',') FROM snapshots"), std::to_string(young));
  EXPECT_EQ(tdb_.scalar("SELECT count(*) FROM snapshot_ports WHERE snapshot_id = " + std::to_string(old_fabric)), "0");
  EXPECT_EQ(count("snapshot_ports"), topo_.ports().size());
  const Ran again = snap({"prune", "--older-than", "0.5"});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_THAT(again.out, StartsWith("pruned 1 snapshot taken before "));
  EXPECT_EQ(count("snapshots"), 0u);
  EXPECT_EQ(count("snapshot_ports"), 0u);
}

TEST_F(CliSnapshot, PruneRejectsBadDaysAndDeletesNothing) {
  write(snapshot::capture_fabric(state(at(0)), "old"));  // years before any test runs
  for (const char* bad : {"-3", "-0.5", "abc", "", "inf", "nan", "30d", "1e9"}) {
    const Ran r = snap({"prune", "--older-than", bad});
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_EQ(r.err, std::string("medic: --older-than \"") + bad + "\": expected a number of days from 0 to 100000\n");
    EXPECT_EQ(r.out, "");
  }
  const Ran missing = snap({"prune"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_THAT(missing.err, HasSubstr("--older-than is required"));
  EXPECT_EQ(count("snapshots"), 1u);
  EXPECT_EQ(count("snapshot_ports"), topo_.ports().size());
}

// --- take (a real fabsim) ---------------------------------------------------------------

class CliSnapshotTake : public CliSnapshot {
 protected:
  void SetUp() override {
    CliSnapshot::SetUp();
    const Ran gen = medic({"fabric", "gen", "demo"});
    ASSERT_EQ(gen.code, 0) << gen.err;
    testing::write_file(dir_.file("demo.json"), gen.out);
  }
  testing::TempDir dir_;
};

TEST_F(CliSnapshotTake, ScrapesEveryDeviceOnceAndStoresTheFabric) {
  testing::write_file(dir_.file("scenario.json"), R"({"faults": [{"kind": "silent", "device": "rtsw0006", "at_s": 0},
                                                                 {"kind": "down", "link": "rtsw0003:eth6", "at_s": 0}]})");
  const std::string exported = dir_.file("exported.json");
  testing::Process fabsim(MEDIC_FABSIM_BIN, {"--topology", dir_.file("demo.json"), "--scenario", dir_.file("scenario.json"),
                                             "--listen", "127.0.0.1:0", "--export-topology", exported});
  ASSERT_TRUE(testing::eventually([&] { return fs::exists(exported); }, 30s)) << fabsim.output();
  ASSERT_TRUE(testing::eventually(
      [&] {
        const std::string o = fabsim.output();
        return o.find("silent on rtsw0006 starts") != std::string::npos &&
               o.find("rtsw0003:eth6--ctsw002:eth3 down") != std::string::npos;
      },
      30s))
      << fabsim.output();
  const fabric::Topology live = fabric::load_topology_file(exported);
  const std::string l7 = live.link(*live.find_link("rtsw0003:eth7")).name;
  // What the database records: a drained link, an open incident, a closed one.
  tdb_.exec("UPDATE links SET drain_state = 'drained' WHERE name = '" + l7 + "'");
  const int64_t open = incident("rtsw0003:eth7", "mitigated");
  incident("rtsw0002:eth6", "closed");

  const Ran r = snap({"take", "--topology", exported, "--reason", "before the maintenance", "--timeout", "2"});
  ASSERT_EQ(r.code, 0) << r.err;
  const size_t groups = remediation::with_derived_groups(
                            live, remediation::CapacityConfig::load_file(testing::source_dir() + "/data/capacity.json"))
                            .groups()
                            .size();
  EXPECT_THAT(r.out, MatchesRegex("snapshot [0-9]+: 160 ports of 28 devices \\(27 answered, 1 did not\\), " +
                                  std::to_string(groups) + " capacity groups, 1 open incident\n"));
  EXPECT_THAT(r.err, StartsWith("medic: rtsw0006: "));
  EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
  const int64_t id = std::stoll(words(r.out)[1]);

  EXPECT_EQ(tdb_.scalar("SELECT scope || ' ' || reason || ' ' || port_count FROM snapshots"),
            "fabric before the maintenance 160");
  EXPECT_EQ(count("snapshot_ports"), 160u);
  const auto stored = db_->snapshot(id);
  ASSERT_TRUE(stored.ok() && stored->has_value()) << (stored.ok() ? "none" : stored.error());
  const snapshot::Snapshot& s = **stored;
  EXPECT_EQ(s.incidents.size(), 1u);
  EXPECT_EQ(s.incidents[0].id, open);
  size_t silent = 0, read = 0;
  for (const auto& p : s.ports) {
    if (p.device == "rtsw0006") {
      ++silent;
      EXPECT_EQ(p.sampled_at, std::nullopt) << p.port;
      EXPECT_EQ(p.oper, -1) << p.port;
      continue;
    }
    ++read;
    EXPECT_NE(p.sampled_at, std::nullopt) << p.device << ":" << p.port;
    EXPECT_TRUE(p.has(Counter::rx_bytes)) << p.device << ":" << p.port;
    const bool down = p.link == live.link(*live.find_link("rtsw0003:eth6")).name;
    EXPECT_EQ(p.oper, down ? 0 : 1) << p.device << ":" << p.port;
    EXPECT_EQ(p.drained, p.link == l7) << p.device << ":" << p.port;
  }
  EXPECT_EQ(silent, 8u);
  EXPECT_EQ(read, 152u);
  // The down link and the drained one leave rtsw0003 at half its uplinks.
  bool seen = false;
  for (const auto& g : s.groups) {
    if (g.name != "rtsw0003 uplinks") continue;
    seen = true;
    EXPECT_EQ(g.links_in_service, 2);
    EXPECT_TRUE(g.below_floor());
  }
  EXPECT_TRUE(seen);

  const Ran show = snap({"show", std::to_string(id)});
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_THAT(show.out, HasSubstr("ports:    160 on 28 devices: 152 read, 8 never answered; 150 up, 2 down, 8 unknown; "
                                  "2 drained\n"));
  EXPECT_THAT(line_words(show.out, "rtsw0003", "uplinks"),
              ElementsAre("rtsw0003", "uplinks", "tor_uplinks", "50.0%", "2/4", "75.0%", "BELOW", "FLOOR"));
}

TEST_F(CliSnapshotTake, BadInputWritesNothing) {
  const std::string bad = dir_.file("bad.json");
  testing::write_file(bad, R"({"switches": [{"name": "a"}]})");
  const Ran topo = snap({"take", "--topology", bad});
  EXPECT_EQ(topo.code, 2);
  EXPECT_THAT(topo.err, StartsWith(bad + ": $.switches[0]: "));
  EXPECT_THAT(topo.err, HasSubstr("\nmedic: " + bad + ": "));

  const Ran missing = snap({"take", "--topology", dir_.file("nope.json")});
  EXPECT_EQ(missing.code, 2);
  EXPECT_THAT(missing.err, HasSubstr(dir_.file("nope.json")));

  testing::write_file(dir_.file("capacity.json"), R"({"version": 1, "floors": {"tor_uplinks": 2}})");
  const Ran cap = snap({"take", "--topology", dir_.file("demo.json"), "--capacity", dir_.file("capacity.json")});
  EXPECT_EQ(cap.code, 2);
  EXPECT_THAT(cap.err, StartsWith("medic: " + dir_.file("capacity.json") + ": $.floors.tor_uplinks: "));

  testing::write_file(dir_.file("map.json"), "{");
  const Ran map = snap({"take", "--topology", dir_.file("demo.json"), "--counter-map", dir_.file("map.json")});
  EXPECT_EQ(map.code, 2);
  EXPECT_THAT(map.err, StartsWith("medic: " + dir_.file("map.json") + ": line 1, column 2: "));

  const Ran timeout = snap({"take", "--topology", dir_.file("demo.json"), "--timeout", "0"});
  EXPECT_EQ(timeout.code, 2);
  EXPECT_THAT(timeout.err, HasSubstr("--timeout: Value 0 not in range"));

  EXPECT_EQ(count("snapshots"), 0u);
}

TEST_F(CliSnapshotTake, NoDeviceAnsweringWritesNothing) {
  const Ran gen = medic({"fabric", "gen", "demo", "--base-url", "http://127.0.0.1:" + std::to_string(testing::closed_port())});
  ASSERT_EQ(gen.code, 0) << gen.err;
  testing::write_file(dir_.file("dead.json"), gen.out);
  const Ran r = snap({"take", "--topology", dir_.file("dead.json"), "--timeout", "1"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  const auto ls = lines_of(r.err);
  ASSERT_EQ(ls.size(), 12u) << r.err;  // ten devices, the rest counted, the verdict
  EXPECT_THAT(ls[0], StartsWith("medic: rtsw0001: "));
  EXPECT_EQ(ls[10], "medic: ... and 18 more devices did not answer");
  EXPECT_EQ(ls[11], "medic: no device answered (28 asked): nothing written");
  EXPECT_EQ(count("snapshots"), 0u);
}

TEST(CliSnapshotDb, WithoutADatabase) {
  const char* old = std::getenv("MEDIC_DB_URL");
  const std::string saved = old ? old : "";
  ::unsetenv("MEDIC_DB_URL");
  const Ran list = medic({"snapshot", "list"});
  const Ran prune = medic({"snapshot", "prune", "--older-than", "3"});
  if (old) ::setenv("MEDIC_DB_URL", saved.c_str(), 1);
  EXPECT_EQ(list.code, 2);
  EXPECT_EQ(list.err, "medic: no database: pass --db URL or set MEDIC_DB_URL\n");
  EXPECT_EQ(prune.code, 2);
  EXPECT_EQ(prune.err, "medic: no database: pass --db URL or set MEDIC_DB_URL\n");
}

TEST(CliSnapshotDb, UnreachableDatabaseExitsOne) {
  const std::string url = "postgresql://medic:s3cret-pw@127.0.0.1:" + std::to_string(testing::closed_port()) + "/medic";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"list"}, {"show", "1"}, {"diff", "1", "2"}, {"prune", "--older-than", "30"}}) {
    auto a = args;
    a.insert(a.begin(), "snapshot");
    a.push_back("--db");
    a.push_back(url);
    const Ran r = medic(a);
    EXPECT_EQ(r.code, 1) << args.front();
    EXPECT_THAT(r.err, HasSubstr("cannot connect to PostgreSQL at postgresql://medic:***@127.0.0.1:"));
    EXPECT_THAT(r.err, Not(HasSubstr("s3cret-pw")));
  }
}

}  // namespace
}  // namespace medic::cli
