// The measurement fails, the fabric does not: end to end on fabsim with the real medicd and
// PostgreSQL, nothing healthy may be drained.
//  - fabsim (every counter endpoint and every reflector) paused with SIGSTOP for 15 s, as
//    the reproducer did at medicd's defaults: no drain, and the few incidents that
//    open name the measurement (prober_fault, telemetry_outage) and close by themselves;
//  - a real gray failure while one reflector is dead and one switch is silent: the gray
//    failure is still found and drained; the reflector is a reflector_fault; nothing else;
//  - one absurd counter sample (2^64 carrier transitions, 1e308 CRC errors): a
//    telemetry_invalid incident on the device, no link incident, no drain.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "common/http_client.h"
#include "tests/e2e/e2e_fixture.h"
#include "tests/support/testing.h"

namespace medic {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class E2EMeasurement : public ::testing::Test {
 protected:
  void SetUp() override {
    curl_global_setup();
    ASSERT_NO_FATAL_FAILURE(write_demo_topology(dir));
  }
  std::string incidents() {
    return testing::join_lines(tdb.column(
        "SELECT i.id || ' ' || i.class || ' ' || i.state || ' ' || coalesce(i.link, i.device, '') || ': ' || i.summary "
        "FROM incidents i ORDER BY i.id"));
  }

  testing::TempDir dir;
  testing::TestDatabase tdb;
  HttpClient http;
};

TEST_F(E2EMeasurement, APausedEmulatorDrainsNothingAndNamesTheMeasurement) {
  DemoFabsim fabsim;
  ASSERT_NO_FATAL_FAILURE(fabsim.start(dir, json{{"faults", json::array()}}.dump()));
  // medicd at its defaults (1 s polls, 10 s probe rounds, a 6-round window).
  testing::Process medicd(MEDIC_MEDICD_BIN, {"--topology", fabsim.exported, "--db", tdb.url(), "--http", "127.0.0.1:0",
                                             "--run-for", "300"});
  const std::string api = api_of(medicd);
  ASSERT_FALSE(api.empty()) << medicd.output();
  // 20 s of a healthy fabric, then the emulator stops for 15 s.
  ASSERT_TRUE(testing::eventually(
      [&] {
        const auto r = metric(http, api, "medic_probe_rounds_total");
        return r && *r >= 2;
      },
      60s))
      << medicd.output();
  std::this_thread::sleep_for(5s);
  EXPECT_EQ(try_scalar(tdb, "SELECT count(*) FROM incidents"), "0") << incidents();
  ASSERT_TRUE(fabsim.process().signal(SIGSTOP));
  std::this_thread::sleep_for(15s);
  ASSERT_TRUE(fabsim.process().signal(SIGCONT));
  // The outage is seen and left out of localization, and the window fills with clean
  // rounds again: 70 s covers the 60 s window and a round.
  ASSERT_TRUE(testing::eventually(
      [&] {
        const auto o = metric(http, api, "medic_probe_outage_rounds_total");
        return o && *o >= 1;
      },
      30s))
      << medicd.output();
  std::this_thread::sleep_for(70s);

  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM actions WHERE kind = 'drain'"), "0") << incidents();
  EXPECT_EQ(metric(http, api, "medic_drains_succeeded_total"), 0);
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents WHERE class NOT IN ('prober_fault', 'telemetry_outage')"), "0")
      << incidents();
  EXPECT_LE(std::stoi(tdb.scalar("SELECT count(*) FROM incidents")), 2) << incidents();
  EXPECT_GE(std::stoi(tdb.scalar("SELECT count(*) FROM incidents WHERE class = 'prober_fault'")), 1) << incidents();
  // Once probes are answered again for three rounds, the prober's incident closed itself.
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents WHERE state NOT IN ('closed')"), "0") << incidents();
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM findings WHERE kind IN ('probe_loss', 'telemetry_stale', 'link_flap', "
                       "'link_down', 'corruption', 'discards') AND severity <> 'info'"),
            "0");
  EXPECT_GE(*metric(http, api, "medic_telemetry_outage_polls_total"), 1);
  EXPECT_EQ(metric(http, api, "medic_db_errors_total"), 0);
}

TEST_F(E2EMeasurement, ARealFaultDuringAPartialMeasurementOutageIsStillFound) {
  DemoFabsim fabsim;
  const json scenario = {
      {"faults",
       {{{"kind", "reflector_down"}, {"device", "ctsw003"}, {"at_s", 0}},
        {{"kind", "silent"}, {"device", "rtsw0005"}, {"at_s", 0}},
        {{"kind", "probe_loss"}, {"end", "rtsw0002:eth6"}, {"at_s", 8}, {"rate", 0.1}}}}};
  ASSERT_NO_FATAL_FAILURE(fabsim.start(dir, scenario.dump()));
  testing::Process medicd(MEDIC_MEDICD_BIN,
                          {"--topology", fabsim.exported, "--db", tdb.url(), "--poll-interval", "0.5", "--probe-round", "1",
                           "--probe-per-round", "20", "--http", "127.0.0.1:0", "--run-for", "240"});
  const std::string api = api_of(medicd);
  ASSERT_FALSE(api.empty()) << medicd.output();
  const std::string gray = "rtsw0002:eth6--ctsw002:eth2";
  ASSERT_TRUE(testing::eventually(
      [&] {
        return try_scalar(tdb, "SELECT class || ' ' || state FROM incidents WHERE link = '" + gray + "'") ==
               "gray_failure repair_requested";
      },
      120s))
      << incidents() << "\n"
      << medicd.output();
  ASSERT_TRUE(testing::eventually(
      [&] { return try_scalar(tdb, "SELECT count(*) FROM incidents WHERE class = 'reflector_fault' AND device = 'ctsw003'") == "1"; },
      60s))
      << incidents();
  // A while longer: nothing else.
  std::this_thread::sleep_for(10s);
  EXPECT_EQ(tdb.column("SELECT link FROM actions WHERE kind = 'drain' ORDER BY id"), std::vector<std::string>{gray})
      << incidents();
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents WHERE link IS NOT NULL AND link <> '" + gray + "'"), "0")
      << incidents();
  // The dead reflector's and the silent switch's links were not blamed.
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM findings WHERE kind = 'probe_loss' AND severity <> 'info' AND "
                       "(link LIKE '%ctsw003%' OR link LIKE '%rtsw0005%')"),
            "0");
  EXPECT_GE(*metric(http, api, "medic_probe_measurement_verdicts_total"), 1);
}

TEST_F(E2EMeasurement, AnAbsurdCounterSampleNeverDrainsALink) {
  DemoFabsim fabsim;
  const json scenario = {
      {"faults",
       {{{"kind", "absurd"}, {"end", "rtsw0001:eth7"}, {"counter", "carrier_changes"}, {"value", 18446744073709551616.0},
         {"at_s", 6}, {"duration_s", 0.6}},
        {{"kind", "absurd"}, {"end", "rtsw0002:eth7"}, {"counter", "carrier_changes"}, {"value", 1e308}, {"at_s", 6},
         {"duration_s", 0.6}},
        {{"kind", "absurd"}, {"end", "rtsw0003:eth8"}, {"counter", "rx_crc_errors"}, {"value", 1e308}, {"at_s", 6},
         {"duration_s", 0.6}}}}};
  ASSERT_NO_FATAL_FAILURE(fabsim.start(dir, scenario.dump()));
  testing::Process medicd(MEDIC_MEDICD_BIN, {"--topology", fabsim.exported, "--db", tdb.url(), "--poll-interval", "0.5",
                                             "--no-probe", "--http", "127.0.0.1:0", "--run-for", "240"});
  const std::string api = api_of(medicd);
  ASSERT_FALSE(api.empty()) << medicd.output();
  ASSERT_TRUE(testing::eventually(
      [&] { return try_scalar(tdb, "SELECT count(*) FROM incidents WHERE class = 'telemetry_invalid'") == "3"; }, 60s))
      << incidents() << medicd.output();
  std::this_thread::sleep_for(5s);
  EXPECT_EQ(tdb.column("SELECT device FROM incidents WHERE class = 'telemetry_invalid' ORDER BY device"),
            (std::vector<std::string>{"rtsw0001", "rtsw0002", "rtsw0003"}));
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents WHERE link IS NOT NULL"), "0") << incidents();
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM actions"), "0");
  EXPECT_GE(*metric(http, api, "medic_samples_implausible_total"), 3);
}

}  // namespace
}  // namespace medic
