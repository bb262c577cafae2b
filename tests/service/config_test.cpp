#include "common/files.h"
#include "service/config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

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
  // Map workers: half the cores, at least 1, at most 8; a number given is kept, 0 included.
  EXPECT_EQ(c.map_workers(), std::clamp<size_t>(std::thread::hardware_concurrency() / 2, 1, 8));
  EXPECT_GE(c.map_workers(), 1u);
  DaemonSettings none = good();
  none.map_workers = 0;
  EXPECT_EQ(DaemonConfig(none).map_workers(), 0u);
  none.map_workers = 12;
  EXPECT_EQ(DaemonConfig(none).map_workers(), 12u);
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
  for (const int workers : {-2, 65}) {
    s = good();
    s.map_workers = workers;
    EXPECT_EQ(error_of(s), "--map-workers must be within [0, 64], or -1 for half the cores") << workers;
  }
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

TEST(DaemonConfig, ASettingErrorSaysFlagValueAndReasonApart) {
  auto s = good();
  s.http_listen = "localhost";
  try {
    DaemonConfig c(s);
    FAIL() << "a bad --http was taken";
  } catch (const SettingError& e) {
    EXPECT_EQ(e.flag(), "--http");
    EXPECT_EQ(e.value(), "localhost");
    EXPECT_EQ(e.reason(), "expected ADDR:PORT, e.g. 127.0.0.1:9400");
  }
  s = good();
  s.poll_interval_s = 0;
  try {
    DaemonConfig c(s);
    FAIL() << "a bad --poll-interval was taken";
  } catch (const SettingError& e) {
    EXPECT_EQ(e.flag(), "--poll-interval");
    EXPECT_EQ(e.value(), "");
    EXPECT_EQ(e.reason(), "must be within [0.05, 3600] seconds");
  }
}

TEST(DaemonConfig, NotificationSettings) {
  auto s = good();
  s.alertmanager_urls = {"http://127.0.0.1:9093/", "HTTPS://am.example:9093/prefix//"};
  s.webhook_urls = {"https://hooks.example/medic?team=fabric"};
  s.webhook_secret = "s3cret";
  s.http_listen = "0.0.0.0:9400";
  const DaemonConfig c(s);
  EXPECT_EQ(c.settings().alertmanager_urls,
            (std::vector<std::string>{"http://127.0.0.1:9093", "HTTPS://am.example:9093/prefix"}));
  EXPECT_EQ(c.settings().webhook_urls, std::vector<std::string>{"https://hooks.example/medic?team=fabric"});
  EXPECT_EQ(c.settings().external_url, "http://0.0.0.0:9400");
  EXPECT_EQ(c.settings().alert_repeat_s, 60);
  EXPECT_EQ(c.settings().notify_retry_max_s, 30);
  EXPECT_EQ(c.settings().notify_timeout_s, 5);
  s.external_url = "https://medic.example/";
  EXPECT_EQ(DaemonConfig(s).settings().external_url, "https://medic.example");
  EXPECT_EQ(DaemonConfig(good()).settings().external_url, "");

  s = good();
  s.alertmanager_urls = {"ftp://am:9093"};
  EXPECT_EQ(error_of(s), "--alertmanager ftp://am:9093: expected an http:// or https:// URL");
  s.alertmanager_urls = {"http://"};
  EXPECT_EQ(error_of(s), "--alertmanager http://: no host");
  s.alertmanager_urls = {"http://am:9093/#x"};
  EXPECT_EQ(error_of(s), "--alertmanager http://am:9093/#x: a base URL takes no query or fragment");
  s.alertmanager_urls = {"http://am:9093/", "http://am:9093"};
  EXPECT_EQ(error_of(s), "--alertmanager http://am:9093: given twice");
  s = good();
  s.webhook_urls = {""};
  EXPECT_EQ(error_of(s), "--webhook \"\": expected an http:// or https:// URL");
  s.webhook_urls = {"http://hooks example/"};
  EXPECT_EQ(error_of(s), "--webhook http://hooks example/: a URL holds no spaces or control characters");
  s.webhook_urls = {"https://hooks.example/medic"};
  EXPECT_EQ(error_of(s), "--webhook needs a secret: pass --webhook-secret-file FILE or set MEDIC_WEBHOOK_SECRET");
  s = good();
  s.external_url = "medic.example";
  EXPECT_EQ(error_of(s), "--external-url medic.example: expected an http:// or https:// URL");
  s = good();
  s.alert_repeat_s = 9;
  EXPECT_EQ(error_of(s), "--alert-repeat must be within [10, 3600] seconds");
  s = good();
  s.notify_retry_max_s = 0.5;
  EXPECT_EQ(error_of(s), "--notify-retry-max must be within [1, 3600] seconds");
  s = good();
  s.notify_timeout_s = 61;
  EXPECT_EQ(error_of(s), "--notify-timeout must be within [0.1, 60] seconds");
  s.notify_timeout_s = std::nan("");
  EXPECT_EQ(error_of(s), "--notify-timeout must be within [0.1, 60] seconds");
}

}  // namespace
}  // namespace medic::service
