// Shared by the end-to-end tests: fabsim playing a scenario on the demo fabric, and reading
// the database and /metrics while they may not be there yet.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "common/http_client.h"
#include "tests/support/testing.h"

namespace medic {

// Runs a query and returns "" instead of throwing while the schema is not there yet.
inline std::string try_scalar(const testing::TestDatabase& tdb, const std::string& sql) {
  try {
    return tdb.scalar(sql);
  } catch (const std::exception&) {
    return "";
  }
}

// One metric from `base`/metrics, or nullopt when it is not (yet) there.
inline std::optional<double> metric(HttpClient& http, const std::string& base, const std::string& name) {
  auto r = http.get(base + "/metrics");
  if (!r.ok() || r->status != 200) return std::nullopt;
  return testing::metric_value(r->body, name);
}

// What `base`/healthz says: {status, body} ({0, error} when it does not answer).
inline std::pair<unsigned, std::string> healthz(HttpClient& http, const std::string& base) {
  auto r = http.get(base + "/healthz");
  if (!r.ok()) return {0u, r.error()};
  return {r->status, r->body};
}

// Whether the medicd at `base` leads with `epoch` and has reloaded what the database holds:
// /healthz says so and medic_leader is 1.
inline bool leads(HttpClient& http, const std::string& base, int64_t epoch) {
  const auto [status, body] = healthz(http, base);
  return status == 200 && body.find("ok: leader (epoch " + std::to_string(epoch) + ")") != std::string::npos &&
         metric(http, base, "medic_leader") == 1.0;
}

// Where medicd serves HTTP, from its log ("" when it never says, within a minute).
inline std::string api_of(testing::Process& medicd) {
  std::string api;
  testing::eventually(
      [&] {
        api = testing::http_base_from_log(medicd.output());
        return !api.empty();
      },
      std::chrono::seconds(60));
  return api;
}

// "http://127.0.0.1:PORT/s/rtsw0001/metrics" -> "http://127.0.0.1:PORT"
inline std::string base_of(const std::string& url) { return url.substr(0, url.find("/s/")); }

// Writes the demo fabric, as `medic fabric gen demo` prints it, to dir/demo.json. Fails the
// test when it cannot: call it inside ASSERT_NO_FATAL_FAILURE.
inline void write_demo_topology(const testing::TempDir& dir) {
  const auto [gen_status, topology] = testing::run_command(MEDIC_CLI_BIN, {"fabric", "gen", "demo"});
  ASSERT_EQ(gen_status, 0) << topology;
  testing::write_file(dir.file("demo.json"), topology);
}

// "down" faults at `at_s` for up to `count` links of dir/demo.json, no device at more than
// `per_device` of them (so that each is a link's incident, not its device's).
inline nlohmann::json links_down(const testing::TempDir& dir, size_t count, int per_device, double at_s) {
  const nlohmann::json topo = nlohmann::json::parse(testing::read_file(dir.file("demo.json")));
  std::map<std::string, int> on;
  nlohmann::json faults = nlohmann::json::array();
  for (const auto& l : topo.at("links")) {
    const std::string a = l.at("a").get<std::string>(), b = l.at("b").get<std::string>();
    const std::string da = a.substr(0, a.find(':')), db = b.substr(0, b.find(':'));
    if (faults.size() == count || on[da] >= per_device || on[db] >= per_device) continue;
    ++on[da];
    ++on[db];
    faults.push_back({{"kind", "down"}, {"link", a}, {"at_s", at_s}});
  }
  return faults;
}

// fabsim on dir/demo.json playing a scenario, exporting its topology (with the addresses it
// serves) to dir/exported.json; stopped when the object goes.
class DemoFabsim {
 public:
  // Writes `scenario` to dir/scenario.json, starts fabsim with `more` arguments and waits for
  // the export. Fails the test when fabsim does not export: call it inside
  // ASSERT_NO_FATAL_FAILURE.
  void start(const testing::TempDir& dir, const std::string& scenario, const std::vector<std::string>& more = {}) {
    testing::write_file(dir.file("scenario.json"), scenario);
    exported = dir.file("exported.json");
    std::vector<std::string> args{"--topology", dir.file("demo.json"), "--scenario",        dir.file("scenario.json"),
                                  "--listen",   "127.0.0.1:0",         "--export-topology", exported};
    args.insert(args.end(), more.begin(), more.end());
    process_ = std::make_unique<testing::Process>(MEDIC_FABSIM_BIN, args);
    ASSERT_TRUE(testing::eventually([&] { return std::filesystem::exists(exported); }, std::chrono::seconds(30)))
        << "fabsim did not export its topology:\n"
        << process_->output();
    sim = base_of(exported_topology()["switches"][0]["telemetry"]);
  }
  nlohmann::json exported_topology() const { return nlohmann::json::parse(testing::read_file(exported)); }
  std::string output() const { return process_ ? process_->output() : std::string(); }
  testing::Process& process() { return *process_; }

  std::string exported;  // the topology fabsim exported
  std::string sim;       // where it serves the switches: "http://127.0.0.1:PORT"

 private:
  std::unique_ptr<testing::Process> process_;
};

}  // namespace medic
