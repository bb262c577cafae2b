// SNMP without the network: agent addresses, credentials, and how one agent's walk (as
// snmpbulkwalk printed it from a real net-snmp agent) becomes an answer the counter map
// reads: HC counters over their 32-bit twins, flaps between polls, restarts, renumbering,
// and values of the wrong kind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include <cstdlib>

#include "common/files.h"
#include "telemetry/mapping.h"
#include "telemetry/snmp.h"
#include "tests/support/testing.h"
#include "tests/telemetry/snmpwalk_text.h"

namespace medic::telemetry {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using medic::testing::fixture_path;
using medic::testing::read_file;

// --- addresses ---

TEST(SnmpAddress, HostAndPortWithPort161ByDefault) {
  auto a = parse_snmp_url("snmp://rtsw001.example");
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a->host, "rtsw001.example");
  EXPECT_EQ(a->port, 161);
  EXPECT_EQ(a->peer(), "udp:rtsw001.example:161");
  auto b = parse_snmp_url("snmp://127.0.0.1:16161");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->peer(), "udp:127.0.0.1:16161");
  auto c = parse_snmp_url("snmp://[2001:db8::7]:1161");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->host, "2001:db8::7");
  EXPECT_EQ(c->peer(), "udp6:[2001:db8::7]:1161");
}

TEST(SnmpAddress, EveryMalformedAddressSaysWhatIsWrong) {
  auto err = [](std::string_view url) {
    auto a = parse_snmp_url(url);
    return a.ok() ? std::string("parsed") : a.error();
  };
  EXPECT_EQ(err("http://x"), "SNMP address \"http://x\" does not start with snmp://");
  EXPECT_EQ(err("snmp://"), "SNMP address \"snmp://\" has no host");
  EXPECT_EQ(err("snmp://:161"), "SNMP address \"snmp://:161\" has no host");
  EXPECT_EQ(err("snmp://h:"), "SNMP address \"snmp://h:\": empty port");
  EXPECT_EQ(err("snmp://h:70000"), "SNMP address \"snmp://h:70000\": port \"70000\" is not a number from 1 to 65535");
  EXPECT_EQ(err("snmp://h:16x"), "SNMP address \"snmp://h:16x\": port \"16x\" is not a number from 1 to 65535");
  EXPECT_EQ(err("snmp://public@h"),
            "SNMP address \"snmp://public@h\": \"public@h\" is not a host name or address (snmp://HOST[:PORT], no path, "
            "user or query)");
  EXPECT_EQ(err("snmp://[2001:db8::7"), "SNMP address \"snmp://[2001:db8::7\": an IPv6 address needs its closing ]");
  EXPECT_EQ(err("snmp://[zz]:1"), "SNMP address \"snmp://[zz]:1\": \"zz\" is not an IPv6 address");
  EXPECT_EQ(err("snmp://[::1]x"), "SNMP address \"snmp://[::1]x\": expected :PORT after the address, got \"x\"");
  EXPECT_EQ(err(std::string("snmp://h\n") + "x"),
            "SNMP address \"snmp://h\\x0ax\": \"h\\x0ax\" is not a host name or address (snmp://HOST[:PORT], no path, "
            "user or query)");
}

// --- credentials ---

TEST(SnmpCredentials, V2cAndV3FromAFileAndDescribedWithoutASecret) {
  auto v2 = SnmpCredentials::parse(R"({"version": "2c", "community": "s3cret-community"})", "c.json");
  ASSERT_TRUE(v2.ok()) << v2.error();
  EXPECT_EQ(v2->version, SnmpCredentials::Version::v2c);
  EXPECT_EQ(v2->community, "s3cret-community");
  EXPECT_EQ(v2->describe(), "SNMPv2c (community set)");
  auto v3 = SnmpCredentials::parse(R"({"version": "3", "user": "medic", "auth_protocol": "SHA",
      "auth_password": "auth-secret-1", "priv_protocol": "AES", "priv_password": "priv-secret-1"})",
                                   "c.json");
  ASSERT_TRUE(v3.ok()) << v3.error();
  EXPECT_EQ(v3->user, "medic");
  EXPECT_EQ(v3->auth_password, "auth-secret-1");
  EXPECT_EQ(v3->priv_password, "priv-secret-1");
  EXPECT_EQ(v3->describe(), "SNMPv3 user \"medic\", authPriv SHA/AES");
  EXPECT_THAT(v3->describe(), Not(HasSubstr("secret")));
}

TEST(SnmpCredentials, EveryBadFileGetsItsPathAndProblem) {
  auto err = [](const std::string& text) {
    auto c = SnmpCredentials::parse(text, "c.json");
    return c.ok() ? std::string("parsed") : c.error();
  };
  EXPECT_EQ(err("[]"), "c.json: $: expected an object, got an array");
  EXPECT_EQ(err("{}"), "c.json: $.version: missing: \"2c\" or \"3\"");
  EXPECT_EQ(err(R"({"version": "1", "community": "x"})"), "c.json: $.version: unsupported \"1\" (\"2c\" or \"3\")");
  EXPECT_EQ(err(R"({"version": "2c"})"), "c.json: $.community: SNMPv2c needs a community");
  EXPECT_EQ(err(R"({"version": "2c", "community": 7})"), "c.json: $.community: expected a string, got an integer");
  EXPECT_EQ(err(R"({"version": "2c", "community": "x", "comunity": "y"})"), "c.json: $: unknown key \"comunity\"");
  EXPECT_EQ(err(R"({"version": "2c", "community": "x", "user": "u"})"),
            "c.json: $.user: is for SNMPv3; this file says version 2c");
  EXPECT_EQ(err(R"({"version": "3", "community": "x"})"), "c.json: $.community: is for SNMPv2c; this file says version 3");
  EXPECT_EQ(err(R"({"version": "3", "auth_password": "12345678", "priv_password": "12345678"})"),
            "c.json: $.user: SNMPv3 needs a user");
  EXPECT_EQ(err(R"({"version": "3", "user": "u", "auth_password": "short", "priv_password": "12345678"})"),
            "c.json: $.auth_password: at least 8 characters (RFC 3414)");
  EXPECT_EQ(err(R"({"version": "3", "user": "u", "auth_password": "12345678"})"),
            "c.json: $.priv_password: at least 8 characters (RFC 3414)");
  EXPECT_EQ(err(R"({"version": "3", "user": "u", "auth_protocol": "MD5", "auth_password": "12345678", "priv_password": "12345678"})"),
            "c.json: $.auth_protocol: unsupported \"MD5\" (this build authenticates with SHA)");
  EXPECT_EQ(err(R"({"version": "3", "user": "u", "priv_protocol": "DES", "auth_password": "12345678", "priv_password": "12345678"})"),
            "c.json: $.priv_protocol: unsupported \"DES\" (this build encrypts with AES-128)");
  EXPECT_THAT(err("{\"version\": "), HasSubstr("c.json: line 1"));
  auto missing = SnmpCredentials::load_file("/nonexistent/snmp.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error(), HasSubstr("/nonexistent/snmp.json"));
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v;
    if (value != nullptr) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(SnmpCredentials, FromTheEnvironmentNamingTheVariables) {
  ScopedEnv a("MEDIC_SNMP_COMMUNITY", nullptr), b("MEDIC_SNMP_USER", nullptr), c("MEDIC_SNMP_AUTH_PASSWORD", nullptr),
      d("MEDIC_SNMP_PRIV_PASSWORD", nullptr);
  auto none = SnmpCredentials::from_env();
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.kind(), ErrorKind::not_found);
  {
    ScopedEnv x("MEDIC_SNMP_COMMUNITY", "fabric-ro");
    auto v2 = SnmpCredentials::from_env();
    ASSERT_TRUE(v2.ok()) << v2.error();
    EXPECT_EQ(v2->community, "fabric-ro");
    ScopedEnv y("MEDIC_SNMP_USER", "medic");
    auto both = SnmpCredentials::from_env();
    ASSERT_FALSE(both.ok());
    EXPECT_EQ(both.error(), "both MEDIC_SNMP_COMMUNITY and MEDIC_SNMP_USER are set: say which of SNMPv2c or SNMPv3");
  }
  ScopedEnv y("MEDIC_SNMP_USER", "medic");
  ScopedEnv z("MEDIC_SNMP_AUTH_PASSWORD", "authpass123");
  auto no_priv = SnmpCredentials::from_env();
  ASSERT_FALSE(no_priv.ok());
  EXPECT_EQ(no_priv.error(), "the environment: MEDIC_SNMP_PRIV_PASSWORD: at least 8 characters (RFC 3414)");
  ScopedEnv w("MEDIC_SNMP_PRIV_PASSWORD", "privpass123");
  auto v3 = SnmpCredentials::from_env();
  ASSERT_TRUE(v3.ok()) << v3.error();
  EXPECT_EQ(v3->version, SnmpCredentials::Version::v3);
  EXPECT_EQ(v3->priv_password, "privpass123");
}

// --- one agent's walk ---

// The samples a device's ports get from one rendered walk, by port name.
std::map<std::string, PortSample> mapped(const std::string& body, const std::vector<std::string>& ports) {
  fabric::Topology::Builder b;
  fabric::Device d;
  d.name = "sw";
  d.role = fabric::Role::rtsw;
  b.add_device(d);
  for (const auto& p : ports) b.add_port("sw", p);
  const fabric::Topology topo = std::move(b).build();
  const CounterMap map = CounterMap::load_file(data_dir() + "/counter_map.json");
  ScrapeMapper mapper(topo, map);
  std::vector<PortSample> out;
  const Status st = mapper.map(0, detect_format("application/x-medic-snmp", body), body, Time{}, out);
  EXPECT_TRUE(st.ok()) << st.error();
  std::map<std::string, PortSample> by_name;
  for (const auto& s : out) by_name[topo.port(s.port).name] = s;
  return by_name;
}

TEST(SnmpAgentState, ARealAgentsWalkMapsToItsCanonicalCounters) {
  const auto values = parse_snmpwalk(read_file(fixture_path("snmp/snmpbulkwalk_linux.txt")));
  ASSERT_GT(values.size(), 150u);
  SnmpAgentState agent;
  EXPECT_TRUE(agent.wants_low_counters());  // unknown before the first walk
  const auto poll = agent.render(values);
  EXPECT_EQ(poll.interfaces, 4u);
  EXPECT_FALSE(poll.restarted);
  EXPECT_EQ(poll.problem, "");
  EXPECT_FALSE(agent.wants_low_counters());  // every interface has ifHCInOctets
  // The 64-bit counter stands for the interface; its 32-bit twin is not rendered.
  EXPECT_THAT(poll.body, HasSubstr("ifHCInOctets{ifName=\"lo\",ifIndex=\"1\"} 715402009\n"));
  EXPECT_THAT(poll.body, Not(HasSubstr("ifInOctets{")));
  EXPECT_THAT(poll.body, HasSubstr("ifOperStatus{ifName=\"ifb0\",ifIndex=\"2\"} 2\n"));
  EXPECT_THAT(poll.body, HasSubstr("dot3StatsFCSErrors{ifName=\"eth0\",ifIndex=\"4\"} 0\n"));
  EXPECT_THAT(poll.body, HasSubstr("ifOperStatusChanges{ifName=\"eth0\",ifIndex=\"4\"} 0\n"));

  const auto s = mapped(poll.body, {"lo", "eth0", "ifb0"});
  ASSERT_EQ(s.size(), 3u);
  const PortSample& lo = s.at("lo");
  EXPECT_EQ(lo.get(Counter::rx_bytes), 715402009);
  EXPECT_EQ(lo.get(Counter::oper_up), 1);
  EXPECT_EQ(lo.get(Counter::carrier_changes), 0);
  EXPECT_TRUE(lo.has(Counter::rx_packets));
  EXPECT_EQ(s.at("ifb0").get(Counter::oper_up), 0);
  EXPECT_EQ(s.at("eth0").get(Counter::rx_bytes), 194143388);
  EXPECT_TRUE(s.at("eth0").has(Counter::rx_crc_errors));
  EXPECT_FALSE(s.at("lo").has(Counter::rx_crc_errors));  // no dot3StatsTable row for lo
}

// A small agent's walk: one interface, values chosen by the test.
struct Row {
  uint32_t index = 1;
  std::string name = "Ethernet1";
  int64_t oper = 1;
  uint64_t last_change = 100;
  std::optional<uint64_t> hc_in = std::nullopt;  // ifHCInOctets, none: an agent with 32-bit counters only
  uint64_t in32 = 0;
};
Row row(uint32_t index, std::string name) {
  Row r;
  r.index = index;
  r.name = std::move(name);
  return r;
}
std::vector<SnmpValue> walk(uint64_t uptime, const std::vector<Row>& rows) {
  std::vector<SnmpValue> v;
  auto add = [&](std::string oid, SnmpValue::Type t, uint64_t n, std::string text = "") {
    SnmpValue x;
    x.oid = oid_of(oid);
    x.type = t;
    x.number = n;
    x.text = std::move(text);
    v.push_back(std::move(x));
  };
  add("1.3.6.1.2.1.1.3.0", SnmpValue::Type::timeticks, uptime);
  for (const Row& r : rows) {
    const std::string i = "." + std::to_string(r.index);
    add("1.3.6.1.2.1.31.1.1.1.1" + i, SnmpValue::Type::octets, 0, r.name);
    add("1.3.6.1.2.1.2.2.1.8" + i, SnmpValue::Type::integer, static_cast<uint64_t>(r.oper));
    add("1.3.6.1.2.1.2.2.1.9" + i, SnmpValue::Type::timeticks, r.last_change);
    add("1.3.6.1.2.1.2.2.1.10" + i, SnmpValue::Type::counter32, r.in32);
    if (r.hc_in) add("1.3.6.1.2.1.31.1.1.1.6" + i, SnmpValue::Type::counter64, *r.hc_in);
  }
  return v;
}
double flaps(const SnmpAgentState::Poll& p, const std::string& port) {
  return mapped(p.body, {port}).at(port).get(Counter::carrier_changes);
}

TEST(SnmpAgentState, AFlapBetweenTwoPollsStillCounts) {
  SnmpAgentState agent;
  EXPECT_EQ(flaps(agent.render(walk(1000, {Row{}})), "Ethernet1"), 0);
  // Down now: one transition.
  Row down;
  down.oper = 2;
  down.last_change = 1500;
  EXPECT_EQ(flaps(agent.render(walk(2000, {down})), "Ethernet1"), 1);
  // Up again and down again in between: the state is the same, ifLastChange moved.
  down.last_change = 2500;
  EXPECT_EQ(flaps(agent.render(walk(3000, {down})), "Ethernet1"), 3);
  // Nothing moved: nothing counted.
  EXPECT_EQ(flaps(agent.render(walk(4000, {down})), "Ethernet1"), 3);
  // Up: one more.
  Row up;
  up.last_change = 4500;
  EXPECT_EQ(flaps(agent.render(walk(5000, {up})), "Ethernet1"), 4);
}

TEST(SnmpAgentState, ARestartMovesIfLastChangeWithoutAFlap) {
  SnmpAgentState agent;
  agent.render(walk(900000, {Row{}}));
  Row after;
  after.last_change = 0;  // relative to the new sysUpTime
  const auto p = agent.render(walk(300, {after}));
  EXPECT_TRUE(p.restarted);
  EXPECT_EQ(flaps(p, "Ethernet1"), 0);
  // A port that came back in another state after the restart did change.
  Row down = after;
  down.oper = 2;
  EXPECT_FALSE(agent.render(walk(1000, {after})).restarted);  // forward again, nothing moved
  const auto q = agent.render(walk(400, {down}));
  EXPECT_TRUE(q.restarted);
  EXPECT_EQ(flaps(q, "Ethernet1"), 1);
}

TEST(SnmpAgentState, RenumberedInterfacesKeepTheirNameAndTheirFlapCount) {
  SnmpAgentState agent;
  Row a = row(1, "Ethernet1"), b = row(2, "Ethernet2");
  agent.render(walk(1000, {a, b}));
  b.oper = 2;
  b.last_change = 1500;
  EXPECT_EQ(flaps(agent.render(walk(2000, {a, b})), "Ethernet2"), 1);
  // After a reboot the agent numbers them the other way round.
  a.index = 7;
  b.index = 3;
  const auto p = agent.render(walk(2500, {b, a}));
  EXPECT_TRUE(p.renumbered);
  EXPECT_THAT(p.body, HasSubstr("ifOperStatus{ifName=\"Ethernet2\",ifIndex=\"3\"} 2\n"));
  EXPECT_EQ(flaps(p, "Ethernet2"), 1);
  EXPECT_EQ(flaps(p, "Ethernet1"), 0);
}

TEST(SnmpAgentState, ThirtyTwoBitCountersOnlyWhereNoHcCounterIs) {
  SnmpAgentState agent;
  Row old;
  old.in32 = 4294967000;
  const auto p = agent.render(walk(1000, {old}));
  EXPECT_TRUE(agent.wants_low_counters());
  EXPECT_THAT(p.body, HasSubstr("ifInOctets{ifName=\"Ethernet1\",ifIndex=\"1\"} 4294967000\n"));
  EXPECT_EQ(mapped(p.body, {"Ethernet1"}).at("Ethernet1").get(Counter::rx_bytes), 4294967000.0);
  Row hc;
  hc.hc_in = 123456789012345;
  hc.in32 = 5;
  const auto q = agent.render(walk(2000, {hc}));
  EXPECT_EQ(mapped(q.body, {"Ethernet1"}).at("Ethernet1").get(Counter::rx_bytes), 123456789012345.0);
  EXPECT_THAT(q.body, Not(HasSubstr("ifInOctets{")));
}

TEST(SnmpAgentState, ValuesOfTheWrongKindAndNamelessInterfacesAreLeftOutAndSaid) {
  SnmpAgentState agent;
  auto v = walk(1000, {row(1, "Ethernet1"), row(2, "bad\"name"), row(3, "")});
  // An agent answering a string where a counter belongs.
  for (auto& x : v) {
    if (x.oid == oid_of("1.3.6.1.2.1.2.2.1.10.1")) {
      x.type = SnmpValue::Type::octets;
      x.text = "12";
    }
  }
  SnmpValue stray;  // an OID of no column walked
  stray.oid = oid_of("1.3.6.1.2.1.2.2.1.99.1");
  stray.type = SnmpValue::Type::counter32;
  v.push_back(stray);
  SnmpValue gone;  // noSuchInstance in a column
  gone.oid = oid_of("1.3.6.1.2.1.10.7.2.1.3.1");
  gone.type = SnmpValue::Type::no_such;
  v.push_back(gone);
  const auto p = agent.render(v);
  EXPECT_EQ(p.interfaces, 1u);
  EXPECT_EQ(p.problem, "ifInOctets of ifIndex 1 is not a number");
  EXPECT_THAT(p.body, Not(HasSubstr("ifInOctets")));
  EXPECT_THAT(p.body, Not(HasSubstr("bad")));
  EXPECT_THAT(p.body, Not(HasSubstr("dot3StatsFCSErrors")));
  EXPECT_THAT(p.body, HasSubstr("ifOperStatus{ifName=\"Ethernet1\",ifIndex=\"1\"} 1\n"));
  const auto q = agent.render(walk(2000, {row(2, "bad\"name")}));
  EXPECT_EQ(q.interfaces, 0u);
  EXPECT_EQ(q.body, "");
  EXPECT_EQ(q.problem, "1 interface(s) without a usable ifName were left out");
  EXPECT_EQ(agent.render({}).interfaces, 0u);
}

TEST(SnmpAgentState, WithoutSysUpTimeOnlyAStateChangeIsAFlap) {
  // An SNMPv3 view without the system group: a restart cannot be told from sysUpTime, so an
  // ifLastChange that moved is not taken for a flap (a restart moves every port's).
  SnmpAgentState agent;
  auto no_uptime = [](std::vector<SnmpValue> v) {
    v.erase(v.begin());
    return v;
  };
  agent.render(no_uptime(walk(1000, {Row{}})));
  Row moved;
  moved.last_change = 5000;
  EXPECT_EQ(flaps(agent.render(no_uptime(walk(2000, {moved}))), "Ethernet1"), 0);
  Row down = moved;
  down.oper = 2;
  EXPECT_EQ(flaps(agent.render(no_uptime(walk(3000, {down}))), "Ethernet1"), 1);
  // With sysUpTime, ifLastChange going back is a restart's new clock, not a flap.
  SnmpAgentState with;
  with.render(walk(1000, {moved}));
  Row back;
  back.last_change = 40;
  EXPECT_EQ(flaps(with.render(walk(2000, {back})), "Ethernet1"), 0);
}

TEST(SnmpAgentState, ANameGivenTwiceKeepsTheFirstInterfaceAndSaysSo) {
  SnmpAgentState agent;
  Row a = row(1, "Ethernet1"), b = row(9, "Ethernet1");
  b.oper = 2;
  const auto p = agent.render(walk(1000, {a, b}));
  EXPECT_EQ(p.interfaces, 1u);
  EXPECT_EQ(p.problem, "ifName \"Ethernet1\" is named twice (again at ifIndex 9); the second is left out");
  EXPECT_THAT(p.body, HasSubstr("ifOperStatus{ifName=\"Ethernet1\",ifIndex=\"1\"} 1\n"));
  EXPECT_THAT(p.body, Not(HasSubstr("ifIndex=\"9\"")));
  const auto q = agent.render(walk(2000, {a, b}));
  EXPECT_FALSE(q.renumbered);
  EXPECT_EQ(flaps(q, "Ethernet1"), 0);
}

TEST(SnmpAgentState, ThirtyTwoBitTwinsStayWalkedWhileAnyHcColumnIsMissing) {
  // HC octets but no HC packet counters: the 32-bit packet counters are still needed.
  SnmpAgentState agent;
  Row r;
  r.hc_in = 5;
  agent.render(walk(1000, {r}));
  EXPECT_TRUE(agent.wants_low_counters());
}

TEST(SnmpCredentials, ABrokenFileIsPlacedButNotQuoted) {
  auto c = SnmpCredentials::parse("{\"version\": \"2c\", \"community\": \"s3cret\u0001", "c.json");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.error(), ::testing::StartsWith("c.json: line 1, column "));
  EXPECT_THAT(c.error(), HasSubstr("invalid JSON (the text is not shown: it may hold a secret)"));
  EXPECT_THAT(c.error(), Not(HasSubstr("s3cret")));
}

TEST(SnmpAgentState, AnInterfaceNamedWithNothingReadIsNotCounted) {
  SnmpAgentState agent;
  SnmpValue name;
  name.oid = oid_of("1.3.6.1.2.1.31.1.1.1.1.5");
  name.type = SnmpValue::Type::octets;
  name.text = "Ethernet5";
  const auto p = agent.render({&name, 1});
  EXPECT_EQ(p.interfaces, 0u);
  EXPECT_EQ(p.values, 0u);
  EXPECT_EQ(p.body, "");
}

TEST(SnmpColumns, EveryColumnIsMappedOrRenderedForTheWalkCommand) {
  const CounterMap map = CounterMap::load_file(data_dir() + "/counter_map.json");
  for (const auto& c : snmp_columns()) {
    if (c.name == "ifName" || c.name == "ifLastChange" || c.name == "ifHighSpeed") continue;
    if (c.table != SnmpColumn::Table::interface) continue;  // read into the kSensor* objects below
    EXPECT_NE(map.snmp(c.name), nullptr) << c.name << " is walked but counter_map.json has no snmp rule for it";
  }
  EXPECT_NE(map.snmp(kSnmpFlapObject), nullptr);
  for (const auto o : {kSensorRxPowerMw, kSensorTxPowerMw, kSensorRxPowerDbm, kSensorTxPowerDbm, kSensorBiasMa,
                       kSensorTemperatureC}) {
    EXPECT_NE(map.snmp(o), nullptr) << o << " is rendered but counter_map.json has no snmp rule for it";
  }
}

// --- notifications ------------------------------------------------------------------------

SnmpValue var(const std::string& oid, SnmpValue::Type t, uint64_t n = 0, std::string text = "") {
  SnmpValue x;
  x.oid = oid_of(oid);
  x.type = t;
  x.number = n;
  x.text = std::move(text);
  return x;
}
SnmpValue trap_oid(const std::string& which) {
  SnmpValue x = var("1.3.6.1.6.3.1.1.4.1.0", SnmpValue::Type::object_id);
  x.object = oid_of(which);
  return x;
}
// What snmpd sends for linkDown/linkUp (RFC 2863: ifIndex, ifAdminStatus, ifOperStatus).
std::vector<SnmpValue> link_trap(const std::string& which, uint32_t index) {
  const std::string i = "." + std::to_string(index);
  return {var("1.3.6.1.2.1.1.3.0", SnmpValue::Type::timeticks, 12345), trap_oid(which),
          var("1.3.6.1.2.1.2.2.1.1" + i, SnmpValue::Type::integer, index),
          var("1.3.6.1.2.1.2.2.1.7" + i, SnmpValue::Type::integer, 1),
          var("1.3.6.1.2.1.2.2.1.8" + i, SnmpValue::Type::integer, 2)};
}

Result<SnmpLinkTrap> decode(const std::vector<SnmpValue>& v) { return decode_link_trap(v); }

TEST(SnmpLinkTrap, LinkDownAndLinkUpNameTheirInterface) {
  auto down = decode_link_trap(link_trap("1.3.6.1.6.3.1.1.5.3", 7));
  ASSERT_TRUE(down.ok()) << down.error();
  EXPECT_EQ(down->kind, SnmpLinkTrap::Kind::link_down);
  EXPECT_EQ(down->if_index, 7u);
  EXPECT_EQ(down->if_name, "");
  EXPECT_EQ(down->uptime, 12345u);
  auto up = decode_link_trap(link_trap("1.3.6.1.6.3.1.1.5.4", 12));
  ASSERT_TRUE(up.ok()) << up.error();
  EXPECT_EQ(up->kind, SnmpLinkTrap::Kind::link_up);
  EXPECT_EQ(up->if_index, 12u);
  // Some agents add ifName: it names the port without the last poll's help.
  auto named = link_trap("1.3.6.1.6.3.1.1.5.3", 3);
  named.push_back(var("1.3.6.1.2.1.31.1.1.1.1.3", SnmpValue::Type::octets, 0, "Ethernet3"));
  auto n = decode_link_trap(named);
  ASSERT_TRUE(n.ok()) << n.error();
  EXPECT_EQ(n->if_name, "Ethernet3");
  // Without ifIndex's own variable, its instance in ifOperStatus names it.
  auto bare = decode({trap_oid("1.3.6.1.6.3.1.1.5.3"), var("1.3.6.1.2.1.2.2.1.8.9", SnmpValue::Type::integer, 2)});
  ASSERT_TRUE(bare.ok()) << bare.error();
  EXPECT_EQ(bare->if_index, 9u);
}

TEST(SnmpLinkTrap, OtherNotificationsAreOtherAndBrokenOnesSayWhat) {
  auto cold = decode({trap_oid("1.3.6.1.6.3.1.1.5.1")});  // coldStart
  ASSERT_TRUE(cold.ok());
  EXPECT_EQ(cold->kind, SnmpLinkTrap::Kind::other);
  EXPECT_EQ(decode({var("1.3.6.1.2.1.1.3.0", SnmpValue::Type::timeticks, 1)}).error(),
            "no snmpTrapOID.0 among its 1 variables");
  EXPECT_EQ(decode({var("1.3.6.1.6.3.1.1.4.1.0", SnmpValue::Type::octets, 0, "linkDown")}).error(),
            "snmpTrapOID.0 is not an OBJECT IDENTIFIER");
  EXPECT_EQ(decode({trap_oid("1.3.6.1.6.3.1.1.5.3")}).error(),
            "linkDown names no interface (no ifIndex, ifOperStatus or ifName)");
  EXPECT_EQ(decode({trap_oid("1.3.6.1.6.3.1.1.5.4"), var("1.3.6.1.2.1.2.2.1.1.0", SnmpValue::Type::integer, 0)})
                .error(),
            "linkUp: ifIndex 0 is out of range (1..2147483647)");
  EXPECT_EQ(decode({}).error(), "no snmpTrapOID.0 among its 0 variables");
}

TEST(SnmpAgentState, NamesAnIfIndexFromItsLatestPoll) {
  SnmpAgentState agent;
  EXPECT_EQ(agent.name_of(1), std::nullopt);  // before any poll
  agent.render(walk(1000, {row(1, "Ethernet1"), row(2, "Ethernet2")}));
  EXPECT_EQ(agent.name_of(2), "Ethernet2");
  EXPECT_EQ(agent.name_of(3), std::nullopt);
  // Renumbered after a reboot: the new numbering is the one that names.
  agent.render(walk(10, {row(5, "Ethernet1"), row(1, "Ethernet2")}));
  EXPECT_EQ(agent.name_of(1), "Ethernet2");
  EXPECT_EQ(agent.name_of(5), "Ethernet1");
  EXPECT_EQ(agent.name_of(2), std::nullopt);
}

// --- optics from ENTITY-SENSOR-MIB ---------------------------------------------------------

// A switch's entities as one vendor lays them out: port 1000 (an interface: ifIndex 1),
// its transceiver 1001, and the transceiver's sensors; an ASIC sensor under the chassis.
std::vector<SnmpValue> entity_walk(int64_t rx_lane2 = 3981) {
  std::vector<SnmpValue> v = walk(1000, {row(1, "Ethernet1")});
  auto add = [&](const std::string& oid, SnmpValue::Type t, int64_t n, std::string text = "") {
    v.push_back(var(oid, t, static_cast<uint64_t>(n), std::move(text)));
  };
  SnmpValue alias = var("1.3.6.1.2.1.47.1.3.2.1.2.1000.0", SnmpValue::Type::object_id);
  alias.object = oid_of("1.3.6.1.2.1.2.2.1.1.1");
  v.push_back(alias);
  add("1.3.6.1.2.1.47.1.1.1.1.4.1000", SnmpValue::Type::integer, 1);
  add("1.3.6.1.2.1.47.1.1.1.1.4.1001", SnmpValue::Type::integer, 1000);
  add("1.3.6.1.2.1.47.1.1.1.1.7.1001", SnmpValue::Type::octets, 0, "Ethernet1 transceiver");
  struct S {
    int entity;
    const char* name;
    int type, scale, precision;
    int64_t value;
    int status = 1;
    const char* units = "";
  };
  const S sensors[] = {
      {1011, "DOM Rx Power Lane 1", 6, 7, 1, 5012},           // 501.2 uW
      {1012, "DOM Rx Power Lane 2", 6, 7, 1, rx_lane2},       // 398.1 uW: the weakest
      {1013, "DOM Tx Power", 6, 7, 1, 10000},                 // 1 mW
      {1014, "DOM Tx Bias Current", 5, 8, 3, 6500},           // 6.5 mA
      {1015, "DOM Temperature", 8, 9, 1, 412},                // 41.2 C
      {1016, "DOM Rx Power Lane 3", 6, 7, 1, 0, 2},           // unavailable: left out
      {2000, "Switch ASIC temperature", 8, 9, 0, 77},         // not under a port
  };
  for (const S& x : sensors) {
    const std::string e = "." + std::to_string(x.entity);
    add("1.3.6.1.2.1.47.1.1.1.1.4" + e, SnmpValue::Type::integer, x.entity == 2000 ? 1 : 1001);
    add("1.3.6.1.2.1.47.1.1.1.1.7" + e, SnmpValue::Type::octets, 0, x.name);
    add("1.3.6.1.2.1.99.1.1.1.1" + e, SnmpValue::Type::integer, x.type);
    add("1.3.6.1.2.1.99.1.1.1.2" + e, SnmpValue::Type::integer, x.scale);
    add("1.3.6.1.2.1.99.1.1.1.3" + e, SnmpValue::Type::integer, x.precision);
    add("1.3.6.1.2.1.99.1.1.1.4" + e, SnmpValue::Type::integer, x.value);
    add("1.3.6.1.2.1.99.1.1.1.5" + e, SnmpValue::Type::integer, x.status);
  }
  // A sensor reporting dBm itself (type other, units "dBm"): -5.12 dBm, weaker still.
  add("1.3.6.1.2.1.47.1.1.1.1.4.1017", SnmpValue::Type::integer, 1001);
  add("1.3.6.1.2.1.47.1.1.1.1.7.1017", SnmpValue::Type::octets, 0, "Rx Power Lane 4");
  add("1.3.6.1.2.1.99.1.1.1.1.1017", SnmpValue::Type::integer, 1);
  add("1.3.6.1.2.1.99.1.1.1.2.1017", SnmpValue::Type::integer, 9);
  add("1.3.6.1.2.1.99.1.1.1.3.1017", SnmpValue::Type::integer, 2);
  add("1.3.6.1.2.1.99.1.1.1.4.1017", SnmpValue::Type::integer, -512);
  add("1.3.6.1.2.1.99.1.1.1.6.1017", SnmpValue::Type::octets, 0, "dBm");
  return v;
}

TEST(SnmpAgentState, OpticsSensorsUnderAPortBecomeItsReadings) {
  SnmpAgentState agent;
  const auto& cols = snmp_columns();
  auto wants = [&](std::string_view name) {
    for (const auto& c : cols) {
      if (c.name == name) return agent.wants(c);
    }
    ADD_FAILURE() << name;
    return false;
  };
  EXPECT_TRUE(wants("entPhysicalContainedIn"));  // a new agent: its entities are read
  EXPECT_TRUE(wants("entPhySensorValue"));
  const auto p = agent.render(entity_walk());
  EXPECT_EQ(p.sensors, 6u) << p.body;
  EXPECT_EQ(agent.port_sensors(), 7u);  // the unavailable lane is one (unread); the ASIC's is no port's
  EXPECT_NE(p.body.find("entSensorRxPowerMilliwatts{ifName=\"Ethernet1\",ifIndex=\"1\",sensor=\"1012\"} 0.3981"),
            std::string::npos)
      << p.body;
  EXPECT_EQ(p.body.find("sensor=\"2000\""), std::string::npos);
  EXPECT_EQ(p.body.find("sensor=\"1016\""), std::string::npos);
  const PortSample s = mapped(p.body, {"Ethernet1"}).at("Ethernet1");
  EXPECT_NEAR(s.get(Counter::rx_power_dbm), -5.12, 1e-9);  // the weakest lane, whatever its unit
  EXPECT_NEAR(s.get(Counter::tx_power_dbm), 0.0, 1e-9);
  EXPECT_NEAR(s.get(Counter::laser_bias_ma), 6.5, 1e-9);
  EXPECT_NEAR(s.get(Counter::temperature_c), 41.2, 1e-9);
  // Next polls: the layout is known; readings every kSensorEveryPolls polls.
  EXPECT_FALSE(wants("entPhysicalContainedIn"));
  EXPECT_FALSE(wants("entPhySensorValue"));
  for (uint64_t i = 1; i < kSensorEveryPolls; ++i) EXPECT_EQ(agent.render(walk(1000 + i, {row(1, "Ethernet1")})).sensors, 0u);
  EXPECT_TRUE(wants("entPhySensorValue"));
  EXPECT_FALSE(wants("entPhysicalContainedIn"));
  const auto again = agent.render(entity_walk(1995));  // lane 2 now 199.5 uW: -7.0 dBm
  EXPECT_EQ(again.sensors, 6u);
  EXPECT_NEAR(mapped(again.body, {"Ethernet1"}).at("Ethernet1").get(Counter::rx_power_dbm), 10 * std::log10(0.1995), 1e-9);
}

TEST(SnmpAgentState, AnAgentWithoutSensorsIsNotAskedForThemEveryPoll) {
  SnmpAgentState agent;
  const SnmpColumn* value = nullptr;
  for (const auto& c : snmp_columns()) {
    if (c.name == "entPhySensorValue") value = &c;
  }
  ASSERT_NE(value, nullptr);
  EXPECT_TRUE(agent.wants(*value));
  EXPECT_EQ(agent.render(walk(1000, {row(1, "Ethernet1")})).sensors, 0u);
  for (uint64_t i = 1; i < 2 * kSensorEveryPolls; ++i) {
    EXPECT_FALSE(agent.wants(*value)) << i;
    agent.render(walk(1000 + i, {row(1, "Ethernet1")}));
  }
  // A restart (sysUpTime back): its entities are read again on the next poll.
  agent.render(walk(5, {row(1, "Ethernet1")}));
  EXPECT_TRUE(agent.wants(*value));
}

// A notification is news once: the same again (a resent inform, a replayed trap: the same
// sysUpTime) is a duplicate, and one sent before the agent's latest poll read its
// interfaces was counted by that poll.
TEST(SnmpAgentState, JudgesNotificationsAgainstItsPollsAndEachOther) {
  using N = SnmpAgentState::Notification;
  SnmpAgentState agent;
  EXPECT_EQ(agent.judge_notification(1, false, 500), N::fresh);  // never polled: nothing to compare with
  agent.render(walk(1000, {row(1, "Ethernet1")}));
  EXPECT_EQ(agent.judge_notification(1, false, 900), N::before_poll);
  EXPECT_EQ(agent.judge_notification(1, false, 1000), N::before_poll);
  EXPECT_EQ(agent.judge_notification(1, false, 1100), N::fresh);
  EXPECT_EQ(agent.judge_notification(1, false, 1100), N::duplicate);
  EXPECT_EQ(agent.judge_notification(1, true, 1100), N::fresh);   // the linkUp of the same moment
  EXPECT_EQ(agent.judge_notification(2, false, 1100), N::fresh);  // another interface
  EXPECT_EQ(agent.judge_notification(1, false, 1200), N::fresh);
  EXPECT_EQ(agent.judge_notification(1, false, std::nullopt), N::fresh);  // no sysUpTime: cannot tell
}

}  // namespace
}  // namespace medic::telemetry
