#include "telemetry/openconfig.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/testing.h"

namespace medic::telemetry {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

struct LeafRec {
  std::string port, path, value;
  bool operator==(const LeafRec& o) const {
    return std::tie(port, path, value) == std::tie(o.port, o.path, o.value);
  }
};

void PrintTo(const LeafRec& r, std::ostream* os) { *os << "(" << r.port << ", " << r.path << ", " << r.value << ")"; }

class Recorder final : public OcSink {
 public:
  void on_leaf(std::string_view port, std::string_view path, std::string_view value, OcKind) override {
    leaves.push_back({std::string(port), std::string(path), std::string(value)});
  }
  // Leaves whose path is `path`.
  std::vector<LeafRec> at(std::string_view path) const {
    std::vector<LeafRec> r;
    for (const auto& l : leaves) {
      if (l.path == path) r.push_back(l);
    }
    return r;
  }
  std::vector<std::string> ports() const {
    std::vector<std::string> r;
    for (const auto& l : leaves) {
      if (std::find(r.begin(), r.end(), l.port) == r.end()) r.push_back(l.port);
    }
    return r;
  }
  std::vector<LeafRec> leaves;
};

LeafRec rec(std::string port, std::string path, std::string value) {
  return {std::move(port), std::move(path), std::move(value)};
}

// Parses a document that must be valid.
Recorder parse_ok(std::string_view json, OcStats* stats = nullptr) {
  Recorder r;
  const Status s = parse_openconfig(json, r, stats);
  EXPECT_TRUE(s.ok()) << s.error();
  return r;
}

constexpr const char* kIn = "interfaces/interface/";
constexpr const char* kComp = "components/component/";
std::string in(const std::string& rel) { return kIn + rel; }
std::string comp(const std::string& rel) { return kComp + rel; }

// ---------------------------------------------------------------------------------------
// Interfaces

TEST(OpenConfig, InterfaceLeavesCarryTheInterfaceAndAKeylessPrefixlessPath) {
  OcStats st;
  const Recorder r = parse_ok(R"({"openconfig-interfaces:interfaces": {"interface": [
      {"name": "Ethernet1",
       "state": {"oper-status": "UP", "counters": {"in-pkts": "1234", "carrier-transitions": "6"}},
       "openconfig-if-ethernet:ethernet": {"state": {"counters": {"in-crc-errors": "3"}}}},
      {"name": "Ethernet2", "state": {"oper-status": "DOWN"}}
    ]}})",
                              &st);
  EXPECT_THAT(r.leaves, ElementsAre(rec("Ethernet1", in("name"), "Ethernet1"),
                                    rec("Ethernet1", in("state/oper-status"), "UP"),
                                    rec("Ethernet1", in("state/counters/in-pkts"), "1234"),
                                    rec("Ethernet1", in("state/counters/carrier-transitions"), "6"),
                                    rec("Ethernet1", in("ethernet/state/counters/in-crc-errors"), "3"),
                                    rec("Ethernet2", in("name"), "Ethernet2"),
                                    rec("Ethernet2", in("state/oper-status"), "DOWN")));
  EXPECT_EQ(st.leaves, 7u);
  EXPECT_EQ(st.orphan_leaves, 0u);
}

TEST(OpenConfig, ValuesAreTheLeafTextWithQuotesRemoved) {
  // RFC 7951: 64-bit integers and decimal64 as strings; smaller integers, booleans and
  // floats as JSON literals. Numbers are passed on as written; null is reported as such
  // (a reader expecting a counter refuses it, rather than take its absence for nothing).
  OcStats st;
  const Recorder r = parse_ok(R"({"openconfig-interfaces:interfaces": {"interface": [{"name": "e1", "state": {
      "in-octets": "18446744073709551615",
      "big": 18446744073709551615,
      "neg": -5,
      "dec": "-2.31",
      "flt": 1.50,
      "exp": -2.5e-3,
      "on": true,
      "off": false,
      "gone": null,
      "text": "x \"y\" \u00e9"
    }}]}})",
                              &st);
  EXPECT_THAT(r.leaves, ElementsAre(rec("e1", in("name"), "e1"),
                                    rec("e1", in("state/in-octets"), "18446744073709551615"),
                                    rec("e1", in("state/big"), "18446744073709551615"),
                                    rec("e1", in("state/neg"), "-5"),
                                    rec("e1", in("state/dec"), "-2.31"),
                                    rec("e1", in("state/flt"), "1.50"),
                                    rec("e1", in("state/exp"), "-2.5e-3"),
                                    rec("e1", in("state/on"), "true"),
                                    rec("e1", in("state/off"), "false"),
                                    rec("e1", in("state/gone"), "null"),
                                    rec("e1", in("state/text"), "x \"y\" \xc3\xa9")));
  EXPECT_EQ(st.leaves, 11u);
}

TEST(OpenConfig, NameLeafAfterOtherLeavesStillNamesThemAll) {
  const Recorder r = parse_ok(R"({"openconfig-interfaces:interfaces": {"interface": [
      {"state": {"counters": {"in-pkts": "1"}, "name": "Ethernet7"}, "config": {"mtu": 9214}, "name": "Ethernet7"}
    ]}})");
  ASSERT_EQ(r.leaves.size(), 4u);
  EXPECT_THAT(r.ports(), ElementsAre("Ethernet7"));
  EXPECT_EQ(r.leaves[0], rec("Ethernet7", in("state/counters/in-pkts"), "1"));
}

TEST(OpenConfig, TheListKeyLeafWinsOverStateAndConfigNames) {
  const Recorder r = parse_ok(R"({"openconfig-interfaces:interfaces": {"interface": [
      {"state": {"name": "from-state"}, "config": {"name": "from-config"}, "name": "Ethernet1"},
      {"config": {"name": "Ethernet2"}, "state": {"name": "state-name"}, "state": {"oper-status": "UP"}},
      {"state": {"name": "Ethernet3", "oper-status": "UP"}}
    ]}})");
  // Without the key leaf the first of state/name or config/name seen names the entry.
  EXPECT_THAT(r.ports(), ElementsAre("Ethernet1", "Ethernet2", "Ethernet3"));
}

TEST(OpenConfig, LeafListsReportEveryItemUnderTheListPath) {
  const Recorder r = parse_ok(R"({"openconfig-interfaces:interfaces": {"interface": [
      {"name": "e1", "state": {"tpid-list": ["TPID_0X8100", "TPID_0X88A8"], "mtu": 9000}}]}})");
  EXPECT_THAT(r.at(in("state/tpid-list")),
              ElementsAre(rec("e1", in("state/tpid-list"), "TPID_0X8100"), rec("e1", in("state/tpid-list"), "TPID_0X88A8")));
  EXPECT_THAT(r.at(in("state/mtu")), ElementsAre(rec("e1", in("state/mtu"), "9000")));
}

// An empty array where a counter might be is reported as itself, "[]" of kind array, so
// that the mapper can refuse it by name; it is not counted as a leaf. (The fuzz harness
// found the text and the header's "[" disagreeing: corpus/openconfig/regression-empty-array-leaf.)
TEST(OpenConfig, AnEmptyArrayWhereALeafMightBeIsReportedAsAnArrayNotALeaf) {
  struct Kinds final : OcSink {
    std::vector<std::pair<std::string, OcKind>> got;
    void on_leaf(std::string_view, std::string_view path, std::string_view value, OcKind kind) override {
      got.emplace_back(std::string(path) + "=" + std::string(value), kind);
    }
  } k;
  OcStats st;
  ASSERT_TRUE(parse_openconfig(R"({"openconfig-interfaces:interfaces": {"interface": [
      {"name": "e1", "state": {"counters": {"in-pkts": [], "out-pkts": "7"}}}]}})",
                               k, &st)
                  .ok());
  EXPECT_THAT(k.got, ElementsAre(std::pair{in("name") + "=e1", OcKind::string},
                                 std::pair{in("state/counters/in-pkts") + "=[]", OcKind::array},
                                 std::pair{in("state/counters/out-pkts") + "=7", OcKind::string}));
  EXPECT_EQ(st.leaves, 2u);
  EXPECT_EQ(to_string(OcKind::array), "an array");
}

TEST(OpenConfig, SubinterfaceListsStayUnderTheirInterface) {
  const Recorder r = parse_ok(R"({"openconfig-interfaces:interfaces": {"interface": [
      {"name": "e1", "subinterfaces": {"subinterface": [
          {"index": 0, "state": {"counters": {"in-pkts": "5"}}},
          {"index": 1, "state": {"counters": {"in-pkts": "6"}}}]},
       "state": {"counters": {"in-pkts": "11"}}}]}})");
  EXPECT_THAT(r.at(in("subinterfaces/subinterface/state/counters/in-pkts")),
              ElementsAre(rec("e1", in("subinterfaces/subinterface/state/counters/in-pkts"), "5"),
                          rec("e1", in("subinterfaces/subinterface/state/counters/in-pkts"), "6")));
  EXPECT_THAT(r.at(in("state/counters/in-pkts")), ElementsAre(rec("e1", in("state/counters/in-pkts"), "11")));
  EXPECT_THAT(r.ports(), ElementsAre("e1"));
}

// ---------------------------------------------------------------------------------------
// Components

TEST(OpenConfig, ComponentTiedThroughTheTransceiverLeafEvenWhenComponentsComeFirst) {
  OcStats st;
  const Recorder r = parse_ok(R"({
    "openconfig-platform:components": {"component": [
      {"state": {"temperature": {"instant": "44.8"}}, "name": "xcvr-7"}
    ]},
    "openconfig-interfaces:interfaces": {"interface": [
      {"name": "Ethernet7", "state": {"openconfig-platform-transceiver:transceiver": "xcvr-7"}}
    ]}})",
                              &st);
  EXPECT_THAT(r.leaves, ElementsAre(rec("Ethernet7", in("name"), "Ethernet7"),
                                    rec("Ethernet7", in("state/transceiver"), "xcvr-7"),
                                    rec("Ethernet7", comp("state/temperature/instant"), "44.8"),
                                    rec("Ethernet7", comp("name"), "xcvr-7")));
  EXPECT_EQ(st.leaves, 4u);
}

TEST(OpenConfig, ComponentTiedThroughTheTransceiverLeafWhenInterfacesComeFirst) {
  const Recorder r = parse_ok(R"({
    "openconfig-interfaces:interfaces": {"interface": [
      {"state": {"openconfig-platform-transceiver:transceiver": "xcvr-7"}, "name": "Ethernet7"}]},
    "openconfig-platform:components": {"component": [
      {"name": "xcvr-7", "state": {"temperature": {"instant": "44.8"}}}]}})");
  EXPECT_THAT(r.at(comp("state/temperature/instant")), ElementsAre(rec("Ethernet7", comp("state/temperature/instant"), "44.8")));
}

TEST(OpenConfig, ComponentNamedLikeAnInterfaceWithoutATransceiverLeaf) {
  const Recorder r = parse_ok(R"({
    "openconfig-platform:components": {"component": [
      {"name": "Ethernet2", "state": {"temperature": {"instant": "39.25"}}}]},
    "openconfig-interfaces:interfaces": {"interface": [{"name": "Ethernet2", "state": {"oper-status": "UP"}}]}})");
  EXPECT_THAT(r.at(comp("state/temperature/instant")),
              ElementsAre(rec("Ethernet2", comp("state/temperature/instant"), "39.25")));
}

TEST(OpenConfig, ComponentTiedToNothingIsReportedUnderItsOwnName) {
  const Recorder r = parse_ok(R"({
    "openconfig-platform:components": {"component": [
      {"state": {"temperature": {"instant": "61.5"}}, "name": "TempSensor-ASIC"},
      {"name": "xcvr-spare", "openconfig-platform-transceiver:transceiver": {"state": {"fec-corrected-bits": "9"}}}]},
    "openconfig-interfaces:interfaces": {"interface": [
      {"name": "Ethernet1", "state": {"openconfig-platform-transceiver:transceiver": "xcvr-1"}}]}})");
  EXPECT_THAT(r.at(comp("state/temperature/instant")),
              ElementsAre(rec("TempSensor-ASIC", comp("state/temperature/instant"), "61.5")));
  EXPECT_THAT(r.at(comp("transceiver/state/fec-corrected-bits")),
              ElementsAre(rec("xcvr-spare", comp("transceiver/state/fec-corrected-bits"), "9")));
}

TEST(OpenConfig, NestedChannelListsReportEveryLaneWithoutKeys) {
  OcStats st;
  const Recorder r = parse_ok(R"({
    "openconfig-platform:components": {"component": [{
      "openconfig-platform-transceiver:transceiver": {
        "physical-channels": {"channel": [
          {"state": {"index": 0, "input-power": {"instant": "-2.31"}, "laser-bias-current": {"instant": "7.1"}}, "index": 0},
          {"index": 1, "state": {"input-power": {"instant": "-7.48"}, "laser-bias-current": {"instant": "9.8"}}}
        ]},
        "state": {"fec-uncorrectable-words": "4"}
      },
      "name": "xcvr-1"}]},
    "openconfig-interfaces:interfaces": {"interface": [
      {"name": "Ethernet1", "state": {"openconfig-platform-transceiver:transceiver": "xcvr-1"}}]}})",
                              &st);
  const std::string ch = comp("transceiver/physical-channels/channel/");
  EXPECT_THAT(r.at(ch + "state/input-power/instant"),
              ElementsAre(rec("Ethernet1", ch + "state/input-power/instant", "-2.31"),
                          rec("Ethernet1", ch + "state/input-power/instant", "-7.48")));
  EXPECT_THAT(r.at(ch + "state/laser-bias-current/instant"),
              ElementsAre(rec("Ethernet1", ch + "state/laser-bias-current/instant", "7.1"),
                          rec("Ethernet1", ch + "state/laser-bias-current/instant", "9.8")));
  EXPECT_THAT(r.at(ch + "index"), ElementsAre(rec("Ethernet1", ch + "index", "0"), rec("Ethernet1", ch + "index", "1")));
  // The leaf after the channel list is back at the transceiver's own level.
  EXPECT_THAT(r.at(comp("transceiver/state/fec-uncorrectable-words")),
              ElementsAre(rec("Ethernet1", comp("transceiver/state/fec-uncorrectable-words"), "4")));
  EXPECT_EQ(st.leaves, r.leaves.size());
  EXPECT_EQ(st.leaves, 11u);  // 2 interface + 4 + 3 lane leaves + fec + component name
}

// ---------------------------------------------------------------------------------------
// Everything else

TEST(OpenConfig, LeavesOutsideInterfacesAndComponentsAreCountedAsOrphans) {
  OcStats st;
  const Recorder r = parse_ok(R"({
    "openconfig-system:system": {"state": {"hostname": "ctsw1", "boot-time": "1712000000000000000"}},
    "openconfig-interfaces:interfaces": {"note": "not in the list",
      "interface": [{"name": "e1"}]},
    "openconfig-network-instance:network-instances": {"network-instance": [
      {"name": "default", "interfaces": {"interface": [{"id": "Ethernet1", "state": {"id": "Ethernet1"}}]}}]}})",
                              &st);
  EXPECT_THAT(r.leaves, ElementsAre(rec("e1", in("name"), "e1")));
  EXPECT_EQ(st.leaves, 1u);
  EXPECT_EQ(st.orphan_leaves, 6u);
}

TEST(OpenConfig, EmptyDocumentsReportNothing) {
  for (const char* doc : {"{}", " { } ", "{\"openconfig-interfaces:interfaces\": {\"interface\": []}}", "[]"}) {
    OcStats st;
    st.leaves = 99;
    const Recorder r = parse_ok(doc, &st);
    EXPECT_TRUE(r.leaves.empty()) << doc;
    EXPECT_EQ(st.leaves, 0u) << doc;
    EXPECT_EQ(st.orphan_leaves, 0u) << doc;
  }
}

TEST(OpenConfig, AnInterfaceWithoutANameIsReportedWithAnEmptyPort) {
  const Recorder r = parse_ok(R"({"openconfig-interfaces:interfaces": {"interface": [{"state": {"oper-status": "UP"}}]}})");
  EXPECT_THAT(r.leaves, ElementsAre(rec("", in("state/oper-status"), "UP")));
}

// ---------------------------------------------------------------------------------------
// A Get of /interfaces or /components: the list itself at the top of the document

TEST(OpenConfig, AGetOfInterfacesIsRootedAtTheInterfaceList) {
  OcStats st;
  const Recorder r = parse_ok(R"({"openconfig-interfaces:interface": [
      {"name": "Ethernet1", "state": {"oper-status": "UP", "counters": {"in-pkts": "10"}}},
      {"name": "Ethernet2", "state": {"oper-status": "DOWN"}}]})",
                              &st);
  EXPECT_THAT(r.leaves, ElementsAre(rec("Ethernet1", in("name"), "Ethernet1"),
                                    rec("Ethernet1", in("state/oper-status"), "UP"),
                                    rec("Ethernet1", in("state/counters/in-pkts"), "10"),
                                    rec("Ethernet2", in("name"), "Ethernet2"),
                                    rec("Ethernet2", in("state/oper-status"), "DOWN")));
  EXPECT_EQ(st.leaves, 5u);
  EXPECT_EQ(st.orphan_leaves, 0u);
}

TEST(OpenConfig, AGetOfComponentsIsRootedAtTheComponentList) {
  OcStats st;
  const Recorder r = parse_ok(R"({"openconfig-platform:component": [
      {"name": "Ethernet7", "state": {"temperature": {"instant": "41.5"}},
       "openconfig-platform-transceiver:transceiver": {"physical-channels": {"channel": [
         {"index": 0, "state": {"input-power": {"instant": "-2.5"}}}]}}}]})",
                              &st);
  const std::string in_power = comp("transceiver/physical-channels/channel/state/input-power/instant");
  EXPECT_THAT(r.leaves, ElementsAre(rec("Ethernet7", comp("name"), "Ethernet7"),
                                    rec("Ethernet7", comp("state/temperature/instant"), "41.5"),
                                    rec("Ethernet7", comp("transceiver/physical-channels/channel/index"), "0"),
                                    rec("Ethernet7", in_power, "-2.5")));
  EXPECT_EQ(st.orphan_leaves, 0u);
}

TEST(OpenConfig, TopLevelListsWithAndWithoutModulePrefixTieTransceiversToInterfaces) {
  const Recorder r = parse_ok(R"({
    "component": [{"name": "xcvr-9", "state": {"temperature": {"instant": "50"}}}],
    "openconfig-interfaces:interface": [{"name": "Ethernet9", "state": {"transceiver": "xcvr-9"}}]})");
  EXPECT_THAT(r.at(comp("state/temperature/instant")), ElementsAre(rec("Ethernet9", comp("state/temperature/instant"), "50")));
  EXPECT_THAT(r.ports(), ElementsAre("Ethernet9"));
}

TEST(OpenConfig, AnInterfaceListDeeperThanTheTopIsNotTakenForTheRoot) {
  // "interface" keys below the top level (here a network instance's) are not the
  // interfaces list.
  OcStats st;
  Recorder r;
  const Status s = parse_openconfig(R"({"openconfig-network-instance:network-instances": {"network-instance": [
      {"name": "default", "interface": [{"id": "Ethernet1"}]}]}})",
                                    r, &st);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), "no openconfig-interfaces interface or openconfig-platform component in the document (2 leaves "
                       "outside them)");
  EXPECT_TRUE(r.leaves.empty());
}

TEST(OpenConfigErrors, ValidJsonOfAnotherShapeIsAnError) {
  for (const auto& [doc, n] : std::vector<std::pair<std::string, int>>{
           {R"({"openconfig-system:system": {"state": {"hostname": "ctsw1", "boot-time": "17"}}})", 2},
           {R"({"interfaces": {"interfaz": [{"name": "Ethernet1", "state": {"oper-status": "UP"}}]}})", 2},
           {R"({"hostname": "x"})", 1},
           {R"([1, 2, 3])", 3}}) {
    Recorder r;
    OcStats st;
    const Status s = parse_openconfig(doc, r, &st);
    ASSERT_FALSE(s.ok()) << doc;
    EXPECT_EQ(s.error(), "no openconfig-interfaces interface or openconfig-platform component in the document (" +
                             std::to_string(n) + " leaves outside them)")
        << doc;
    EXPECT_TRUE(r.leaves.empty()) << doc;
  }
}

TEST(OpenConfigErrors, SyntaxErrorsCarryNoLibraryPrefix) {
  for (const std::string& doc : {std::string(R"({"openconfig-interfaces:interfaces": {"interface": [{"name": "e1",}]}})"),
                                std::string("{\"a\": tru}"), std::string("{\"a\": \"unterminated")}) {
    Recorder r;
    const Status s = parse_openconfig(doc, r);
    ASSERT_FALSE(s.ok()) << doc;
    EXPECT_THAT(s.error(), ::testing::MatchesRegex("byte [0-9]+: parse error at line 1, column [0-9]+: .+")) << doc;
    EXPECT_THAT(s.error(), ::testing::Not(HasSubstr("[json.exception"))) << doc;
    EXPECT_THAT(s.error(), ::testing::Not(HasSubstr("parse_error"))) << doc;
  }
}

// ---------------------------------------------------------------------------------------
// Syntax errors: "byte N: what", N counting from 1 up to and including the offending byte.

TEST(OpenConfigErrors, SyntaxErrorNamesTheByte) {
  Recorder r;
  OcStats st;
  const std::string doc = R"({"openconfig-interfaces:interfaces": {"interface": [{"name": "e1",}]}})";
  const size_t bad = doc.find(",}") + 1;  // 0-based offset of the '}'
  const Status s = parse_openconfig(doc, r, &st);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error(), StartsWith("byte " + std::to_string(bad + 1) + ": "));
  EXPECT_THAT(s.error(), HasSubstr("syntax error"));
  EXPECT_THAT(s.error(), HasSubstr("unexpected '}'"));
  EXPECT_TRUE(r.leaves.empty());  // the entry was not finished: nothing reported
  EXPECT_EQ(st.leaves, 0u);       // stats are only filled on success
}

TEST(OpenConfigErrors, ComponentsBeforeTheErrorAreNotReported) {
  Recorder r;
  const Status s = parse_openconfig(R"({"openconfig-platform:components": {"component": [
      {"name": "Ethernet1", "state": {"temperature": {"instant": "40"}}}]},
    "openconfig-interfaces:interfaces": {"interface": [{"name": "Ethernet1"} {"name": "Ethernet2"}]}})",
                                    r);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error(), StartsWith("byte "));
  // Components are held to the end of the document to be tied to their interfaces, so
  // none were reported; the interface entry finished before the error was streamed.
  EXPECT_THAT(r.leaves, ElementsAre(rec("Ethernet1", in("name"), "Ethernet1")));
}

TEST(OpenConfigErrors, TruncatedTrailingAndEmptyInput) {
  const std::string truncated = R"({"openconfig-interfaces:interfaces": {"interface": [{"name": "e1", "state": {"in-pkts": "12)";
  for (const auto& [doc, byte] : std::vector<std::pair<std::string, size_t>>{
           {truncated, truncated.size() + 1},  // the end of input is one past the last byte
           {"{} x", 4},
           {"", 1},
           {"{\"a\": 01}", 8},
       }) {
    Recorder r;
    const Status s = parse_openconfig(doc, r);
    ASSERT_FALSE(s.ok()) << doc;
    EXPECT_THAT(s.error(), StartsWith("byte " + std::to_string(byte) + ": ")) << doc;
    EXPECT_TRUE(r.leaves.empty()) << doc;
  }
}

// ---------------------------------------------------------------------------------------
// A whole gNMI answer

TEST(OpenConfig, GnmiFixture) {
  const std::string doc = testing::read_file(testing::fixture_path("telemetry/gnmi_get_json_ietf_switch.json"));
  OcStats st;
  const Recorder r = parse_ok(doc, &st);
  EXPECT_EQ(st.leaves, 132u);
  EXPECT_EQ(st.orphan_leaves, 2u);  // the system container's two leaves
  EXPECT_EQ(r.leaves.size(), st.leaves);
  // Transceivers appear under the interface they serve, never under their own names;
  // components tied to nothing keep theirs.
  EXPECT_THAT(r.ports(), UnorderedElementsAre("Ethernet1", "Ethernet2", "Ethernet3", "Management1", "TempSensor-ASIC",
                                              "xcvr-spare"));
  const std::string in_power = comp("transceiver/physical-channels/channel/state/input-power/instant");
  EXPECT_THAT(r.at(in_power),
              ElementsAre(rec("Ethernet1", in_power, "-2.31"), rec("Ethernet1", in_power, "-2.05"),
                          rec("Ethernet1", in_power, "-7.48"), rec("Ethernet1", in_power, "-2.60"),
                          rec("Ethernet2", in_power, "-3.10"), rec("Ethernet2", in_power, "-3.05"),
                          rec("Ethernet2", in_power, "-2.95"), rec("Ethernet2", in_power, "-3.20"),
                          rec("Ethernet3", in_power, "-40.00"), rec("Ethernet3", in_power, "-40.00"),
                          rec("Ethernet3", in_power, "-40.00"), rec("Ethernet3", in_power, "-40.00")));
  const std::string temp = comp("state/temperature/instant");
  EXPECT_THAT(r.at(temp), ElementsAre(rec("TempSensor-ASIC", temp, "61.5"), rec("Ethernet1", temp, "44.8"),
                                      rec("Ethernet2", temp, "39.25"), rec("Ethernet3", temp, "51.5"),
                                      rec("Ethernet3", temp, "38.0"), rec("xcvr-spare", temp, "30.1")));
  EXPECT_THAT(r.at(in("state/oper-status")),
              ElementsAre(rec("Ethernet1", in("state/oper-status"), "UP"), rec("Ethernet2", in("state/oper-status"), "DOWN"),
                          rec("Ethernet3", in("state/oper-status"), "LOWER_LAYER_DOWN"),
                          rec("Management1", in("state/oper-status"), "UP")));
  EXPECT_THAT(r.at(in("config/enabled")), ElementsAre(rec("Ethernet1", in("config/enabled"), "true")));
}

}  // namespace
}  // namespace medic::telemetry
