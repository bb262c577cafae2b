#include "sim/scenario.h"

#include <gtest/gtest.h>
#include <random>
#include <gmock/gmock.h>
#include <nlohmann/json.hpp>
#include "sim/fabric_sim.h"
#include "sim/server.h"

#include <string>

#include "fabric/generator.h"
#include "tests/support/testing.h"

namespace medic::sim {
namespace {

// The message parse_scenario refuses `text` with ("" when it takes it).
std::string scenario_error(const std::string& text, const fabric::Topology& topo) {
  try {
    parse_scenario(text, "s.json", topo);
  } catch (const ScenarioError& e) {
    return std::string(e.what());
  }
  return std::string();
}

class ScenarioTest : public ::testing::Test {
 protected:
  // The message of the ScenarioError that parsing `text` throws ("" if none).
  std::string error_of(const std::string& text) {
    try {
      parse_scenario(text, "s.json", topo);
    } catch (const ScenarioError& e) {
      return e.what();
    }
    return "";
  }

  fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  fabric::LinkId l1 = *topo.find_link("rtsw0001:eth5");
  fabric::LinkId l2 = *topo.find_link("rtsw0002:eth5--ctsw001:eth2");
};

TEST_F(ScenarioTest, ValidScenarioGivesSortedEvents) {
  const Scenario s = parse_scenario(R"({
    "comment": "two faults",
    "faults": [
      {"kind": "flap", "link": "rtsw0001:eth5", "at_s": 10, "count": 3, "period_s": 2, "down_s": 0.5},
      {"kind": "down", "link": "rtsw0002:eth5--ctsw001:eth2", "at_s": 1, "duration_s": 4, "comment": "optic"}
    ]})",
                                    "s.json", topo);
  ASSERT_EQ(s.faults.size(), 2u);
  EXPECT_EQ(s.faults[0].kind, FaultKind::flap);
  EXPECT_EQ(s.faults[0].link, l1);
  EXPECT_EQ(s.faults[0].count, 3);
  EXPECT_DOUBLE_EQ(s.faults[0].period_s, 2);
  EXPECT_DOUBLE_EQ(s.faults[0].down_s, 0.5);
  EXPECT_EQ(s.faults[1].kind, FaultKind::down);
  EXPECT_EQ(s.faults[1].link, l2);
  EXPECT_DOUBLE_EQ(s.faults[1].duration_s, 4);

  const auto ev = s.events();
  ASSERT_EQ(ev.size(), 3u * 2 + 2);
  const double times[] = {1, 5, 10, 10.5, 12, 12.5, 14, 14.5};
  const bool ups[] = {false, true, false, true, false, true, false, true};
  for (size_t i = 0; i < ev.size(); ++i) {
    EXPECT_DOUBLE_EQ(ev[i].at_s, times[i]) << i;
    EXPECT_EQ(ev[i].up, ups[i]) << i;
    EXPECT_EQ(ev[i].link, i < 2 ? l2 : l1) << i;
  }
}

TEST_F(ScenarioTest, FlapDefaultsAndDownWithoutDuration) {
  const Scenario s = parse_scenario(R"({"faults": [
      {"kind": "down", "link": "rtsw0002:eth5", "at_s": 3},
      {"kind": "flap", "link": "rtsw0001:eth5", "at_s": 0, "count": 2}]})",
                                    "s.json", topo);
  ASSERT_EQ(s.faults.size(), 2u);
  EXPECT_DOUBLE_EQ(s.faults[1].period_s, 1.0);
  EXPECT_DOUBLE_EQ(s.faults[1].down_s, 0.2);
  EXPECT_DOUBLE_EQ(s.faults[0].duration_s, 0);
  const auto ev = s.events();
  ASSERT_EQ(ev.size(), 2u * 2 + 1);
  // A down without duration stays down: one event, at 3 s, down.
  int downs_of_l2 = 0;
  for (const auto& e : ev) {
    if (e.link == l2) {
      ++downs_of_l2;
      EXPECT_FALSE(e.up);
      EXPECT_DOUBLE_EQ(e.at_s, 3);
    }
  }
  EXPECT_EQ(downs_of_l2, 1);
  for (size_t i = 1; i < ev.size(); ++i) EXPECT_LE(ev[i - 1].at_s, ev[i].at_s);
  EXPECT_DOUBLE_EQ(ev[0].at_s, 0);
  EXPECT_DOUBLE_EQ(ev[1].at_s, 0.2);
}

TEST_F(ScenarioTest, ShortPeriodShortensDefaultDown) {
  const Scenario s = parse_scenario(
      R"({"faults": [{"kind": "flap", "link": "rtsw0001:eth5", "at_s": 0, "count": 1, "period_s": 0.1}]})", "s.json",
      topo);
  EXPECT_DOUBLE_EQ(s.faults[0].down_s, 0.05);
}

TEST_F(ScenarioTest, EmptyFaultListIsValid) {
  const Scenario s = parse_scenario(R"({"faults": []})", "s.json", topo);
  EXPECT_TRUE(s.faults.empty());
  EXPECT_TRUE(s.events().empty());
}

TEST_F(ScenarioTest, ErrorsNameTheFileAndJsonPath) {
  EXPECT_EQ(error_of(R"({"faults": [{"kind": "down", "link": "rtsw0001:eth5", "at_s": 0},
                                     {"kind": "down", "link": "nope:eth1", "at_s": 0}]})"),
            "s.json: $.faults[1].link: unknown link \"nope:eth1\"");
  EXPECT_EQ(error_of(R"({"faults": [{"kind": "melt", "link": "rtsw0001:eth5", "at_s": 0}]})"),
            "s.json: $.faults[0].kind: unknown fault kind \"melt\" (expected flap, down, optics_loss, weak_tx, "
            "optics_drift, corrupt, fec, pause, congestion, silent, garbage, reboot, probe_loss, probe_delay, "
            "reflector_down, reflector_busy, absurd, rpc_delay, rpc_fault)");
  EXPECT_EQ(error_of(R"({"faults": [{"kind": 3, "link": "rtsw0001:eth5", "at_s": 0}]})"),
            "s.json: $.faults[0].kind: expected a fault kind");
  EXPECT_EQ(error_of(R"({"faults": [{"link": "rtsw0001:eth5", "at_s": 0}]})"),
            "s.json: $.faults[0].kind: expected a fault kind");
  EXPECT_EQ(error_of(R"({"faults": [{"kind": "flap", "link": "rtsw0001:eth5", "at_s": 0, "count": 0}]})"),
            "s.json: $.faults[0].count: expected a whole number of flaps from 1 to 100000");
  EXPECT_EQ(error_of(R"({"faults": [{"kind": "flap", "link": "rtsw0001:eth5", "at_s": 0, "count": 2.5}]})"),
            "s.json: $.faults[0].count: expected a whole number of flaps from 1 to 100000");
  EXPECT_EQ(error_of(R"({"faults": [{"kind": "flap", "link": "rtsw0001:eth5", "at_s": 0, "count": "3"}]})"),
            "s.json: $.faults[0].count: expected a non-negative number, got \"3\"");
  EXPECT_EQ(error_of(R"({"faults": [{"kind": "flap", "link": "rtsw0001:eth5", "at_s": 0}]})"),
            "s.json: $.faults[0]: missing required key \"count\"");
  EXPECT_EQ(error_of(R"({"faults": [{"kind": "flap", "link": "rtsw0001:eth5", "at_s": 0, "count": 2,
                                     "period_s": 1, "down_s": 1}]})"),
            "s.json: $.faults[0].down_s: must be positive and shorter than period_s");
  EXPECT_EQ(error_of(R"({"faults": [{"kind": "flap", "link": "rtsw0001:eth5", "at_s": 0, "count": 2,
                                     "period_s": 1, "down_s": 2}]})"),
            "s.json: $.faults[0].down_s: must be positive and shorter than period_s");
  EXPECT_EQ(error_of(R"({"faults": [{"kind": "flap", "link": "rtsw0001:eth5", "at_s": 0, "count": 2,
                                     "period_s": 0}]})"),
            "s.json: $.faults[0].period_s: must be positive");
  EXPECT_EQ(error_of(R"({"faults": [{"kind": "down", "link": "rtsw0001:eth5", "at_s": -1}]})"),
            "s.json: $.faults[0].at_s: expected a non-negative number, got -1");
  EXPECT_EQ(error_of(R"({"faults": [{"kind": "down", "link": "rtsw0001:eth5"}]})"),
            "s.json: $.faults[0]: missing required key \"at_s\"");
  EXPECT_EQ(error_of(R"({"faults": [{"kind": "down", "link": 7, "at_s": 0}]})"),
            "s.json: $.faults[0].link: expected a link name or \"device:port\"");
  EXPECT_EQ(error_of(R"({"faults": [{"kind": "down", "link": "rtsw0001:eth5", "at_s": 0, "colour": "red"}]})"),
            "s.json: $.faults[0]: unknown key \"colour\" for a down fault");
  EXPECT_EQ(error_of(R"({"fault": []})"), "s.json: $: unknown key \"fault\"");
  EXPECT_EQ(error_of(R"({"comment": "no faults"})"), "s.json: $.faults: expected an array of faults");
  EXPECT_EQ(error_of(R"({"faults": {}})"), "s.json: $.faults: expected an array of faults");
  EXPECT_EQ(error_of(R"([1, 2])"), "s.json: $: expected an object with \"faults\"");
  EXPECT_EQ(error_of(R"({"faults": [42]})"), "s.json: $.faults[0]: expected an object");
}

TEST_F(ScenarioTest, InvalidJsonIsAScenarioError) {
  const std::string e = error_of(R"({"faults": [)");
  EXPECT_EQ(e.rfind("s.json: line 1, column 13: invalid JSON: syntax error while parsing value", 0), 0u) << e;
  EXPECT_EQ(error_of("").rfind("s.json: line 1, column 1: invalid JSON: ", 0), 0u);
}

TEST_F(ScenarioTest, LoadsFileAndReportsAMissingOne) {
  testing::TempDir dir;
  const std::string path = dir.file("sc.json");
  testing::write_file(path, R"({"faults": [{"kind": "down", "link": "rtsw0001:eth5", "at_s": 2}]})");
  const Scenario s = load_scenario_file(path, topo);
  ASSERT_EQ(s.faults.size(), 1u);
  EXPECT_EQ(s.faults[0].link, l1);

  testing::write_file(path, R"({"faults": [{"kind": "down", "link": "x", "at_s": 2}]})");
  try {
    load_scenario_file(path, topo);
    ADD_FAILURE() << "no error";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": $.faults[0].link: unknown link \"x\"");
  }
  try {
    load_scenario_file(dir.file("missing.json"), topo);
    ADD_FAILURE() << "no error";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(std::string(e.what()), dir.file("missing.json") + ": cannot open: No such file or directory");
  }
}

TEST_F(ScenarioTest, ShippedDemoScenarioFitsTheDemoFabric) {
  const Scenario s = load_scenario_file(testing::source_dir() + "/sim/scenarios/demo.json", topo);
  ASSERT_EQ(s.faults.size(), 3u);
  EXPECT_EQ(s.events().size(), 1u + 5 * 2 + 5 * 2);
}


TEST(ScenarioFaultKinds, AbsurdAndReflectorDownFaults) {
  const fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  const Scenario sc = parse_scenario(R"({"faults": [
      {"kind": "absurd", "end": "rtsw0001:eth7", "counter": "carrier_changes", "value": 1.8446744073709552e19, "at_s": 5, "duration_s": 0.5},
      {"kind": "absurd", "end": "rtsw0001:eth8", "counter": "rx_packets", "value": -5, "at_s": 5},
      {"kind": "reflector_down", "device": "ctsw003", "at_s": 1}]})",
                                     "s.json", topo);
  ASSERT_EQ(sc.faults.size(), 3u);
  EXPECT_EQ(sc.faults[0].kind, FaultKind::absurd);
  EXPECT_EQ(sc.faults[0].counter, "carrier_changes");
  EXPECT_EQ(sc.faults[0].value, 1.8446744073709552e19);
  EXPECT_EQ(sc.faults[1].value, -5);
  EXPECT_EQ(sc.faults[2].kind, FaultKind::reflector_down);
  auto error_of = [&](const std::string& text) { return scenario_error(text, topo); };
  EXPECT_THAT(error_of(R"({"faults": [{"kind": "absurd", "end": "rtsw0001:eth7", "counter": "oper_up", "value": 1, "at_s": 0}]})"),
              ::testing::StartsWith("s.json: $.faults[0].counter: expected one of carrier_changes, link_down_events"));
  EXPECT_EQ(error_of(R"({"faults": [{"kind": "absurd", "end": "rtsw0001:eth7", "counter": "rx_bytes", "value": "big", "at_s": 0}]})"),
            "s.json: $.faults[0].value: expected a number (any, that is the point)");
}

// A busy reflector (its switch's CPU): a share of the probes addressed to its device are
// answered late, every probe still answered, and other devices' answers are untouched.
TEST(ScenarioFaultKinds, ABusyReflectorAnswersAShareOfProbesLate) {
  const fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  const Scenario sc = parse_scenario(
      R"({"faults": [{"kind": "reflector_busy", "device": "ctsw003", "share": 0.3, "ms": 4, "at_s": 1, "duration_s": 5}]})",
      "s.json", topo);
  ASSERT_EQ(sc.faults.size(), 1u);
  EXPECT_EQ(sc.faults[0].kind, FaultKind::reflector_busy);
  EXPECT_EQ(sc.faults[0].value, 0.3);
  EXPECT_EQ(sc.faults[0].value2, 4);
  FabricSim sim(topo);
  sim.apply(sc.faults[0], SimEvent::Phase::start, 1);
  std::mt19937_64 rng(7);
  const fabric::PortId busy = *topo.find_port("ctsw003", "eth1");
  const fabric::PortId other = *topo.find_port("ctsw002", "eth1");
  auto late_share = [&](fabric::PortId to) {
    int late = 0;
    for (uint16_t i = 0; i < 10000; ++i) {
      const ProbeFate f = sim.probe(topo.peer(to), to, static_cast<uint16_t>(40000 + i % 1000), 862, rng);
      EXPECT_TRUE(f.delivered);
      if (f.delay >= from_seconds(4e-3)) ++late;
    }
    return late / 10000.0;
  };
  EXPECT_NEAR(late_share(busy), 0.3, 0.03);  // 0.3 +- 6.5 standard deviations
  EXPECT_EQ(late_share(other), 0);
  sim.apply(sc.faults[0], SimEvent::Phase::end, 6);
  EXPECT_EQ(late_share(busy), 0);
  auto error_of = [&](const std::string& text) { return scenario_error(text, topo); };
  EXPECT_EQ(error_of(R"({"faults": [{"kind": "reflector_busy", "device": "ctsw003", "share": 1.5, "ms": 4, "at_s": 0}]})"),
            "s.json: $.faults[0].share: a share of probes must be at most 1");
  EXPECT_THAT(error_of(R"({"faults": [{"kind": "reflector_busy", "device": "ctsw003", "share": 0.3, "at_s": 0}]})"),
              ::testing::StartsWith("s.json: $.faults[0]"));
  EXPECT_THAT(error_of(R"({"faults": [{"kind": "reflector_busy", "device": "ctsw003", "share": 0.3, "ms": -1, "at_s": 0}]})"),
              ::testing::StartsWith("s.json: $.faults[0].ms: "));
  EXPECT_THAT(error_of(R"({"faults": [{"kind": "reflector_busy", "end": "ctsw003:eth1", "share": 0.3, "ms": 1, "at_s": 0}]})"),
              ::testing::StartsWith("s.json: $.faults[0]"));
}

// A switch whose drain API is slow: the delay holds while the fault lasts, for that switch only.
TEST(ScenarioFaultKinds, RpcDelayIsASwitchsSlowDrainApi) {
  const fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  const Scenario sc = parse_scenario(
      R"({"faults": [{"kind": "rpc_delay", "device": "rtsw0001", "seconds": 8, "at_s": 2, "duration_s": 10}]})", "s.json",
      topo);
  ASSERT_EQ(sc.faults.size(), 1u);
  EXPECT_EQ(sc.faults[0].kind, FaultKind::rpc_delay);
  EXPECT_EQ(sc.faults[0].value, 8);
  FabricSim sim(topo);
  const fabric::DeviceId slow = *topo.find_device("rtsw0001"), other = *topo.find_device("rtsw0002");
  EXPECT_EQ(sim.rpc_delay_s(slow), 0);
  sim.apply(sc.faults[0], SimEvent::Phase::start, 2);
  EXPECT_EQ(sim.rpc_delay_s(slow), 8);
  EXPECT_EQ(sim.rpc_delay_s(other), 0);
  HttpRequest rpc;
  rpc.method = "POST";
  rpc.path = "/s/rtsw0001/rpc";
  EXPECT_EQ(answer_delay_s(sim, rpc), 8);
  rpc.path = "/s/rtsw0001/metrics";  // its counters are served as usual
  EXPECT_EQ(answer_delay_s(sim, rpc), 0);
  rpc.path = "/s/rtsw0002/rpc";
  EXPECT_EQ(answer_delay_s(sim, rpc), 0);
  sim.apply(sc.faults[0], SimEvent::Phase::end, 12);
  EXPECT_EQ(sim.rpc_delay_s(slow), 0);
  auto error_of = [&](const std::string& text) { return scenario_error(text, topo); };
  EXPECT_EQ(error_of(R"({"faults": [{"kind": "rpc_delay", "device": "rtsw0001", "seconds": 601, "at_s": 0}]})"),
            "s.json: $.faults[0].seconds: must be at most 600");
  EXPECT_THAT(error_of(R"({"faults": [{"kind": "rpc_delay", "device": "rtsw0001", "seconds": -1, "at_s": 0}]})"),
              ::testing::StartsWith("s.json: $.faults[0].seconds: "));
}

TEST(FabricSimFaults, AnAbsurdValueShowsWhileItLastsAndTheRealCounterGoesOn) {
  const fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  FabricSim sim(topo);
  const fabric::PortId p = *topo.find_port("rtsw0001", "eth7");
  Fault f;
  f.kind = FaultKind::absurd;
  f.port = p;
  f.counter = "carrier_changes";
  f.value = 1e308;
  const double before = sim.counters(p, 1).carrier_changes;
  sim.apply(f, SimEvent::Phase::start, 2);
  EXPECT_EQ(sim.counters(p, 2.5).carrier_changes, 1e308);
  sim.apply(f, SimEvent::Phase::end, 3);
  EXPECT_EQ(sim.counters(p, 3.5).carrier_changes, before);
  // A dead reflector answers no probe addressed to its device.
  Fault r;
  r.kind = FaultKind::reflector_down;
  r.device = *topo.find_device("ctsw003");
  sim.apply(r, SimEvent::Phase::start, 4);
  EXPECT_TRUE(sim.reflector_down(r.device));
  std::mt19937_64 rng(1);
  const fabric::PortId to = *topo.find_port("ctsw003", "eth1");
  EXPECT_FALSE(sim.probe(topo.peer(to), to, 40000, 862, rng).delivered);
  sim.apply(r, SimEvent::Phase::end, 5);
  EXPECT_TRUE(sim.probe(topo.peer(to), to, 40000, 862, rng).delivered);
}


// A switch whose drain API misbehaves: each answer as the scenario says, for that switch
// only and while the fault lasts; a liar answers what it was asked and changes nothing.
TEST(ScenarioFaultKinds, RpcFaultAnswersAsTheScenarioSaysAndALiarChangesNothing) {
  const fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  const Scenario sc = parse_scenario(R"({"faults": [
      {"kind": "rpc_fault", "device": "rtsw0001", "answer": "error", "at_s": 0, "duration_s": 10},
      {"kind": "rpc_fault", "device": "rtsw0002", "answer": "garbage", "at_s": 0},
      {"kind": "rpc_fault", "device": "rtsw0003", "answer": "close", "at_s": 0},
      {"kind": "rpc_fault", "device": "rtsw0004", "answer": "lie", "at_s": 0}]})",
                                     "s.json", topo);
  ASSERT_EQ(sc.faults.size(), 4u);
  EXPECT_EQ(sc.faults[3].answer, RpcAnswer::lie);
  FabricSim sim(topo);
  for (const Fault& f : sc.faults) sim.apply(f, SimEvent::Phase::start, 0);
  auto call = [&](const std::string& device, const std::string& method) {
    HttpRequest rpc;
    rpc.method = "POST";
    rpc.path = "/s/" + device + "/rpc";
    rpc.body = R"({"jsonrpc": "2.0", "id": 7, "method": ")" + method + R"(", "params": {"interface": "eth5"}})";
    return handle(sim, 1, rpc, ServerOptions{});
  };
  EXPECT_EQ(call("rtsw0001", "interface.drain").status, 500u);
  const HttpResponse garbage = call("rtsw0002", "interface.drain");
  EXPECT_EQ(garbage.status, 200u);
  EXPECT_TRUE(nlohmann::json::parse(garbage.body, nullptr, false).is_discarded()) << garbage.body;
  EXPECT_TRUE(call("rtsw0003", "interface.drain").hang_up);
  EXPECT_FALSE(call("rtsw0005", "interface.drain").hang_up);  // a switch without the fault

  // The liar: says drained, keeps forwarding, and its read-back agrees with what it said.
  const fabric::PortId liar = *topo.find_port("rtsw0004", "eth5");
  const HttpResponse said = call("rtsw0004", "interface.drain");
  ASSERT_EQ(said.status, 200u);
  EXPECT_EQ(nlohmann::json::parse(said.body)["result"]["drained"], true);
  EXPECT_EQ(nlohmann::json::parse(call("rtsw0004", "interface.get_state").body)["result"]["drained"], true);
  EXPECT_FALSE(sim.counters(liar, 2).drained);
  EXPECT_TRUE(sim.carries_traffic(topo.port(liar).link));
  // The fault over, the truth shows again; the error switch answers again too.
  sim.apply(sc.faults[3], SimEvent::Phase::end, 3);
  EXPECT_EQ(nlohmann::json::parse(call("rtsw0004", "interface.get_state").body)["result"]["drained"], false);
  sim.apply(sc.faults[0], SimEvent::Phase::end, 10);
  EXPECT_EQ(call("rtsw0001", "interface.drain").status, 200u);
  EXPECT_TRUE(sim.counters(*topo.find_port("rtsw0001", "eth5"), 11).drained);

  auto error_of = [&](const std::string& text) { return scenario_error(text, topo); };
  EXPECT_EQ(error_of(R"({"faults": [{"kind": "rpc_fault", "device": "rtsw0001", "answer": "sulk", "at_s": 0}]})"),
            "s.json: $.faults[0].answer: expected \"error\", \"garbage\", \"close\" or \"lie\", got \"sulk\"");
  EXPECT_EQ(error_of(R"({"faults": [{"kind": "rpc_fault", "device": "rtsw0001", "at_s": 0}]})"),
            "s.json: $.faults[0].answer: expected \"error\", \"garbage\", \"close\" or \"lie\", got nothing");
}

}  // namespace
}  // namespace medic::sim
