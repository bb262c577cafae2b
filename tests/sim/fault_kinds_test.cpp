// Every fault kind of a fabsim scenario: what it parses into, what it refuses (with the
// file and the exact JSON path), and the events it plays.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "fabric/generator.h"
#include "sim/scenario.h"

namespace medic::sim {
namespace {

using Phase = SimEvent::Phase;

class FaultKindsTest : public ::testing::Test {
 protected:
  std::string error_of(const std::string& text) {
    try {
      parse_scenario(text, "f.json", topo);
    } catch (const ScenarioError& e) {
      return e.what();
    }
    return "";
  }
  // One fault, given as the inside of its JSON object.
  Fault one(const std::string& fault_body) {
    const Scenario s = parse_scenario(R"({"faults": [{)" + fault_body + "}]}", "f.json", topo);
    EXPECT_EQ(s.faults.size(), 1u);
    return s.faults.empty() ? Fault{} : s.faults.front();
  }
  std::string error_of_one(const std::string& fault_body) { return error_of(R"({"faults": [{)" + fault_body + "}]}"); }

  fabric::PortId port(const std::string& dev, const std::string& name) { return *topo.find_port(dev, name); }
  fabric::DeviceId device(const std::string& name) { return *topo.find_device(name); }

  fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  fabric::LinkId uplink = *topo.find_link("rtsw0001:eth5");
};

// ---------------------------------------------------------------------------------------
// What each kind parses into

TEST_F(FaultKindsTest, KindNamesRoundTrip) {
  const std::vector<std::pair<FaultKind, std::string>> kinds = {
      {FaultKind::flap, "flap"},       {FaultKind::down, "down"},           {FaultKind::optics_loss, "optics_loss"},
      {FaultKind::weak_tx, "weak_tx"}, {FaultKind::optics_drift, "optics_drift"}, {FaultKind::corrupt, "corrupt"},
      {FaultKind::fec, "fec"},         {FaultKind::pause, "pause"},         {FaultKind::congestion, "congestion"},
      {FaultKind::silent, "silent"},   {FaultKind::garbage, "garbage"},     {FaultKind::reboot, "reboot"},
  };
  for (const auto& [k, name] : kinds) EXPECT_EQ(to_string(k), name);
}

TEST_F(FaultKindsTest, EndFaultsNameThePortAndItsLink) {
  const fabric::PortId a = port("rtsw0001", "eth5");
  struct Case {
    std::string body;
    FaultKind kind;
    double value, value2;
  };
  const std::vector<Case> cases = {
      {R"("kind": "optics_loss", "end": "rtsw0001:eth5", "at_s": 1, "extra_loss_db": 6)", FaultKind::optics_loss, 6, 0},
      {R"("kind": "weak_tx", "end": "rtsw0001:eth5", "at_s": 1, "tx_drop_db": 4.5)", FaultKind::weak_tx, 4.5, 0},
      {R"("kind": "optics_drift", "end": "rtsw0001:eth5", "at_s": 1, "db_per_min": 0.5)", FaultKind::optics_drift, 0.5,
       0},
      {R"("kind": "corrupt", "end": "rtsw0001:eth5", "at_s": 1, "rate": 1e-4)", FaultKind::corrupt, 1e-4, 0},
      {R"("kind": "fec", "end": "rtsw0001:eth5", "at_s": 1, "ber": 2e-5, "uncorrectable_per_s": 3)", FaultKind::fec,
       2e-5, 3},
      {R"("kind": "pause", "end": "rtsw0001:eth5", "at_s": 1, "frames_per_s": 5000)", FaultKind::pause, 5000, 0},
      {R"("kind": "congestion", "end": "rtsw0001:eth5", "at_s": 1, "utilization": 0.95, "discard_rate": 0.001)",
       FaultKind::congestion, 0.95, 0.001},
  };
  for (const auto& c : cases) {
    const Fault f = one(c.body + R"(, "duration_s": 30, "comment": "why")");
    EXPECT_EQ(f.kind, c.kind) << c.body;
    EXPECT_EQ(f.port, a) << c.body;
    EXPECT_EQ(f.link, uplink) << c.body;
    EXPECT_EQ(f.device, fabric::kNone) << c.body;
    EXPECT_DOUBLE_EQ(f.at_s, 1) << c.body;
    EXPECT_DOUBLE_EQ(f.duration_s, 30) << c.body;
    EXPECT_DOUBLE_EQ(f.value, c.value) << c.body;
    EXPECT_DOUBLE_EQ(f.value2, c.value2) << c.body;
  }
}

TEST_F(FaultKindsTest, AnEndMayBeAHostNic) {
  const Fault f = one(R"("kind": "pause", "end": "host0001:nic0", "at_s": 0, "frames_per_s": 5000)");
  EXPECT_EQ(f.port, port("host0001", "nic0"));
  EXPECT_EQ(f.link, topo.port(port("host0001", "nic0")).link);
  EXPECT_DOUBLE_EQ(f.value, 5000);
}

TEST_F(FaultKindsTest, OptionalValuesDefault) {
  const Fault fec = one(R"("kind": "fec", "end": "rtsw0001:eth5", "at_s": 0, "ber": 1e-5)");
  EXPECT_DOUBLE_EQ(fec.value, 1e-5);
  EXPECT_DOUBLE_EQ(fec.value2, 0);
  EXPECT_DOUBLE_EQ(fec.duration_s, 0);
  // The limits themselves are allowed.
  EXPECT_DOUBLE_EQ(one(R"("kind": "corrupt", "end": "rtsw0001:eth5", "at_s": 0, "rate": 1)").value, 1);
  EXPECT_DOUBLE_EQ(one(R"("kind": "fec", "end": "rtsw0001:eth5", "at_s": 0, "ber": 0.5)").value, 0.5);
  const Fault full = one(R"("kind": "congestion", "end": "rtsw0001:eth5", "at_s": 0, "utilization": 1, "discard_rate": 0)");
  EXPECT_DOUBLE_EQ(full.value, 1);
  EXPECT_DOUBLE_EQ(full.value2, 0);
}

TEST_F(FaultKindsTest, DeviceFaultsNameTheDevice) {
  for (const char* kind : {"silent", "garbage", "reboot"}) {
    const Fault f = one(std::string(R"("kind": ")") + kind + R"(", "device": "ctsw002", "at_s": 2.5)");
    EXPECT_EQ(to_string(f.kind), kind);
    EXPECT_EQ(f.device, device("ctsw002")) << kind;
    EXPECT_EQ(f.port, fabric::kNone) << kind;
    EXPECT_EQ(f.link, fabric::kNone) << kind;
    EXPECT_DOUBLE_EQ(f.at_s, 2.5) << kind;
  }
  // Hosts too: a NIC exporter can go silent or answer garbage.
  EXPECT_EQ(one(R"("kind": "silent", "device": "host0002", "at_s": 0)").device, device("host0002"));
}

TEST_F(FaultKindsTest, LinkFaultsTakeANameOrEitherEnd) {
  EXPECT_EQ(one(R"("kind": "down", "link": "ctsw001:eth1", "at_s": 0)").link, uplink);
  EXPECT_EQ(one(R"("kind": "down", "link": "rtsw0001:eth5--ctsw001:eth1", "at_s": 0)").link, uplink);
  const Fault f = one(R"("kind": "flap", "link": "rtsw0001:eth5", "at_s": 0, "count": 3)");
  EXPECT_EQ(f.port, fabric::kNone);
  EXPECT_EQ(f.device, fabric::kNone);
}

// ---------------------------------------------------------------------------------------
// Errors: each names the file and the JSON path

TEST_F(FaultKindsTest, UnknownKeyForTheKind) {
  // A key that belongs to another kind is still unknown for this one.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("kind": "flap", "link": "rtsw0001:eth5", "at_s": 0, "count": 2, "rate": 1)", "rate\" for a flap"},
      {R"("kind": "down", "link": "rtsw0001:eth5", "at_s": 0, "count": 2)", "count\" for a down"},
      {R"("kind": "optics_loss", "end": "rtsw0001:eth5", "at_s": 0, "extra_loss_db": 3, "tx_drop_db": 1)",
       "tx_drop_db\" for a optics_loss"},
      {R"("kind": "weak_tx", "end": "rtsw0001:eth5", "at_s": 0, "tx_drop_db": 3, "extra_loss_db": 1)",
       "extra_loss_db\" for a weak_tx"},
      {R"("kind": "optics_drift", "end": "rtsw0001:eth5", "at_s": 0, "db_per_min": 1, "period_s": 1)",
       "period_s\" for a optics_drift"},
      {R"("kind": "corrupt", "end": "rtsw0001:eth5", "at_s": 0, "rate": 0.1, "ber": 1e-5)", "ber\" for a corrupt"},
      {R"("kind": "fec", "end": "rtsw0001:eth5", "at_s": 0, "ber": 1e-5, "rate": 0.1)", "rate\" for a fec"},
      {R"("kind": "pause", "end": "rtsw0001:eth5", "at_s": 0, "frames_per_s": 10, "utilization": 1)",
       "utilization\" for a pause"},
      {R"("kind": "congestion", "end": "rtsw0001:eth5", "at_s": 0, "utilization": 1, "discard_rate": 0, "frames_per_s": 1)",
       "frames_per_s\" for a congestion"},
      {R"("kind": "silent", "device": "rtsw0001", "at_s": 0, "count": 1)", "count\" for a silent"},
      {R"("kind": "garbage", "device": "rtsw0001", "at_s": 0, "rate": 1)", "rate\" for a garbage"},
      {R"("kind": "reboot", "device": "rtsw0001", "at_s": 0, "value": 1)", "value\" for a reboot"},
  };
  for (const auto& [body, what] : cases) {
    EXPECT_EQ(error_of_one(body), "f.json: $.faults[0]: unknown key \"" + what + " fault") << body;
  }
}

TEST_F(FaultKindsTest, TheTargetKeyMustMatchTheKind) {
  // An end fault given a link, a link fault given an end, a device fault given a link.
  EXPECT_EQ(error_of_one(R"("kind": "corrupt", "link": "rtsw0001:eth5", "at_s": 0, "rate": 0.1)"),
            "f.json: $.faults[0]: unknown key \"link\" for a corrupt fault");
  EXPECT_EQ(error_of_one(R"("kind": "down", "end": "rtsw0001:eth5", "at_s": 0)"),
            "f.json: $.faults[0]: unknown key \"end\" for a down fault");
  EXPECT_EQ(error_of_one(R"("kind": "silent", "link": "rtsw0001:eth5", "at_s": 0)"),
            "f.json: $.faults[0]: unknown key \"link\" for a silent fault");
  EXPECT_EQ(error_of_one(R"("kind": "reboot", "end": "rtsw0001:eth5", "at_s": 0)"),
            "f.json: $.faults[0]: unknown key \"end\" for a reboot fault");
}

TEST_F(FaultKindsTest, MissingTarget) {
  EXPECT_EQ(error_of_one(R"("kind": "down", "at_s": 0)"),
            "f.json: $.faults[0].link: expected a link name or \"device:port\"");
  EXPECT_EQ(error_of_one(R"("kind": "flap", "link": null, "at_s": 0, "count": 1)"),
            "f.json: $.faults[0].link: expected a link name or \"device:port\"");
  for (const char* kind : {"optics_loss", "weak_tx", "optics_drift", "corrupt", "fec", "pause", "congestion"}) {
    EXPECT_EQ(error_of_one(std::string(R"("kind": ")") + kind + R"(", "at_s": 0)"),
              "f.json: $.faults[0].end: expected the affected end, written \"device:port\"")
        << kind;
    EXPECT_EQ(error_of_one(std::string(R"("kind": ")") + kind + R"(", "end": 5, "at_s": 0)"),
              "f.json: $.faults[0].end: expected the affected end, written \"device:port\"")
        << kind;
  }
  for (const char* kind : {"silent", "garbage", "reboot"}) {
    EXPECT_EQ(error_of_one(std::string(R"("kind": ")") + kind + R"(", "at_s": 0)"),
              "f.json: $.faults[0].device: expected a device name")
        << kind;
    EXPECT_EQ(error_of_one(std::string(R"("kind": ")") + kind + R"(", "device": ["rtsw0001"], "at_s": 0)"),
              "f.json: $.faults[0].device: expected a device name")
        << kind;
  }
}

TEST_F(FaultKindsTest, UnknownPortOrDevice) {
  // Every end kind, each with its own valid values: no such port, no such device, no port
  // at all, a NIC the host does not have, and empty halves.
  const std::vector<std::pair<std::string, std::string>> kinds = {
      {"optics_loss", R"("extra_loss_db": 1)"}, {"weak_tx", R"("tx_drop_db": 1)"},
      {"optics_drift", R"("db_per_min": 1)"},  {"corrupt", R"("rate": 0.1)"},
      {"fec", R"("ber": 1e-5)"},               {"pause", R"("frames_per_s": 10)"},
      {"congestion", R"("utilization": 1, "discard_rate": 0)"}};
  for (const auto& [kind, values] : kinds) {
    for (const char* ref : {"rtsw0001:eth99", "rtsw0099:eth5", "rtsw0001", "host0001:nic9", ":eth5", "rtsw0001:"}) {
      EXPECT_EQ(error_of_one(R"("kind": ")" + kind + R"(", "end": ")" + ref + R"(", "at_s": 0, )" + values),
                std::string("f.json: $.faults[0].end: unknown port \"") + ref + "\"")
          << kind << " " << ref;
    }
  }
  // Exact texts, with every other key valid for the kind.
  EXPECT_EQ(error_of_one(R"("kind": "optics_loss", "end": "rtsw0001:eth99", "at_s": 0, "extra_loss_db": 1)"),
            "f.json: $.faults[0].end: unknown port \"rtsw0001:eth99\"");
  EXPECT_EQ(error_of_one(R"("kind": "corrupt", "end": "rtsw0001", "at_s": 0, "rate": 0.1)"),
            "f.json: $.faults[0].end: unknown port \"rtsw0001\"");
  EXPECT_EQ(error_of_one(R"("kind": "pause", "end": "host0001:nic9", "at_s": 0, "frames_per_s": 10)"),
            "f.json: $.faults[0].end: unknown port \"host0001:nic9\"");
  EXPECT_EQ(error_of_one(R"("kind": "weak_tx", "end": "nobody:eth1", "at_s": 0, "tx_drop_db": 1)"),
            "f.json: $.faults[0].end: unknown port \"nobody:eth1\"");
  for (const char* kind : {"silent", "garbage", "reboot"}) {
    EXPECT_EQ(error_of_one(std::string(R"("kind": ")") + kind + R"(", "device": "ctsw099", "at_s": 0)"),
              "f.json: $.faults[0].device: unknown device \"ctsw099\"")
        << kind;
    // A port is not a device.
    EXPECT_EQ(error_of_one(std::string(R"("kind": ")") + kind + R"(", "device": "rtsw0001:eth5", "at_s": 0)"),
              "f.json: $.faults[0].device: unknown device \"rtsw0001:eth5\"")
        << kind;
  }
  EXPECT_EQ(error_of_one(R"("kind": "flap", "link": "rtsw0001:eth99", "at_s": 0, "count": 1)"),
            "f.json: $.faults[0].link: unknown link \"rtsw0001:eth99\"");
}

TEST_F(FaultKindsTest, MissingRequiredValue) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("kind": "optics_loss", "end": "rtsw0001:eth5", "at_s": 0)", "extra_loss_db"},
      {R"("kind": "weak_tx", "end": "rtsw0001:eth5", "at_s": 0)", "tx_drop_db"},
      {R"("kind": "optics_drift", "end": "rtsw0001:eth5", "at_s": 0)", "db_per_min"},
      {R"("kind": "corrupt", "end": "rtsw0001:eth5", "at_s": 0)", "rate"},
      {R"("kind": "fec", "end": "rtsw0001:eth5", "at_s": 0, "uncorrectable_per_s": 1)", "ber"},
      {R"("kind": "pause", "end": "rtsw0001:eth5", "at_s": 0)", "frames_per_s"},
      {R"("kind": "congestion", "end": "rtsw0001:eth5", "at_s": 0, "discard_rate": 0.1)", "utilization"},
      {R"("kind": "congestion", "end": "rtsw0001:eth5", "at_s": 0, "utilization": 0.9)", "discard_rate"},
      {R"("kind": "flap", "link": "rtsw0001:eth5", "at_s": 0)", "count"},
      {R"("kind": "silent", "device": "rtsw0001")", "at_s"},
      {R"("kind": "corrupt", "end": "rtsw0001:eth5", "rate": 0.1)", "at_s"},
  };
  for (const auto& [body, key] : cases) {
    EXPECT_EQ(error_of_one(body), "f.json: $.faults[0]: missing required key \"" + key + "\"") << body;
  }
}

TEST_F(FaultKindsTest, ValuesOutOfRange) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("kind": "corrupt", "end": "rtsw0001:eth5", "at_s": 0, "rate": 1.5)",
       "$.faults[0].rate: a share of frames must be at most 1"},
      {R"("kind": "fec", "end": "rtsw0001:eth5", "at_s": 0, "ber": 0.6)",
       "$.faults[0].ber: a bit error rate must be at most 0.5"},
      {R"("kind": "congestion", "end": "rtsw0001:eth5", "at_s": 0, "utilization": 1.01, "discard_rate": 0)",
       "$.faults[0].utilization: must be at most 1"},
      {R"("kind": "congestion", "end": "rtsw0001:eth5", "at_s": 0, "utilization": 0.5, "discard_rate": 2)",
       "$.faults[0].discard_rate: must be at most 1"},
      // Negative or non-numeric values of every kind's keys.
      {R"("kind": "optics_loss", "end": "rtsw0001:eth5", "at_s": 0, "extra_loss_db": -3)",
       "$.faults[0].extra_loss_db: expected a non-negative number, got -3"},
      {R"("kind": "weak_tx", "end": "rtsw0001:eth5", "at_s": 0, "tx_drop_db": "6 dB")",
       "$.faults[0].tx_drop_db: expected a non-negative number, got \"6 dB\""},
      {R"("kind": "optics_drift", "end": "rtsw0001:eth5", "at_s": 0, "db_per_min": -0.1)",
       "$.faults[0].db_per_min: expected a non-negative number, got -0.1"},
      {R"("kind": "corrupt", "end": "rtsw0001:eth5", "at_s": 0, "rate": null)",
       "$.faults[0].rate: expected a non-negative number, got null"},
      {R"("kind": "fec", "end": "rtsw0001:eth5", "at_s": 0, "ber": 1e-5, "uncorrectable_per_s": -1)",
       "$.faults[0].uncorrectable_per_s: expected a non-negative number, got -1"},
      {R"("kind": "pause", "end": "rtsw0001:eth5", "at_s": 0, "frames_per_s": true)",
       "$.faults[0].frames_per_s: expected a non-negative number, got true"},
      {R"("kind": "congestion", "end": "rtsw0001:eth5", "at_s": 0, "utilization": -0.5, "discard_rate": 0)",
       "$.faults[0].utilization: expected a non-negative number, got -0.5"},
      {R"("kind": "silent", "device": "rtsw0001", "at_s": 0, "duration_s": -1)",
       "$.faults[0].duration_s: expected a non-negative number, got -1"},
      {R"("kind": "garbage", "device": "rtsw0001", "at_s": "soon")",
       "$.faults[0].at_s: expected a non-negative number, got \"soon\""},
      {R"("kind": "reboot", "device": "rtsw0001", "at_s": -2)", "$.faults[0].at_s: expected a non-negative number, got -2"},
      {R"("kind": "flap", "link": "rtsw0001:eth5", "at_s": 0, "count": 100001)",
       "$.faults[0].count: expected a whole number of flaps from 1 to 100000"},
  };
  for (const auto& [body, what] : cases) EXPECT_EQ(error_of_one(body), "f.json: " + what) << body;
}

TEST_F(FaultKindsTest, ErrorsNameTheFaultsIndex) {
  EXPECT_EQ(error_of(R"({"faults": [
      {"kind": "corrupt", "end": "rtsw0001:eth5", "at_s": 0, "rate": 0.001},
      {"kind": "silent", "device": "rtsw0002", "at_s": 0},
      {"kind": "weak_tx", "end": "rtsw0003:eth5", "at_s": 0, "tx_drop_db": 6},
      {"kind": "fec", "end": "rtsw0004:eth5", "at_s": 0, "ber": 0.9}]})"),
            "f.json: $.faults[3].ber: a bit error rate must be at most 0.5");
}

// ---------------------------------------------------------------------------------------
// events(): phases and ordering

TEST_F(FaultKindsTest, PortAndDeviceFaultsStartAndEnd) {
  const Scenario s = parse_scenario(R"({"faults": [
      {"kind": "corrupt", "end": "rtsw0001:eth5", "at_s": 2, "duration_s": 10, "rate": 0.001},
      {"kind": "silent", "device": "rtsw0002", "at_s": 1},
      {"kind": "garbage", "device": "ctsw001", "at_s": 3, "duration_s": 1},
      {"kind": "reboot", "device": "ctsw002", "at_s": 4},
      {"kind": "pause", "end": "host0001:nic0", "at_s": 0, "frames_per_s": 5000}]})",
                                    "f.json", topo);
  const auto ev = s.events();
  // corrupt start+end, silent start (no duration: until fabsim stops), garbage start+end,
  // reboot start only (a reboot is a moment), pause start.
  struct Want {
    double at;
    size_t fault;
    Phase phase;
  };
  const std::vector<Want> want = {{0, 4, Phase::start}, {1, 1, Phase::start}, {2, 0, Phase::start},
                                  {3, 2, Phase::start}, {4, 2, Phase::end},   {4, 3, Phase::start},
                                  {12, 0, Phase::end}};
  ASSERT_EQ(ev.size(), want.size());
  for (size_t i = 0; i < ev.size(); ++i) {
    EXPECT_DOUBLE_EQ(ev[i].at_s, want[i].at) << i;
    EXPECT_EQ(ev[i].fault, want[i].fault) << i;
    EXPECT_EQ(ev[i].phase, want[i].phase) << i;
    EXPECT_EQ(ev[i].link, fabric::kNone) << "only link_down/link_up events name a link: " << i;
  }
}

TEST_F(FaultKindsTest, EqualTimesKeepTheFileOrder) {
  // Five events at t=5 from four faults: they come in the order of the faults in the file,
  // and within a fault in the order it makes them.
  const Scenario s = parse_scenario(R"({"faults": [
      {"kind": "weak_tx", "end": "rtsw0001:eth6", "at_s": 0, "duration_s": 5, "tx_drop_db": 3},
      {"kind": "down", "link": "rtsw0002:eth5", "at_s": 5},
      {"kind": "flap", "link": "rtsw0001:eth5", "at_s": 4.5, "count": 2, "period_s": 0.5, "down_s": 0.25},
      {"kind": "reboot", "device": "rtsw0003", "at_s": 5},
      {"kind": "optics_drift", "end": "rtsw0004:eth5", "at_s": 5, "db_per_min": 1}]})",
                                    "f.json", topo);
  const auto ev = s.events();
  ASSERT_EQ(ev.size(), 1u + 1 + 1 + 4 + 1 + 1);
  for (size_t i = 1; i < ev.size(); ++i) EXPECT_LE(ev[i - 1].at_s, ev[i].at_s) << i;
  std::vector<std::pair<size_t, Phase>> at5;
  for (const auto& e : ev) {
    if (e.at_s == 5.0) at5.push_back({e.fault, e.phase});
  }
  const std::vector<std::pair<size_t, Phase>> want = {
      {0, Phase::end}, {1, Phase::link_down}, {2, Phase::link_down}, {3, Phase::start}, {4, Phase::start}};
  EXPECT_EQ(at5, want);
  // The flap: down 4.5, up 4.75, down 5, up 5.25, each naming its link and direction.
  std::vector<std::tuple<double, bool, fabric::LinkId>> flap;
  for (const auto& e : ev) {
    if (e.fault == 2) flap.emplace_back(e.at_s, e.up, e.link);
  }
  ASSERT_EQ(flap.size(), 4u);
  const double times[] = {4.5, 4.75, 5.0, 5.25};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(std::get<0>(flap[i]), times[i], 1e-9) << i;
    EXPECT_EQ(std::get<1>(flap[i]), i % 2 == 1) << i;
    EXPECT_EQ(std::get<2>(flap[i]), uplink) << i;
  }
}

TEST_F(FaultKindsTest, DownWithDurationComesBackUp) {
  const Scenario s =
      parse_scenario(R"({"faults": [{"kind": "down", "link": "rtsw0001:eth5", "at_s": 3, "duration_s": 2}]})", "f.json", topo);
  const auto ev = s.events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].phase, Phase::link_down);
  EXPECT_FALSE(ev[0].up);
  EXPECT_DOUBLE_EQ(ev[0].at_s, 3);
  EXPECT_EQ(ev[1].phase, Phase::link_up);
  EXPECT_TRUE(ev[1].up);
  EXPECT_DOUBLE_EQ(ev[1].at_s, 5);
  EXPECT_EQ(ev[1].link, uplink);
}

}  // namespace
}  // namespace medic::sim

namespace medic::sim {
namespace {

TEST(FaultKindsDuration, MomentsAndFlapsTakeNoDuration) {
  const fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  for (const char* body : {R"({"faults": [{"kind": "reboot", "device": "ctsw002", "at_s": 4, "duration_s": 100}]})",
                           R"({"faults": [{"kind": "flap", "link": "rtsw0001:eth5", "at_s": 1, "count": 2, "duration_s": 9}]})"}) {
    try {
      parse_scenario(body, "f.json", topo);
      ADD_FAILURE() << "accepted " << body;
    } catch (const ScenarioError& e) {
      EXPECT_NE(std::string(e.what()).find("$.faults[0]: unknown key \"duration_s\""), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace medic::sim
