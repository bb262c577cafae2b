// A flood of incidents in one poll (here 36 links down at once, three at most per device so
// that each is a link incident, not a device's): each opened incident used to be snapshotted
// in the poll that opened it, and every snapshot named every open incident, so the 6,458
// false incidents of a zone32k load run held the poll loop for 175 s and made every device
// look stale. Now at most --incident-snapshots are taken a poll (8 here), the rest are
// counted in medic_snapshots_skipped_total and logged, and every incident is still recorded.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "common/http_client.h"
#include "tests/e2e/e2e_fixture.h"
#include "tests/support/testing.h"

namespace medic {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

TEST(E2EFlood, PastTheBudgetIncidentSnapshotsAreCountedNotTakenAndNothingIsLost) {
  curl_global_setup();
  testing::TempDir dir;
  testing::TestDatabase tdb;
  HttpClient http;
  ASSERT_NO_FATAL_FAILURE(write_demo_topology(dir));
  // 36 links, no device with more than three of them, down at 4 s.
  const json faults = links_down(dir, 1000, 3, 4);
  ASSERT_EQ(faults.size(), 36u);
  DemoFabsim fabsim;
  ASSERT_NO_FATAL_FAILURE(fabsim.start(dir, json{{"faults", faults}}.dump()));
  testing::Process medicd(MEDIC_MEDICD_BIN, {"--topology", fabsim.exported, "--db", tdb.url(), "--poll-interval", "0.5",
                                             "--no-probe", "--incident-snapshots", "8", "--http", "127.0.0.1:0",
                                             "--run-for", "240"});
  const std::string api = api_of(medicd);
  ASSERT_FALSE(api.empty()) << medicd.output();
  auto link_incidents = [&] { return try_scalar(tdb, "SELECT count(*) FROM incidents WHERE link IS NOT NULL"); };
  ASSERT_TRUE(testing::eventually([&] { return link_incidents() == "36"; }, 60s))
      << link_incidents() << "\n"
      << medicd.output();
  // The cycle that recorded them is over once the next one has begun.
  const auto cycles = metric(http, api, "medic_cycles_total");
  ASSERT_TRUE(cycles);
  ASSERT_TRUE(testing::eventually(
      [&] {
        const auto c = metric(http, api, "medic_cycles_total");
        return c && *c >= *cycles + 2;
      },
      30s));
  // Every incident recorded; each has its snapshot or was counted skipped; at most 8 a
  // poll, so with 36 opened in at most two polls (a poll may straddle the 4 s), 20 or more
  // were skipped. (Snapshots are stored off the poll loop: counted once none waits.)
  ASSERT_TRUE(testing::eventually([&] { return metric(http, api, "medic_snapshots_queued") == 0; }, 30s));
  const int snapshots = std::stoi(tdb.scalar("SELECT count(*) FROM snapshots WHERE scope = 'incident'"));
  const auto skipped = metric(http, api, "medic_snapshots_skipped_total");
  ASSERT_TRUE(skipped);
  EXPECT_EQ(snapshots + static_cast<int>(*skipped), 36);
  EXPECT_GE(*skipped, 20);
  EXPECT_EQ(metric(http, api, "medic_snapshots_total"), snapshots);
  // Each snapshot is of its own incident's link.
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM snapshots s JOIN incidents i ON i.id = s.incident_id "
                       "WHERE s.scope = 'incident' AND s.data->>'link' = i.link"),
            std::to_string(snapshots));
  EXPECT_THAT(medicd.output(), ::testing::HasSubstr("incidents opened in one poll: snapshots taken of the first 8,"));
  EXPECT_EQ(metric(http, api, "medic_incidents_opened_total"), 36) << "recorded together, each counted once";
  EXPECT_EQ(metric(http, api, "medic_db_errors_total"), 0);
  EXPECT_EQ(metric(http, api, "medic_snapshots_unstored_total"), 0);
}

}  // namespace
}  // namespace medic
