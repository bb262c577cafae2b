// `medic replay` on scrape sets rendered by the fabric emulator at chosen times (no clock,
// no network), `medic record` against a real fabsim on loopback, and `medic fabric targets`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "cli/commands.h"
#include "cli/replay.h"
#include "fabric/loader.h"
#include "sim/fabric_sim.h"
#include "sim/scenario.h"
#include "tests/cli/cli_fixture.h"
#include "tests/support/testing.h"

namespace medic::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;
using ::testing::StartsWith;
using nlohmann::json;
using namespace std::chrono_literals;

// Every stdout line parsed as JSON (a line that is not JSON fails the test).
std::vector<json> json_lines(const std::string& text) {
  std::vector<json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    try {
      out.push_back(json::parse(line));
    } catch (const json::exception&) {
      ADD_FAILURE() << "not a JSON line: " << line;
    }
  }
  return out;
}

std::vector<json> of_type(const std::vector<json>& lines, const std::string& type) {
  std::vector<json> out;
  for (const auto& l : lines) {
    if (l.value("type", "") == type) out.push_back(l);
  }
  return out;
}

std::vector<json> opened(const std::vector<json>& lines) {
  std::vector<json> out;
  for (const auto& l : of_type(lines, "incident")) {
    if (l["event"] == "opened") out.push_back(l);
  }
  return out;
}

// The one opened incident of that class, or a null json.
json opened_of(const std::vector<json>& lines, const std::string& cls) {
  json found;
  int n = 0;
  for (const auto& l : opened(lines)) {
    if (l["class"] == cls) {
      found = l;
      ++n;
    }
  }
  if (n != 1) {
    ADD_FAILURE() << n << " opened incidents of class " << cls;
    return json();
  }
  return found;
}

constexpr long long kT0 = 1'800'000'000;  // 2027-01-15T08:00:00Z

std::string shipped_detectors() { return testing::read_file(testing::source_dir() + "/data/detectors.json"); }

// The demo fabric, its emulator, and a scrape set written from it: poll `t` (seconds after
// kT0) into DIR/<kT0 + t>/DEVICE.prom|.json, each device in the format its URL says.
class CliReplay : public ::testing::Test {
 protected:
  void SetUp() override {
    const Ran gen = medic({"fabric", "gen", "demo"});
    ASSERT_EQ(gen.code, 0) << gen.err;
    topo_path = dir.file("demo.json");
    testing::write_file(topo_path, gen.out);
    topo = fabric::load_topology_file(topo_path);
    sim = std::make_unique<sim::FabricSim>(topo, 1);
    // Shorter waits than the shipped thresholds: pausing counts after 2 s, silence after 3 s.
    json d = json::parse(shipped_detectors());
    d["pfc"]["sustain_s"] = 2;
    d["stale"]["after_s"] = 3;
    detectors_path = dir.file("detectors.json");
    testing::write_file(detectors_path, d.dump(1));
    scrapes = dir.file("scrapes");
    fs::create_directories(scrapes);
  }

  fabric::DeviceId dev(const std::string& name) const { return *topo.find_device(name); }
  fabric::PortId port(const std::string& endpoint) const {
    const auto colon = endpoint.find(':');
    return *topo.find_port(dev(endpoint.substr(0, colon)), endpoint.substr(colon + 1));
  }
  std::string link_name(const std::string& endpoint) const { return topo.link(*topo.find_link(endpoint)).name; }
  std::string poll_dir(long long t) const { return scrapes + "/" + std::to_string(kT0 + t); }

  // Writes poll `t`: every device with telemetry, except those `skip` says, as `body` says
  // (empty: rendered by the emulator).
  void write_poll(long long t, const std::function<bool(const std::string&)>& skip = nullptr,
                  const std::function<std::string(const std::string&)>& body = nullptr) {
    const std::string d = poll_dir(t);
    fs::create_directories(d);
    for (fabric::DeviceId id = 0; id < topo.devices().size(); ++id) {
      const auto& device = topo.device(id);
      if (device.telemetry_url.empty() || (skip && skip(device.name))) continue;
      const bool oc = device.telemetry_url.ends_with("/gnmi");
      std::string text = body ? body(device.name) : "";
      if (text.empty()) {
        text = !device.is_switch() ? sim->render_host(id, static_cast<double>(t))
               : oc               ? sim->render_openconfig(id, static_cast<double>(t))
                                  : sim->render_prometheus(id, static_cast<double>(t));
      }
      testing::write_file(d + "/" + device.name + (oc ? ".json" : ".prom"), text);
    }
  }

  sim::Fault end_fault(sim::FaultKind kind, const std::string& endpoint, double value) const {
    sim::Fault f;
    f.kind = kind;
    f.port = port(endpoint);
    f.value = value;
    return f;
  }

  // Twenty polls a second apart with one fault of each family, each on its own device:
  //   rtsw0001:eth5's link flaps once a second from t=3.3 to t=6.4 (penalty past suppress)
  //   rtsw0002:eth6 receives 1e-4 corrupted frames from t=1.5
  //   rtsw0003:eth7's laser is 6 dB weaker from t=1.5
  //   host0004:nic0 sends 5000 pause frames/s from t=1.5 (longer than pfc.sustain_s)
  //   rtsw0005's files stop after t=5 (stale after 3 s)
  //   ctsw007 answers garbage at t=10 only
  void write_faulty_set() {
    const fabric::LinkId flapping = *topo.find_link("rtsw0001:eth5");
    for (long long t = 1; t <= kPolls; ++t) {
      if (t == 2) {
        sim->apply(end_fault(sim::FaultKind::corrupt, "rtsw0002:eth6", 1e-4), sim::SimEvent::Phase::start, 1.5);
        sim->apply(end_fault(sim::FaultKind::weak_tx, "rtsw0003:eth7", 6), sim::SimEvent::Phase::start, 1.5);
        sim->apply(end_fault(sim::FaultKind::pause, "host0004:nic0", 5000), sim::SimEvent::Phase::start, 1.5);
      }
      if (t >= 4 && t <= 7) {
        sim->set_link_up(flapping, false, static_cast<double>(t) - 0.7);
        sim->set_link_up(flapping, true, static_cast<double>(t) - 0.6);
      }
      write_poll(
          t, [&](const std::string& name) { return name == "rtsw0005" && t > 5; },
          [&](const std::string& name) -> std::string {
            if (name == "ctsw007" && t == 10) return kGarbage;
            return "";
          });
    }
  }

  std::vector<std::string> replay_args(std::vector<std::string> extra = {}) const {
    std::vector<std::string> a = {"replay", "--topology", topo_path, "--scrapes", scrapes, "--detectors", detectors_path};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }

  static constexpr long long kPolls = 20;
  static constexpr const char* kGarbage = "{\"openconfig-interfaces:interfaces\": {\"interface\": [{\"name\": ";
  testing::TempDir dir;
  std::string topo_path, detectors_path, scrapes;
  fabric::Topology topo;
  std::unique_ptr<sim::FabricSim> sim;
};

TEST_F(CliReplay, EachFaultOpensTheRightIncident) {
  write_faulty_set();
  const Ran r = medic(replay_args());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = json_lines(r.out);

  const json flap = opened_of(lines, "link_flap");
  ASSERT_FALSE(flap.is_null()) << r.out;
  EXPECT_EQ(flap["link"], "rtsw0001:eth5--ctsw001:eth1");
  EXPECT_EQ(flap["severity"], "critical");
  EXPECT_EQ(flap["mitigation"], "drain");
  EXPECT_FALSE(flap.contains("device"));
  EXPECT_EQ(flap["time"], "2027-01-15T08:00:06.000000Z");  // the third flap passes suppress

  const json crc = opened_of(lines, "corruption");
  ASSERT_FALSE(crc.is_null()) << r.out;
  EXPECT_EQ(crc["link"], link_name("rtsw0002:eth6"));
  EXPECT_EQ(crc["link"], "rtsw0002:eth6--ctsw002:eth2");
  EXPECT_EQ(crc["severity"], "critical");
  EXPECT_EQ(crc["mitigation"], "drain");
  EXPECT_THAT(crc["summary"].get<std::string>(), StartsWith("rtsw0002:eth6 receives corrupted frames"));

  const json optics = opened_of(lines, "optics");
  ASSERT_FALSE(optics.is_null()) << r.out;
  EXPECT_EQ(optics["link"], "rtsw0003:eth7--ctsw003:eth3");
  EXPECT_EQ(optics["severity"], "critical");
  EXPECT_EQ(optics["mitigation"], "drain");
  ASSERT_TRUE(optics.contains("suspect")) << optics.dump();
  EXPECT_THAT(optics["suspect"].get<std::string>(), StartsWith("the transceiver in rtsw0003:eth7 "));

  const json slow = opened_of(lines, "slow_receiver");
  ASSERT_FALSE(slow.is_null()) << r.out;
  EXPECT_EQ(slow["device"], "host0004");
  EXPECT_FALSE(slow.contains("link"));
  EXPECT_EQ(slow["mitigation"], "none");  // routed to the host's owner, never drained

  const json stale = opened_of(lines, "telemetry_stale");
  ASSERT_FALSE(stale.is_null()) << r.out;
  EXPECT_EQ(stale["device"], "rtsw0005");
  EXPECT_EQ(stale["mitigation"], "none");
  EXPECT_EQ(stale["time"], "2027-01-15T08:00:08.000000Z");  // last answer at t=5, silent 3 s
  EXPECT_EQ(stale["summary"], "rtsw0005 has not answered for 3.0s (last error: no recorded answer at "
                              "2027-01-15T08:00:08.000000Z)");

  // Nothing else: the one garbage answer of ctsw007 is rejected, not an incident.
  EXPECT_EQ(opened(lines).size(), 5u) << r.out;
  for (const auto& l : of_type(lines, "incident")) {
    EXPECT_NE(l.value("device", ""), "ctsw007") << l.dump();
    EXPECT_TRUE(l["mitigation"] == "drain" || l["mitigation"] == "none") << l.dump();
  }
}

TEST_F(CliReplay, FindingsCarryTheirIncidentOrANote) {
  write_faulty_set();
  const Ran r = medic(replay_args());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = json_lines(r.out);
  std::set<int64_t> incident_ids;
  for (const auto& l : of_type(lines, "incident")) incident_ids.insert(l["id"].get<int64_t>());
  const auto findings = of_type(lines, "finding");
  ASSERT_FALSE(findings.empty());
  size_t noted = 0;
  std::map<int64_t, std::set<std::string>> kinds_by_incident;
  for (const auto& f : findings) {
    EXPECT_NE(f.contains("incident"), f.contains("note")) << f.dump();
    if (f.contains("incident")) {
      EXPECT_TRUE(incident_ids.count(f["incident"].get<int64_t>())) << f.dump();
      kinds_by_incident[f["incident"].get<int64_t>()].insert(f["kind"].get<std::string>());
    } else {
      ++noted;
      EXPECT_EQ(f["note"], "noted") << f.dump();
      EXPECT_EQ(f["severity"], "info") << f.dump();
    }
    EXPECT_TRUE(f.contains("time") && f.contains("first_seen") && f.contains("summary") && f.contains("evidence"))
        << f.dump();
  }
  // The flaps before the penalty passed suppress were only noted.
  EXPECT_GE(noted, 1u);
  bool noted_flap = false;
  for (const auto& f : findings) {
    noted_flap |= f.contains("note") && f["kind"] == "link_flap" && f["link"] == "rtsw0001:eth5--ctsw001:eth1";
  }
  EXPECT_TRUE(noted_flap);
  // Every incident line is preceded by the findings that went to it.
  const json flap = opened_of(lines, "link_flap");
  ASSERT_FALSE(flap.is_null());
  EXPECT_EQ(kinds_by_incident[flap["id"].get<int64_t>()], std::set<std::string>{"link_flap"});
  const json stale = opened_of(lines, "telemetry_stale");
  ASSERT_FALSE(stale.is_null());
  EXPECT_EQ(kinds_by_incident[stale["id"].get<int64_t>()], std::set<std::string>{"telemetry_stale"});
  EXPECT_EQ(stale["findings"], 1);
  // Ids are handed out in order from 1.
  EXPECT_EQ(*incident_ids.begin(), 1);
  EXPECT_EQ(*incident_ids.rbegin(), 5);
}

TEST_F(CliReplay, AGarbageFileIsRejected) {
  write_faulty_set();
  const Ran r = medic(replay_args());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rejected = of_type(json_lines(r.out), "rejected");
  ASSERT_EQ(rejected.size(), 1u) << r.out;
  EXPECT_EQ(rejected[0]["device"], "ctsw007");
  EXPECT_EQ(rejected[0]["time"], "2027-01-15T08:00:10.000000Z");
  EXPECT_THAT(rejected[0]["error"].get<std::string>(), StartsWith("byte " + std::to_string(std::string(kGarbage).size() + 1) + ": "));
  EXPECT_THAT(r.err, HasSubstr(", 1 answers rejected ("));
}

// Bytes that are not UTF-8 in a scrape: that payload is refused exactly (file, line, byte)
// and the replay goes on; the JSON it prints stays valid. An absurd counter value is the
// device's telemetry, never a flap of its link.
TEST_F(CliReplay, HostileBytesAndAbsurdValuesAreRefusedAndTheRestGoesOn) {
  for (long long t = 1; t <= 6; ++t) {
    write_poll(t, nullptr, [&](const std::string& name) -> std::string {
      if (name == "rtsw0002" && t == 3) return "node_network_up{device=\"eth\xff" "5\"} 1\n";
      if (name == "rtsw0003" && t == 4) return "node_network_up{device=\"eth5\"} 1\xff\n";
      if (name == "rtsw0001" && t == 4) {
        std::string body = sim->render_prometheus(dev("rtsw0001"), 4.0);
        const std::string key = "node_network_carrier_changes_total{device=\"eth5\"} ";
        const size_t at = body.find(key);
        body.replace(at + key.size(), body.find('\n', at) - at - key.size(), "18446744073709551616");
        return body;
      }
      return "";
    });
  }
  const Ran r = medic(replay_args());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = json_lines(r.out);  // every line parses: valid JSON, valid UTF-8
  const auto rejected = of_type(lines, "rejected");
  ASSERT_EQ(rejected.size(), 2u) << r.out;
  EXPECT_EQ(rejected[0]["device"], "rtsw0002");
  EXPECT_EQ(rejected[0]["file"], poll_dir(3) + "/rtsw0002.prom");
  EXPECT_EQ(rejected[0]["error"], "line 1: invalid UTF-8 at byte 28 of the line, in the value of label device of node_network_up");
  EXPECT_EQ(rejected[1]["device"], "rtsw0003");
  EXPECT_EQ(rejected[1]["error"], "line 1: invalid value \"1\\xff\" for node_network_up");
  const json invalid = opened_of(lines, "telemetry_invalid");
  ASSERT_FALSE(invalid.is_null()) << r.out;
  EXPECT_EQ(invalid["device"], "rtsw0001");
  for (const auto& o : opened(lines)) EXPECT_NE(o["class"], "link_flap") << o.dump();
  EXPECT_THAT(r.err, HasSubstr("replayed 6 polls"));
}

TEST_F(CliReplay, SummaryGoesToStderr) {
  write_faulty_set();
  const Ran r = medic(replay_args());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, MatchesRegex("replayed 20 polls of 28 devices: [0-9]+ port samples, [0-9]+ findings, 5 incidents, "
                                  "1 answers rejected \\([0-9.]+ MB in [0-9.]+s\\)\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("replayed")));
}

TEST_F(CliReplay, IncidentsOnlyPrintsOnlyIncidentLines) {
  write_faulty_set();
  const Ran all = medic(replay_args());
  const Ran only = medic(replay_args({"--incidents-only"}));
  ASSERT_EQ(all.code, 0) << all.err;
  ASSERT_EQ(only.code, 0) << only.err;
  const auto lines = json_lines(only.out);
  ASSERT_FALSE(lines.empty());
  for (const auto& l : lines) EXPECT_EQ(l["type"], "incident") << l.dump();
  EXPECT_EQ(lines, of_type(json_lines(all.out), "incident"));
  // The counts on stderr are the same.
  EXPECT_EQ(only.err.substr(0, only.err.find(" (")), all.err.substr(0, all.err.find(" (")));
}

TEST_F(CliReplay, ACleanFabricOpensNothing) {
  for (long long t = 1; t <= kPolls; ++t) write_poll(t);
  const Ran r = medic(replay_args());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = json_lines(r.out);
  EXPECT_TRUE(of_type(lines, "incident").empty()) << r.out;
  EXPECT_TRUE(of_type(lines, "rejected").empty()) << r.out;
  EXPECT_THAT(r.err, MatchesRegex("replayed 20 polls of 28 devices: [1-9][0-9]* port samples, [0-9]+ findings, "
                                  "0 incidents, 0 answers rejected .*\n"));
}

TEST_F(CliReplay, ShippedThresholdsByDefault) {
  // Without --detectors the shipped file is used: the slow receiver needs 30 s of pausing,
  // which twenty polls do not give it, while the corruption is seen as before.
  write_faulty_set();
  const Ran r = medic({"replay", "--topology", topo_path, "--scrapes", scrapes});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = json_lines(r.out);
  EXPECT_FALSE(opened_of(lines, "corruption").is_null());
  for (const auto& l : opened(lines)) {
    EXPECT_NE(l["class"], "slow_receiver") << l.dump();
    EXPECT_NE(l["class"], "telemetry_stale") << l.dump();
  }
}

TEST_F(CliReplay, DeviceFaultLinksGroupsFailingLinksOfOneDevice) {
  // Two failing links of rtsw0001 are a switch_fault with --device-fault-links 2.
  for (long long t = 1; t <= 8; ++t) {
    if (t >= 4 && t <= 7) {
      for (const char* e : {"rtsw0001:eth5", "rtsw0001:eth6"}) {
        sim->set_link_up(*topo.find_link(e), false, static_cast<double>(t) - 0.7);
        sim->set_link_up(*topo.find_link(e), true, static_cast<double>(t) - 0.6);
      }
    }
    write_poll(t);
  }
  const Ran per_link = medic(replay_args({"--incidents-only"}));
  ASSERT_EQ(per_link.code, 0) << per_link.err;
  const auto a = opened(json_lines(per_link.out));
  ASSERT_EQ(a.size(), 2u) << per_link.out;
  EXPECT_EQ(a[0]["class"], "link_flap");
  EXPECT_EQ(a[1]["class"], "link_flap");

  const Ran grouped = medic(replay_args({"--incidents-only", "--device-fault-links", "2"}));
  ASSERT_EQ(grouped.code, 0) << grouped.err;
  const auto g = opened(json_lines(grouped.out));
  ASSERT_EQ(g.size(), 1u) << grouped.out;
  EXPECT_EQ(g[0]["class"], "switch_fault");
  EXPECT_EQ(g[0]["device"], "rtsw0001");
  EXPECT_EQ(g[0]["mitigation"], "none");
}

// ---------------------------------------------------------------------------------------
// Bad input: exit 2, the path and the problem

TEST_F(CliReplay, MissingScrapesFolder) {
  const std::string missing = dir.file("nowhere");
  const Ran r = medic({"replay", "--topology", topo_path, "--scrapes", missing});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "medic: " + missing + ": not a directory\n");
  // A file is not a folder either.
  const Ran f = medic({"replay", "--topology", topo_path, "--scrapes", topo_path});
  EXPECT_EQ(f.code, 2);
  EXPECT_EQ(f.err, "medic: " + topo_path + ": not a directory\n");
}

TEST_F(CliReplay, AFileAtTheTopLevel) {
  write_poll(1);
  testing::write_file(scrapes + "/README", "scrapes of last night\n");
  const Ran r = medic(replay_args());
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "medic: " + scrapes + "/README: expected only folders named by Unix time\n");
}

TEST_F(CliReplay, AFolderNotNamedByATime) {
  for (const std::string name : {"yesterday", "1800000000x", "-5", "0", "1e999", "nan", "inf", "infinity", "1e300"}) {
    testing::TempDir d;
    fs::create_directories(d.path() + "/" + name);
    const Ran r = medic({"replay", "--topology", topo_path, "--scrapes", d.path()});
    EXPECT_EQ(r.code, 2) << name;
    EXPECT_EQ(r.err, "medic: " + d.path() + "/" + name + ": folder name is not a Unix time in seconds\n") << name;
  }
  // Decimals are a time.
  fs::create_directories(scrapes + "/1800000000.25");
  const Ran ok = medic(replay_args());
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_THAT(ok.err, StartsWith("replayed 1 polls of 0 devices: "));
}

TEST_F(CliReplay, AFileOfAnotherExtension) {
  write_poll(1);
  testing::write_file(poll_dir(1) + "/rtsw0001.txt", "node_network_up{device=\"eth1\"} 1\n");
  const Ran r = medic(replay_args());
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "medic: " + poll_dir(1) + "/rtsw0001.txt: expected DEVICE.prom, DEVICE.json or DEVICE.snmp\n");
}

TEST_F(CliReplay, AFolderInsideAPoll) {
  write_poll(1);
  fs::create_directories(poll_dir(2) + "/atsw01.json");
  const Ran r = medic(replay_args());
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "medic: " + poll_dir(2) + "/atsw01.json: expected DEVICE.prom, DEVICE.json or DEVICE.snmp\n");
}

TEST_F(CliReplay, AFileNamedAfterADeviceNotInTheTopology) {
  write_poll(1);
  testing::write_file(poll_dir(1) + "/rtsw9999.prom", "node_network_up{device=\"eth1\"} 1\n");
  const Ran r = medic(replay_args());
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "medic: " + poll_dir(1) + "/rtsw9999.prom: no device \"rtsw9999\" in " + topo_path + "\n");
}

TEST_F(CliReplay, OneLoadedModelReplaysScrapeSetsOneAfterAnotherAsTheCommandDoes) {
  // The fuzz harness loads topology, map and thresholds once and replays many scrape sets:
  // each replay starts from nothing (no counters, incidents or ids kept from the last).
  write_faulty_set();
  // A fault-free fabric's twenty polls in another folder.
  const std::string faulty = scrapes, clean = dir.file("clean");
  sim = std::make_unique<sim::FabricSim>(topo, 1);
  scrapes = clean;
  for (long long t = 1; t <= kPolls; ++t) write_poll(t);
  scrapes = faulty;

  ReplayOptions o;
  o.topology_path = topo_path;
  o.scrapes_dir = faulty;
  o.detectors_path = detectors_path;
  std::ostringstream load_err;
  const auto model = load_replay_model(o, load_err);
  ASSERT_TRUE(model.has_value()) << load_err.str();
  EXPECT_EQ(load_err.str(), "");

  const Ran command = medic(replay_args());
  ASSERT_EQ(command.code, 0) << command.err;
  for (int round = 0; round < 2; ++round) {
    std::ostringstream out, err;
    o.scrapes_dir = faulty;
    ASSERT_EQ(replay(*model, o, out, err), 0) << err.str();
    EXPECT_EQ(out.str(), command.out) << "round " << round;
    EXPECT_EQ(opened(json_lines(out.str())).size(), 5u);
    EXPECT_EQ(opened(json_lines(out.str())).front()["id"], 1);  // ids start again at 1

    std::ostringstream clean_out, clean_err;
    o.scrapes_dir = clean;
    ASSERT_EQ(replay(*model, o, clean_out, clean_err), 0) << clean_err.str();
    EXPECT_TRUE(of_type(json_lines(clean_out.str()), "incident").empty()) << clean_out.str();
  }
}

TEST_F(CliReplay, LoadingTheModelReportsWhatAndWhere) {
  ReplayOptions o;
  o.topology_path = topo_path;
  o.detectors_path = dir.file("none.json");
  std::ostringstream err;
  EXPECT_FALSE(load_replay_model(o, err).has_value());
  EXPECT_EQ(err.str(), "medic: " + dir.file("none.json") + ": cannot open: No such file or directory\n");
  o.detectors_path = detectors_path;
  o.device_fault_links = 0;
  std::ostringstream range;
  EXPECT_FALSE(load_replay_model(o, range).has_value());
  EXPECT_EQ(range.str(), "medic: triage device_fault_links must be at least 2\n");
}

TEST_F(CliReplay, BadTopologyPrintsItsProblems) {
  write_poll(1);
  const std::string bad = dir.file("bad.json");
  testing::write_file(bad, R"({"version": 1,
    "switches": [{"name": "rtsw0001", "role": "rtsw", "rol": 1, "telemetry": "http://x/m", "driver": {"kind": "dryrun"}}],
    "links": [{"a": "rtsw0001:eth1", "b": "ctsw009:eth1", "speed_gbps": 400}]})");
  const Ran r = medic({"replay", "--topology", bad, "--scrapes", scrapes});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, bad + ": $.switches[0]: unknown key \"rol\"\n" + bad +
                       ": $.links[0].b: unknown switch \"ctsw009\" (no switch or host has that name)\n");
  const Ran missing = medic({"replay", "--topology", dir.file("none.json"), "--scrapes", scrapes});
  EXPECT_EQ(missing.code, 2);
  EXPECT_THAT(missing.err, HasSubstr(dir.file("none.json")));
}

TEST_F(CliReplay, BadDetectorsFile) {
  write_poll(1);
  const std::string bad = dir.file("bad-detectors.json");
  testing::write_file(bad, R"({"pfc": {"sustain_s": -1}})");
  const Ran r = medic({"replay", "--topology", topo_path, "--scrapes", scrapes, "--detectors", bad});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "medic: " + bad + ": $.pfc.sustain_s: must not be negative\n");
  testing::write_file(bad, R"({"stale": {"afer_s": 3}})");
  const Ran typo = medic({"replay", "--topology", topo_path, "--scrapes", scrapes, "--detectors", bad});
  EXPECT_EQ(typo.code, 2);
  EXPECT_EQ(typo.err, "medic: " + bad + ": $.stale: unknown key \"afer_s\"\n");
  const Ran missing = medic({"replay", "--topology", topo_path, "--scrapes", scrapes, "--detectors", dir.file("no.json")});
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(missing.err, "medic: " + dir.file("no.json") + ": cannot open: No such file or directory\n");
}

TEST_F(CliReplay, BadCounterMap) {
  write_poll(1);
  const Ran r = medic(replay_args({"--counter-map", dir.file("no-map.json")}));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, StartsWith("medic: " + dir.file("no-map.json")));
}

TEST_F(CliReplay, DeviceFaultLinksOutOfRange) {
  write_poll(1);
  for (const std::string n : {"1", "0", "-3", "100001", "four"}) {
    const Ran r = medic(replay_args({"--device-fault-links", n}));
    EXPECT_EQ(r.code, 2) << n;
    EXPECT_EQ(r.out, "") << n;
    EXPECT_EQ(r.err, "--device-fault-links: Value " + n + " not in range 2 to 100000\nRun with --help for more information.\n")
        << n;
  }
  const Ran reopen = medic(replay_args({"--reopen-window", "-1"}));
  EXPECT_EQ(reopen.code, 2);
  EXPECT_THAT(reopen.err, HasSubstr("--reopen-window"));
  // In range, it is taken.
  const Ran two = medic(replay_args({"--device-fault-links", "2"}));
  EXPECT_EQ(two.code, 0) << two.err;
}

// ---------------------------------------------------------------------------------------
// medic record against a real fabsim

class CliRecord : public ::testing::Test {
 protected:
  void SetUp() override {
    const Ran gen = medic({"fabric", "gen", "demo"});
    ASSERT_EQ(gen.code, 0) << gen.err;
    testing::write_file(dir.file("demo.json"), gen.out);
  }
  testing::TempDir dir;
};

TEST_F(CliRecord, RecordsEveryDeviceInItsFormatAndReplaysClean) {
  testing::write_file(dir.file("scenario.json"),
                      R"({"faults": [{"kind": "silent", "device": "rtsw0006", "at_s": 0}]})");
  const std::string exported = dir.file("exported.json");
  testing::Process fabsim(MEDIC_FABSIM_BIN, {"--topology", dir.file("demo.json"), "--scenario", dir.file("scenario.json"),
                                             "--listen", "127.0.0.1:0", "--export-topology", exported});
  ASSERT_TRUE(testing::eventually([&] { return fs::exists(exported); }, 30s)) << fabsim.output();
  ASSERT_TRUE(testing::eventually([&] { return fabsim.output().find("silent on rtsw0006 starts") != std::string::npos; },
                                  30s))
      << fabsim.output();
  const fabric::Topology topo = fabric::load_topology_file(exported);

  const std::string out_dir = dir.file("rec/scrapes");  // made with its parents
  const Ran r = medic({"record", "--topology", exported, "--out", out_dir, "--polls", "3", "--interval", "0.2"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "recorded 3 polls of 28 devices into " + out_dir + " (81 answers, 3 failures)\n");

  std::vector<std::string> polls;
  for (const auto& e : fs::directory_iterator(out_dir)) {
    EXPECT_TRUE(e.is_directory()) << e.path();
    polls.push_back(e.path().filename().string());
  }
  ASSERT_EQ(polls.size(), 3u);
  std::set<std::string> expected;
  for (const auto& d : topo.devices()) {
    ASSERT_FALSE(d.telemetry_url.empty()) << d.name;
    if (d.name == "rtsw0006") continue;  // silent: no files at all
    expected.insert(d.name + (d.telemetry_url.ends_with("/gnmi") ? ".json" : ".prom"));
  }
  EXPECT_EQ(expected.size(), 27u);
  EXPECT_TRUE(expected.count("ctsw001.json"));
  EXPECT_TRUE(expected.count("rtsw0001.prom"));
  EXPECT_TRUE(expected.count("host0001.prom"));
  for (const auto& p : polls) {
    EXPECT_THAT(p, MatchesRegex("[0-9]+\\.[0-9]{3}"));
    std::set<std::string> files;
    for (const auto& f : fs::directory_iterator(out_dir + "/" + p)) {
      files.insert(f.path().filename().string());
      EXPECT_GT(f.file_size(), 0u) << f.path();
    }
    EXPECT_EQ(files, expected) << p;
    const std::string oc = testing::read_file(out_dir + "/" + p + "/ctsw001.json");
    EXPECT_THAT(oc, StartsWith("{"));
    const std::string prom = testing::read_file(out_dir + "/" + p + "/rtsw0001.prom");
    EXPECT_THAT(prom, HasSubstr("node_network_carrier_changes_total"));
  }

  const Ran rep = medic({"replay", "--topology", exported, "--scrapes", out_dir, "--incidents-only"});
  ASSERT_EQ(rep.code, 0) << rep.err;
  EXPECT_EQ(rep.out, "");
  EXPECT_THAT(rep.err, MatchesRegex("replayed 3 polls of 27 devices: [1-9][0-9]* port samples, [0-9]+ findings, "
                                    "0 incidents, 0 answers rejected .*\n"));
}

TEST_F(CliRecord, BadTopologyExitsTwo) {
  const std::string bad = dir.file("bad.json");
  testing::write_file(bad, R"({"switches": [{"name": "a"}]})");
  const Ran r = medic({"record", "--topology", bad, "--out", dir.file("out"), "--polls", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, StartsWith(bad + ": $.switches[0]: "));
  EXPECT_FALSE(fs::exists(dir.file("out")));
}

TEST_F(CliRecord, UnwritableOutExitsOne) {
  testing::write_file(dir.file("a-file"), "x");
  const std::string out = dir.file("a-file/scrapes");
  const Ran r = medic({"record", "--topology", dir.file("demo.json"), "--out", out, "--polls", "1"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "medic: " + out + ": " + std::make_error_code(std::errc::not_a_directory).message() + "\n");
}

TEST_F(CliRecord, PollsAndIntervalAreChecked) {
  for (const auto& args : std::vector<std::vector<std::string>>{{"--polls", "0"}, {"--interval", "0"}, {"--timeout", "0.01"}}) {
    std::vector<std::string> a = {"record", "--topology", dir.file("demo.json"), "--out", dir.file("out")};
    a.insert(a.end(), args.begin(), args.end());
    const Ran r = medic(a);
    EXPECT_EQ(r.code, 2) << args[0];
    EXPECT_THAT(r.err, HasSubstr(args[0] + ": Value " + args[1] + " not in range")) << args[0];
  }
  EXPECT_FALSE(fs::exists(dir.file("out")));
}

// ---------------------------------------------------------------------------------------
// medic fabric targets

TEST(CliTargets, OneFileSdGroupPerDeviceWithTelemetry) {
  testing::TempDir dir;
  const Ran gen = medic({"fabric", "gen", "demo", "--base-url", "http://127.0.0.1:9100"});
  ASSERT_EQ(gen.code, 0) << gen.err;
  testing::write_file(dir.file("demo.json"), gen.out);
  const Ran r = medic({"fabric", "targets", dir.file("demo.json")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const json groups = json::parse(r.out);
  ASSERT_TRUE(groups.is_array());
  ASSERT_EQ(groups.size(), 28u);  // 20 switches and 8 hosts
  std::map<std::string, json> by_device;
  for (const auto& g : groups) {
    EXPECT_EQ(g["targets"], json::array({"127.0.0.1:9100"})) << g.dump();
    by_device[g["labels"]["device"].get<std::string>()] = g;
  }
  EXPECT_EQ(by_device.size(), 28u);
  EXPECT_EQ(by_device["rtsw0001"]["labels"], (json{{"__scheme__", "http"},
                                                    {"__metrics_path__", "/s/rtsw0001/metrics"},
                                                    {"device", "rtsw0001"},
                                                    {"role", "rtsw"}}));
  EXPECT_EQ(by_device["ctsw001"]["labels"]["__metrics_path__"], "/s/ctsw001/gnmi");
  EXPECT_EQ(by_device["ctsw001"]["labels"]["role"], "ctsw");
  EXPECT_EQ(by_device["atsw01"]["labels"]["role"], "atsw");
  EXPECT_EQ(by_device["host0001"]["labels"], (json{{"__scheme__", "http"},
                                                    {"__metrics_path__", "/h/host0001/metrics"},
                                                    {"device", "host0001"},
                                                    {"role", "host"}}));
}

TEST(CliTargets, SchemeHostAndPathOfEachUrl) {
  testing::TempDir dir;
  testing::write_file(dir.file("t.json"), R"({
    "switches": [
      {"name": "sw1", "role": "rtsw", "telemetry": "https://sw1.example:9443/gnmi/get", "driver": {"kind": "dryrun"}},
      {"name": "sw2", "role": "ctsw", "telemetry": "http://198.18.0.2:9100", "driver": {"kind": "dryrun"}},
      {"name": "sw3", "role": "ctsw", "telemetry": "http://snmp:9116/snmp?target=198.18.0.3%3A161&module=if_mib#x", "driver": {"kind": "dryrun"}}
    ],
    "hosts": [
      {"name": "h1", "nics": ["nic0"], "telemetry": "http://h1:9100/metrics"},
      {"name": "h2", "nics": ["nic0"]}
    ],
    "links": [
      {"a": "h1:nic0", "b": "sw1:eth1", "speed_gbps": 400},
      {"a": "h2:nic0", "b": "sw1:eth2", "speed_gbps": 400},
      {"a": "sw1:eth3", "b": "sw2:eth1", "speed_gbps": 400},
      {"a": "sw1:eth4", "b": "sw3:eth1", "speed_gbps": 400}
    ]})");
  const Ran r = medic({"fabric", "targets", dir.file("t.json")});
  ASSERT_EQ(r.code, 0) << r.err;
  const json groups = json::parse(r.out);
  ASSERT_EQ(groups.size(), 4u) << r.out;  // h2 has no exporter
  std::map<std::string, json> by;
  for (const auto& g : groups) by[g["labels"]["device"].get<std::string>()] = g;
  EXPECT_FALSE(by.count("h2"));
  EXPECT_EQ(by["sw1"]["targets"], json::array({"sw1.example:9443"}));
  EXPECT_EQ(by["sw1"]["labels"]["__scheme__"], "https");
  EXPECT_EQ(by["sw1"]["labels"]["__metrics_path__"], "/gnmi/get");
  // No path: the root, which is what medicd fetches from that URL.
  EXPECT_EQ(by["sw2"]["targets"], json::array({"198.18.0.2:9100"}));
  EXPECT_EQ(by["sw2"]["labels"]["__metrics_path__"], "/");
  // A query string becomes Prometheus' __param_ labels: a '?' in __metrics_path__ would be
  // escaped into the path.
  EXPECT_EQ(by["sw3"]["targets"], json::array({"snmp:9116"}));
  EXPECT_EQ(by["sw3"]["labels"]["__metrics_path__"], "/snmp");
  EXPECT_EQ(by["sw3"]["labels"]["__param_target"], "198.18.0.3:161");
  EXPECT_EQ(by["sw3"]["labels"]["__param_module"], "if_mib");
  EXPECT_EQ(by["h1"]["labels"]["role"], "host");
  EXPECT_EQ(by["h1"]["labels"]["__metrics_path__"], "/metrics");
}

TEST(CliTargets, BadFileExitsOne) {
  testing::TempDir dir;
  const Ran missing = medic({"fabric", "targets", dir.file("none.json")});
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(missing.out, "");
  EXPECT_THAT(missing.err, HasSubstr(dir.file("none.json")));
  testing::write_file(dir.file("bad.json"), R"({"switches": [{"name": "sw1", "role": "spine"}]})");
  const Ran bad = medic({"fabric", "targets", dir.file("bad.json")});
  EXPECT_EQ(bad.code, 1);
  EXPECT_EQ(bad.out, "");
  EXPECT_THAT(bad.err, StartsWith(dir.file("bad.json") + ": $.switches[0]"));
}

}  // namespace
}  // namespace medic::cli
