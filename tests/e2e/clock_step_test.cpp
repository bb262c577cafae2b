// medicd's wall clock stepped back by an hour, then forward by two, then back to true, as an
// NTP step does, while a drain is being verified and again during the validation soak after
// the repair. medicd runs under Debian's libfaketime (LD_PRELOAD; CLOCK_REALTIME only,
// driven from a file this test rewrites); PostgreSQL and fabsim keep the real clock.
//  - no negative stage time: the incident's recorded times are in order, every action ends
//    no earlier than its intent;
//  - no premature validation pass: the soak lasts at least its configured length by the
//    database server's own clock (a trigger of the test's logs each state change with
//    clock_timestamp()), less kRecordingS: the server stamps a state when medicd's write
//    reaches it, and medicd starts the soak before its two writes that record 'validating'
//    but records 'validated' with one, so the server sees the soak about a write shorter
//    than it was (a fresh-clone run of 4392f2f under load saw 14.995 s of a 15 s soak).
//    A soak timed by the stepped wall clock would end at the +7200 s step, 2 s in;
//  - no stuck timer: the drain is verified, not rolled back, and the incident is closed
//    within a bound after the soak;
//  - the poll-cycle and fault-to-drain histograms hold no negative observation, and the
//    fault-to-drain latency is the real one, not an hour more or less;
//  - /healthz stays 200 through every step.
// Each step is confirmed before the test goes on: the leader row's heartbeat, which medicd
// writes with its own clock every second, must show the offset (or the test proves nothing).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/http_client.h"
#include "tests/e2e/e2e_fixture.h"
#include "tests/support/testing.h"

namespace medic {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kLink = "rtsw0001:eth5--ctsw001:eth1";
constexpr const char* kFaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
constexpr int kSoakS = 15;
constexpr double kRecordingS = 0.5;  // what writing two state changes may add or take away

std::string scenario() {
  return json{{"faults",
               {{{"kind", "flap"}, {"link", "rtsw0001:eth5"}, {"at_s", 3}, {"count", 8}, {"period_s", 0.5},
                 {"down_s", 0.15}}}}}
      .dump(1);
}

class E2EClockStep : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(kFaketime)) << kFaketime << " missing (scripts/setup installs libfaketime)";
    curl_global_setup();
    ASSERT_NO_FATAL_FAILURE(write_demo_topology(dir));
    step("+0");
  }

  // medicd's wall clock from now on: real time plus `offset` ("-3600", "+7200", "+0").
  // libfaketime reads the file at every call (FAKETIME_NO_CACHE), so the step is at once.
  void step(const std::string& offset) {
    const std::string tmp = dir.file("faketime.tmp");
    testing::write_file(tmp, offset + "\n");
    std::filesystem::rename(tmp, dir.file("faketime"));  // never a half-written file
  }

  // How far medicd's clock is from the database server's, by the heartbeat medicd writes
  // into the leader row with its own clock every second (nullopt while unknown).
  std::optional<double> skew() {
    const std::string s = try_scalar(*tdb, "SELECT extract(epoch FROM heartbeat - now()) FROM leader");
    if (s.empty()) return std::nullopt;
    return std::stod(s);
  }

  // Steps medicd's clock, waits until its heartbeat shows the offset, then holds it for
  // `hold` more, asking /healthz all along.
  void step_and_hold(const std::string& offset, double expect_s, std::chrono::milliseconds hold) {
    step(offset);
    const bool seen = testing::eventually(
        [&] {
          check_health();
          const auto s = skew();
          return s && std::abs(*s - expect_s) < 60;
        },
        20s);
    ASSERT_TRUE(seen) << "medicd's clock did not move to " << offset << " (libfaketime not in effect?): skew "
                      << skew().value_or(NAN) << "\n"
                      << medicd->output();
    const auto until = std::chrono::steady_clock::now() + hold;
    while (std::chrono::steady_clock::now() < until) {
      check_health();
      std::this_thread::sleep_for(100ms);
    }
  }

  void check_health() {
    const auto [status, body] = healthz(http, api);
    if (status != 200) unhealthy.push_back(std::to_string(status) + " " + body);
  }

  // State changes by the database server's clock, logged by a trigger of the test's.
  void log_state_changes() {
    ASSERT_TRUE(testing::eventually([&] { return !try_scalar(*tdb, "SELECT count(*) FROM incidents").empty(); }, 60s))
        << "medicd did not migrate its database:\n"
        << medicd->output();
    tdb->exec(
        "CREATE TABLE e2e_state_log (incident_id bigint, state text, at timestamptz NOT NULL DEFAULT clock_timestamp());"
        "CREATE FUNCTION e2e_log_state() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "  IF TG_OP = 'INSERT' OR NEW.state IS DISTINCT FROM OLD.state THEN "
        "    INSERT INTO e2e_state_log (incident_id, state) VALUES (NEW.id, NEW.state); "
        "  END IF; RETURN NEW; END $$;"
        "CREATE TRIGGER e2e_log_state AFTER INSERT OR UPDATE ON incidents FOR EACH ROW EXECUTE FUNCTION e2e_log_state();");
  }

  testing::TempDir dir;
  std::unique_ptr<testing::TestDatabase> tdb = std::make_unique<testing::TestDatabase>();
  HttpClient http;
  std::unique_ptr<testing::Process> medicd;
  std::string api;
  std::vector<std::string> unhealthy;
};

TEST_F(E2EClockStep, StepsBackAndForwardNeitherHurryNorHoldTheDrainAndTheSoak) {
  auto policy = json::parse(testing::read_file(std::string(MEDIC_SOURCE_DIR) + "/data/remediation.json"));
  policy["validation"]["soak_s"] = kSoakS;
  testing::write_file(dir.file("policy.json"), policy.dump());
  // Flap damping that forgets within seconds, so the repaired link may be validated.
  auto detectors = json::parse(testing::read_file(std::string(MEDIC_SOURCE_DIR) + "/data/detectors.json"));
  detectors["flap"]["half_life_s"] = 3;
  testing::write_file(dir.file("detectors.json"), detectors.dump());

  DemoFabsim fabsim;
  ASSERT_NO_FATAL_FAILURE(fabsim.start(dir, scenario()));
  medicd = std::make_unique<testing::Process>(
      MEDIC_MEDICD_BIN,
      std::vector<std::string>{"--topology", fabsim.exported, "--db", tdb->url(), "--no-probe", "--http", "127.0.0.1:0",
                               "--poll-interval", "1", "--policy", dir.file("policy.json"), "--detectors",
                               dir.file("detectors.json"), "--run-for", "200"},
      std::vector<std::string>{std::string("LD_PRELOAD=") + kFaketime, "FAKETIME_TIMESTAMP_FILE=" + dir.file("faketime"),
                               "FAKETIME_NO_CACHE=1", "FAKETIME_DONT_FAKE_MONOTONIC=1"});
  api = api_of(*medicd);
  ASSERT_FALSE(api.empty()) << medicd->output();
  ASSERT_NO_FATAL_FAILURE(log_state_changes());
  ASSERT_TRUE(testing::eventually([&] { return leads(http, api, 1); }, 30s)) << medicd->output();
  ASSERT_TRUE(testing::eventually([&] { return skew() && std::abs(*skew()) < 5; }, 10s)) << "skew " << skew().value_or(NAN);

  // 1. The flap is found; while its drain is under way (the switch answers at the next
  //    poll, the traffic is verified over the two after), back an hour, forward two, true.
  const std::string where = std::string("link = '") + kLink + "'";
  std::string id;
  ASSERT_TRUE(testing::eventually(
      [&] {
        id = try_scalar(*tdb, "SELECT id FROM incidents WHERE " + where);
        return !id.empty();
      },
      60s))
      << medicd->output() << "\nfabsim:\n" << fabsim.output();
  const std::string drain_when_stepped = try_scalar(
      *tdb, "SELECT coalesce(string_agg(state, ','), 'none') FROM actions WHERE kind = 'drain' AND state <> 'refused'");
  // The steps fall inside the drain: it has not ended yet (not begun, or its intent written
  // and the switch or the traffic check still to come).
  ASSERT_TRUE(drain_when_stepped == "none" || drain_when_stepped == "intent" || drain_when_stepped == "applied")
      << "the drain was " << drain_when_stepped << " before the clock stepped: the steps would test nothing";
  ASSERT_NO_FATAL_FAILURE(step_and_hold("-3600", -3600, 3s));
  ASSERT_NO_FATAL_FAILURE(step_and_hold("+7200", 7200, 3s));
  // ... and it began while the clock was stepped.
  EXPECT_NE(try_scalar(*tdb, "SELECT coalesce(string_agg(state, ','), 'none') FROM actions WHERE kind = 'drain' AND "
                             "state <> 'refused'"),
            "none")
      << "no drain began while the clock was stepped";
  ASSERT_NO_FATAL_FAILURE(step_and_hold("+0", 0, 1s));
  ASSERT_TRUE(testing::eventually(
      [&] { return try_scalar(*tdb, "SELECT state FROM incidents WHERE id = " + id) == "repair_requested"; }, 40s))
      << try_scalar(*tdb, "SELECT state || ' ' || coalesce(blocked_reason, '') FROM incidents WHERE id = " + id) << "\n"
      << medicd->output();
  // Verified, not rolled back for a verify window that seemed to have passed.
  EXPECT_EQ(tdb->scalar("SELECT string_agg(kind || ' ' || state, ',') FROM actions WHERE " + where), "drain succeeded")
      << "the drain was " << drain_when_stepped << " when the clock stepped back";

  // 2. Repaired by a person; during the soak, the same steps.
  const auto [st, out] =
      testing::run_command(MEDIC_CLI_BIN, {"incidents", "repaired", id, "--by", "e2e", "--reason", "optic reseated", "--db",
                                           tdb->url()});
  ASSERT_EQ(st, 0) << out;
  ASSERT_TRUE(testing::eventually(
      [&] { return try_scalar(*tdb, "SELECT state FROM incidents WHERE id = " + id) == "validating"; }, 20s))
      << medicd->output();
  ASSERT_NO_FATAL_FAILURE(step_and_hold("-3600", -3600, 2s));
  ASSERT_NO_FATAL_FAILURE(step_and_hold("+7200", 7200, 2s));
  ASSERT_NO_FATAL_FAILURE(step_and_hold("+0", 0, 0s));
  // Not stuck: closed within a bound after the soak.
  ASSERT_TRUE(testing::eventually(
      [&] { return try_scalar(*tdb, "SELECT state FROM incidents WHERE id = " + id) == "closed"; }, 20s + kSoakS * 1s))
      << try_scalar(*tdb, "SELECT state || ' ' || coalesce(blocked_reason, '') FROM incidents WHERE id = " + id) << "\n"
      << medicd->output();

  // No premature pass: from validating to validated took the soak, by the server's clock.
  const std::string soak_s = tdb->scalar(
      "SELECT extract(epoch FROM (SELECT min(at) FROM e2e_state_log WHERE state = 'validated' AND incident_id = " + id +
      ") - (SELECT max(at) FROM e2e_state_log WHERE state = 'validating' AND incident_id = " + id + "))");
  ASSERT_FALSE(soak_s.empty()) << testing::join_lines(tdb->column("SELECT state || ' ' || at FROM e2e_state_log"));
  EXPECT_GE(std::stod(soak_s), kSoakS - kRecordingS) << "validated after " << soak_s << " s of a " << kSoakS << " s soak";
  EXPECT_EQ(testing::join_lines(tdb->column("SELECT state FROM e2e_state_log WHERE incident_id = " + id +
                                            " AND state IN ('validating', 'validated', 'undrained', 'closed') ORDER BY at")),
            "validating\nvalidated\nundrained\nclosed\n");

  // No negative stage time: every recorded time in order.
  EXPECT_EQ(tdb->scalar("SELECT started_at <= detected_at AND detected_at <= mitigated_at AND "
                        "mitigated_at <= repair_requested_at AND repair_requested_at <= repaired_at AND "
                        "repaired_at <= validating_since AND validating_since <= validated_at AND "
                        "validated_at <= undrained_at AND undrained_at <= closed_at FROM incidents WHERE id = " + id),
            "t")
      << testing::join_lines(tdb->column(
             "SELECT concat_ws(' ', started_at, detected_at, mitigated_at, repair_requested_at, repaired_at, "
             "validating_since, validated_at, undrained_at, closed_at) FROM incidents WHERE id = " + id));
  EXPECT_EQ(tdb->scalar("SELECT string_agg(kind || ' ' || state, ',' ORDER BY id) FROM actions WHERE " + where),
            "drain succeeded,undrain succeeded");
  EXPECT_EQ(tdb->scalar("SELECT count(*) FROM actions WHERE result_at < intent_at"), "0");
  EXPECT_EQ(tdb->scalar("SELECT drain_state FROM links WHERE " + std::string("name = '") + kLink + "'"), "undrained");

  // The histograms: no negative observation; the fault-to-drain latency observed once, and
  // the real one (the flap and its drain within seconds), not an hour more or less.
  for (const std::string h : {"medic_poll_cycle_seconds", "medic_fault_to_drain_seconds"}) {
    const auto sum = metric(http, api, h + "_sum");
    ASSERT_TRUE(sum) << h;
    EXPECT_GE(*sum, 0) << h;
  }
  // A negative observation would fall in the lowest bucket; no drain is verified that fast.
  EXPECT_EQ(metric(http, api, "medic_fault_to_drain_seconds_bucket{le=\"0.001\"}"), 0);
  EXPECT_EQ(metric(http, api, "medic_fault_to_drain_seconds_count"), 1);
  EXPECT_LT(metric(http, api, "medic_fault_to_drain_seconds_sum").value_or(1e9), 120);
  EXPECT_EQ(metric(http, api, "medic_drains_rolled_back_total"), 0);
  EXPECT_EQ(metric(http, api, "medic_validations_failed_total"), 0);
  EXPECT_EQ(metric(http, api, "medic_undrains_succeeded_total"), 1);
  EXPECT_TRUE(unhealthy.empty()) << testing::join_lines(unhealthy);
  EXPECT_TRUE(medicd->running());
}

}  // namespace
}  // namespace medic
