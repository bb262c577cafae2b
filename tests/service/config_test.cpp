#include "common/files.h"
#include "service/config.h"

#include <gtest/gtest.h>

namespace medic::service {
namespace {

DaemonSettings good() {
  DaemonSettings s;
  s.topology_path = "fabric.json";
  s.db_url = "postgresql://127.0.0.1/medic";
  return s;
}

std::string error_of(DaemonSettings s) {
  try {
    DaemonConfig c(std::move(s));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(DaemonConfig, DefaultsAreValid) {
  const DaemonConfig c(good());
  EXPECT_EQ(c.settings().counter_map_path, data_dir() + "/counter_map.json");
  EXPECT_EQ(c.poll_interval(), std::chrono::seconds(1));
  EXPECT_EQ(c.settings().detectors_path, data_dir() + "/detectors.json");
  EXPECT_EQ(c.triage().device_fault_links, 4);
  EXPECT_EQ(c.triage().reopen_window, std::chrono::hours(24));
}

TEST(DaemonConfig, EveryBadSettingIsNamed) {
  auto s = good();
  s.topology_path.clear();
  EXPECT_EQ(error_of(s), "--topology is required");
  s = good();
  s.db_url.clear();
  EXPECT_EQ(error_of(s), "no database: pass --db URL or set MEDIC_DB_URL");
  s = good();
  s.poll_interval_s = 0;
  EXPECT_EQ(error_of(s), "--poll-interval must be within [0.05, 3600] seconds");
  s = good();
  s.scrape_timeout_s = -1;
  EXPECT_EQ(error_of(s), "--scrape-timeout must be within [0.05, 600] seconds");
  s = good();
  s.scrape_concurrency = 0;
  EXPECT_EQ(error_of(s), "--scrape-concurrency must be within [1, 4096]");
  s = good();
  s.device_fault_links = 1;
  EXPECT_EQ(error_of(s), "--device-fault-links must be within [2, 100000]");
  s = good();
  s.reopen_window_s = -1;
  EXPECT_EQ(error_of(s), "--reopen-window must be within [0, 7776000] seconds");
  s = good();
  s.backoff_max_s = 0.5;
  EXPECT_EQ(error_of(s), "--backoff-max must be within [poll interval, 3600] seconds");
  s = good();
  s.run_for_s = -5;
  EXPECT_EQ(error_of(s), "--run-for must not be negative");
  s = good();
  s.http_listen = "localhost";
  EXPECT_EQ(error_of(s), "--http localhost: expected ADDR:PORT, e.g. 127.0.0.1:9400");
}

}  // namespace
}  // namespace medic::service
