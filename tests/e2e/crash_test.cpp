// The crash test: medicd is killed with SIGKILL at random moments while several links of
// fabsim's demo fabric flap in bursts, so drains, verifications, validation soaks and
// undrains are interrupted at every step; now and then a person marks a drained link
// repaired (its validation and undrain follow) or dismisses its incident (the link is put
// back) while medicd runs or starts. After every kill the database and fabsim's real
// drain state must still satisfy what remediation promises:
//   - never two unfinished actions on one link, and per link the drains that succeeded and
//     the undrains that put it back alternate, starting with a drain (never drained twice);
//   - no incident lost: every incident seen before is still there, in a known state;
//   - no link drained at the switches without an open incident, unless an unfinished
//     action on it is there for the next start to reconcile, or a person has just
//     dismissed its incident and medicd owes the undrain;
//   - no capacity floor broken by drains (drained links only; down links are the fault's).
// At the end one more medicd reconciles and stops cleanly; the database's drain state of
// every link must then be the switches', and no action may be left unfinished.
//
// MEDIC_CRASH_ITERATIONS=N runs N kills instead of 50 (the long mode; run the test binary
// itself, ctest's timeout is sized for 50), MEDIC_CRASH_SEED=S replays a run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "common/http_client.h"
#include "fabric/loader.h"
#include "remediation/capacity.h"
#include "remediation/capacity_config.h"
#include "tests/e2e/e2e_fixture.h"
#include "tests/support/testing.h"

namespace medic {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Flapping links, chosen to compete: rtsw0001's eth5 and eth6 share its uplink group (only
// one may go), rtsw0001:eth5 and rtsw0002:eth5 share ctsw001's downlinks (likewise).
const std::vector<std::string> kFlapping = {"rtsw0001:eth5", "rtsw0001:eth6", "rtsw0002:eth5",
                                            "rtsw0003:eth7", "rtsw0005:eth5", "rtsw0006:eth8"};
constexpr double kBurstEvery = 11;  // seconds between bursts of one link

const std::set<std::string> kIncidentStates = {"detected",  "triaged",    "blocked",   "pending_approval", "mitigated",
                                               "repair_requested", "repaired", "validating", "validated",
                                               "undrained", "closed",     "dismissed", "escalated"};

int iterations() {
  if (const char* env = std::getenv("MEDIC_CRASH_ITERATIONS"); env && *env) return std::max(1, std::atoi(env));
  return 50;
}

uint64_t seed() {
  if (const char* env = std::getenv("MEDIC_CRASH_SEED"); env && *env) return std::strtoull(env, nullptr, 10);
  return std::random_device{}();
}

// Bursts of four flaps on every link, staggered, for as long as the test can run.
std::string scenario(double duration_s) {
  json faults = json::array();
  for (size_t i = 0; i < kFlapping.size(); ++i) {
    for (double t = 2 + 1.7 * static_cast<double>(i); t < duration_s; t += kBurstEvery) {
      faults.push_back({{"kind", "flap"}, {"link", kFlapping[i]}, {"at_s", t}, {"count", 4}, {"period_s", 0.4},
                        {"down_s", 0.15}});
    }
  }
  return json{{"comment", "crash test: links flapping in bursts"}, {"faults", faults}}.dump(1);
}

// Flap damping fast enough for a daemon that lives a second: two flaps suppress, and the
// penalty decays below reuse within seconds.
std::string detectors() {
  json d = json::parse(testing::read_file(testing::source_dir() + "/data/detectors.json"));
  d["flap"]["penalty_per_flap"] = 1000;
  d["flap"]["half_life_s"] = 2;
  d["flap"]["suppress"] = 1500;
  d["flap"]["reuse"] = 400;
  d["flap"]["max_penalty"] = 3000;
  return d.dump(1);
}

// Short verify window and validation soak so undrains happen too; no rate limits or
// breaker in the way. `approval`: no automatic drain (the final, quiescing run).
std::string policy(bool approval) {
  const std::string mode = approval ? "approval" : "auto";
  return json{{"version", 1},
              {"classes",
               {{"link_flap", mode}, {"corruption", mode}, {"fec", mode}, {"optics", mode}, {"gray_failure", mode}}},
              {"rate_limits",
               {{"per_switch", {{"drains", 0}, {"window_s", 1}}}, {"fabric", {{"drains", 0}, {"window_s", 1}}}}},
              {"breaker", {{"incidents", 1000000}, {"window_s", 1}}},
              {"verify", {{"window_s", 2}, {"min_pps", 50}, {"moved_fraction", 0.1}}},
              {"validation", {{"soak_s", 3}, {"max_failures", 2}}}}
      .dump(1);
}

struct SwitchState {
  bool a_drained = false, b_drained = false;
};

// Every link's drain state at both ends, as fabsim (the switches) has it.
std::optional<std::map<std::string, SwitchState>> switch_states(HttpClient& http, const std::string& sim) {
  auto r = http.get(sim + "/admin/links");
  if (!r.ok() || r->status != 200) return std::nullopt;
  std::map<std::string, SwitchState> out;
  for (const auto& l : json::parse(r->body)) out[l["name"]] = {l["a_drained"].get<bool>(), l["b_drained"].get<bool>()};
  return out;
}

class CrashChecker {
 public:
  CrashChecker(const testing::TestDatabase& tdb, const fabric::Topology& groups) : tdb_(tdb), groups_(groups) {}

  // Every problem found, one per line; empty when all holds.
  std::string check(const std::map<std::string, SwitchState>& sw) {
    std::ostringstream bad;
    // 1. One unfinished action per link at most ...
    for (const auto& l : tdb_.column("SELECT link FROM actions WHERE state IN ('intent', 'applied') GROUP BY link "
                                     "HAVING count(*) > 1")) {
      bad << "two unfinished actions on " << l << "\n";
    }
    // ... and drains that succeeded alternate with the undrains that put the link back:
    // succeeded ones, and those whose traffic check failed after the switches had undrained.
    std::map<std::string, std::string> last;
    for (const auto& row : tdb_.column(
             "SELECT link || ' ' || kind || ' ' || id FROM actions WHERE (kind = 'drain' AND state = 'succeeded') OR "
             "(kind = 'undrain' AND (state = 'succeeded' OR (state = 'failed' AND reason LIKE "
             "'%traffic did not return%'))) ORDER BY id")) {
      std::istringstream in(row);
      std::string link, kind, id;
      in >> link >> kind >> id;
      std::string& prev = last[link];
      if ((prev.empty() && kind != "drain") || (!prev.empty() && prev.substr(0, prev.find(' ')) == kind)) {
        bad << link << ": " << kind << " (action " << id << ") after " << (prev.empty() ? "nothing" : prev) << "\n";
      }
      prev = kind + " (action " + id + ")";
    }
    ++checks_;
    // 2. No incident lost.
    std::map<int64_t, std::string> now;
    for (const auto& row : tdb_.column("SELECT id || ' ' || state FROM incidents")) {
      const size_t sp = row.find(' ');
      now[std::stoll(row.substr(0, sp))] = row.substr(sp + 1);
    }
    for (const auto& [id, state] : seen_) {
      const auto it = now.find(id);
      if (it == now.end()) bad << "incident " << id << " (last " << state << ") is gone\n";
    }
    for (const auto& [id, state] : now) {
      if (kIncidentStates.count(state) == 0) bad << "incident " << id << " in unknown state " << state << "\n";
      seen_[id] = state;
    }
    // 3. Drained at the switches only with an open incident, an action to reconcile, or
    // an undrain owed to a person's dismissal (the final run checks that it is paid).
    const auto open = column_set(
        "SELECT link FROM incidents WHERE state NOT IN ('closed', 'dismissed') AND link IS NOT NULL");
    auto unfinished = column_set("SELECT link FROM actions WHERE state IN ('intent', 'applied')");
    for (const auto& l : column_set("SELECT l.name FROM links l JOIN incidents i ON i.id = l.drain_incident_id "
                                    "WHERE l.drain_state = 'drained' AND i.state = 'dismissed'")) {
      unfinished.insert(l);
    }
    std::set<std::string> drained;
    for (const auto& [name, s] : sw) {
      if (!s.a_drained && !s.b_drained) continue;
      drained.insert(name);
      if (open.count(name) == 0 && unfinished.count(name) == 0) {
        bad << name << " is drained at the switches (a " << s.a_drained << ", b " << s.b_drained
            << ") without an open incident, an unfinished action or an owed undrain\n";
      }
    }
    // 4. Floors: drained links alone never take a group below its floor.
    for (const auto& g : groups_.groups()) {
      double total = 0, out = 0;
      for (const fabric::LinkId l : g.links) {
        const auto& link = groups_.link(l);
        total += link.speed_gbps;
        if (drained.count(link.name) != 0) out += link.speed_gbps;
      }
      if (total > 0 && remediation::below_floor((total - out) / total, g.floor)) {
        bad << g.name << " (" << g.kind << ") at " << 100 * (total - out) / total << "% < floor " << 100 * g.floor
            << "% with drained links alone\n";
      }
    }
    return bad.str();
  }

  int checks() const { return checks_; }

 private:
  std::set<std::string> column_set(const std::string& sql) const {
    const auto c = tdb_.column(sql);
    return {c.begin(), c.end()};
  }

  const testing::TestDatabase& tdb_;
  const fabric::Topology& groups_;
  std::map<int64_t, std::string> seen_;
  int checks_ = 0;
};

// What the database says when an invariant fails.
std::string dump(const testing::TestDatabase& tdb) {
  std::ostringstream out;
  out << "actions:\n";
  for (const auto& r : tdb.column("SELECT id || ' ' || link || ' ' || kind || ' ' || state || ' ' || daemon || ' ' || "
                                  "coalesce(reason, '') FROM actions WHERE state <> 'refused' ORDER BY id")) {
    out << "  " << r << "\n";
  }
  out << "incidents:\n";
  for (const auto& r : tdb.column("SELECT id || ' ' || coalesce(link, '-') || ' ' || state FROM incidents ORDER BY id")) {
    out << "  " << r << "\n";
  }
  out << "links not undrained:\n";
  for (const auto& r : tdb.column("SELECT name || ' ' || drain_state FROM links WHERE drain_state <> 'undrained'")) {
    out << "  " << r << "\n";
  }
  return out.str();
}

std::string tail(const std::string& text, size_t n = 6000) {
  return text.size() <= n ? text : "..." + text.substr(text.size() - n);
}

// The killed daemon's sessions are gone (its transactions aborted, its lock released).
bool no_daemon_sessions(const testing::TestDatabase& tdb) {
  try {
    return tdb.scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
                      "pid <> pg_backend_pid() AND backend_type = 'client backend'") == "0";
  } catch (const std::exception&) {
    return false;
  }
}

TEST(E2ECrash, KillNineAtRandomPointsKeepsTheFabricSafe) {
  curl_global_setup();
  const int n = iterations();
  const uint64_t s = seed();
  SCOPED_TRACE("crash test seed " + std::to_string(s) + " (replay with MEDIC_CRASH_SEED=" + std::to_string(s) +
               " MEDIC_CRASH_ITERATIONS=" + std::to_string(n) + ")");
  std::printf("crash test: %d iterations, seed %llu\n", n, static_cast<unsigned long long>(s));
  std::mt19937_64 rng(s);
  testing::TempDir dir;
  testing::TestDatabase tdb;
  HttpClient http;

  const auto [gen_status, topology] = testing::run_command(MEDIC_CLI_BIN, {"fabric", "gen", "demo"});
  ASSERT_EQ(gen_status, 0) << topology;
  testing::write_file(dir.file("demo.json"), topology);
  testing::write_file(dir.file("scenario.json"), scenario(90 + 6.0 * n));
  testing::write_file(dir.file("detectors.json"), detectors());
  testing::write_file(dir.file("policy.json"), policy(false));
  testing::write_file(dir.file("policy_final.json"), policy(true));
  const std::string capacity = testing::source_dir() + "/data/capacity.json";

  const std::string exported = dir.file("exported.json");
  testing::Process fabsim(MEDIC_FABSIM_BIN, {"--topology", dir.file("demo.json"), "--scenario", dir.file("scenario.json"),
                                             "--listen", "127.0.0.1:0", "--export-topology", exported, "--seed", "1"});
  ASSERT_TRUE(testing::eventually([&] { return std::filesystem::exists(exported); }, 30s)) << fabsim.output();
  const std::string sim_url = json::parse(testing::read_file(exported))["switches"][0]["telemetry"];
  const std::string sim = sim_url.substr(0, sim_url.find("/s/"));
  ASSERT_THAT(sim, ::testing::StartsWith("http://127.0.0.1:"));
  const fabric::Topology topo = fabric::load_topology_file(exported);
  const fabric::Topology groups =
      remediation::with_derived_groups(topo, remediation::CapacityConfig::load_file(capacity));
  ASSERT_GT(groups.groups().size(), topo.groups().size());
  CrashChecker checker(tdb, groups);
  // The schema exists before the first medicd, which may be killed before it migrates.
  const auto [mig_status, mig_out] = testing::run_command(MEDIC_CLI_BIN, {"db", "migrate", "--db", tdb.url()});
  ASSERT_EQ(mig_status, 0) << mig_out;

  auto medicd_args = [&](const std::string& name, const std::string& policy_file) {
    return std::vector<std::string>{"--topology", exported, "--db", tdb.url(), "--detectors", dir.file("detectors.json"),
                                    "--policy", policy_file, "--capacity", capacity, "--poll-interval", "0.2",
                                    "--name", name, "--no-probe", "--run-for", "600"};
  };

  std::uniform_real_distribution<double> life(0.3, 2.5);
  std::uniform_real_distribution<double> unit(0, 1);
  int kills_mid_action = 0, repairs_marked = 0, rejects = 0;
  std::string last_log, previous_log;
  for (int i = 0; i < n; ++i) {
    SCOPED_TRACE("iteration " + std::to_string(i));
    const double lifetime = life(rng);
    const bool person_acts = unit(rng) < 0.5;
    const double person_at = unit(rng) * lifetime;
    {
      testing::Process medicd(MEDIC_MEDICD_BIN, medicd_args("crash-" + std::to_string(i), dir.file("policy.json")));
      const auto born = std::chrono::steady_clock::now();
      auto sleep_until = [&](double t) {
        std::this_thread::sleep_until(born + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                 std::chrono::duration<double>(t)));
      };
      if (person_acts) {
        // While medicd runs (or is still starting), a person marks repaired what waits for
        // repair, or now and then dismisses it instead (medicd then puts the link back).
        sleep_until(person_at);
        for (const auto& id : tdb.column("SELECT i.id FROM incidents i JOIN links l ON l.name = i.link WHERE "
                                         "i.state IN ('repair_requested', 'escalated') AND l.drain_state = 'drained'")) {
          const bool reject = unit(rng) < 0.2;
          const auto [st, out] = testing::run_command(
              MEDIC_CLI_BIN, {"incidents", reject ? "dismiss" : "repaired", id, "--by", "crash-test", "--reason",
                              "crash test", "--db", tdb.url()});
          // medicd may have moved the incident on meanwhile: then the CLI says why not.
          ASSERT_TRUE(st == 0 || out.find("medic: incident " + id) != std::string::npos) << st << ": " << out;
          if (st == 0) ++(reject ? rejects : repairs_marked);
        }
      }
      sleep_until(lifetime);
      ASSERT_TRUE(medicd.running()) << "medicd exited by itself:\n" << tail(medicd.output());
      ASSERT_TRUE(medicd.signal(SIGKILL));
      ASSERT_TRUE(medicd.wait(10s)) << "medicd did not die of SIGKILL";
      previous_log = std::move(last_log);
      last_log = medicd.output();
    }
    ASSERT_TRUE(testing::eventually([&] { return no_daemon_sessions(tdb); }, 30s))
        << "the killed medicd's database sessions did not end";
    const auto sw = switch_states(http, sim);
    ASSERT_TRUE(sw) << "fabsim not answering:\n" << tail(fabsim.output());
    if (tdb.scalar("SELECT count(*) FROM actions WHERE state IN ('intent', 'applied')") != "0") ++kills_mid_action;
    const std::string problems = checker.check(*sw);
    ASSERT_EQ(problems, "") << dump(tdb) << "\nthe medicd before:\n"
                            << tail(previous_log) << "\nthe last medicd:\n"
                            << tail(last_log);
  }

  // One more medicd reconciles whatever the last kill left. It drains nothing new (every
  // class needs approval) so that, once the unfinished actions, repairs and dismissals are
  // through, nothing can start between the last look and SIGTERM.
  std::vector<std::string> final_args = medicd_args("final", dir.file("policy_final.json"));
  final_args.insert(final_args.end(), {"--http", "127.0.0.1:0"});
  testing::Process final_medicd(MEDIC_MEDICD_BIN, final_args);
  const std::string final_api = api_of(final_medicd);
  ASSERT_FALSE(final_api.empty()) << final_medicd.output();
  HttpClient final_http;
  const bool quiet = testing::eventually(
      [&] {
        return metric(final_http, final_api, "medic_leader") == 1.0 &&
               tdb.scalar("SELECT count(*) FROM actions WHERE state IN ('intent', 'applied')") == "0" &&
               tdb.scalar("SELECT count(*) FROM incidents WHERE state IN ('mitigated', 'repaired', 'validating', "
                          "'validated', 'undrained')") == "0" &&
               tdb.scalar("SELECT count(*) FROM links l JOIN incidents i ON i.id = l.drain_incident_id WHERE "
                          "l.drain_state = 'drained' AND i.state = 'dismissed'") == "0";
      },
      120s);
  ASSERT_TRUE(quiet) << dump(tdb) << "\nfinal medicd:\n" << tail(final_medicd.output());
  ASSERT_TRUE(final_medicd.signal(SIGTERM));
  const auto status = final_medicd.wait(30s);
  ASSERT_TRUE(status) << tail(final_medicd.output());
  EXPECT_EQ(*status, 0) << tail(final_medicd.output());

  const auto sw = switch_states(http, sim);
  ASSERT_TRUE(sw);
  const std::string problems = checker.check(*sw);
  EXPECT_EQ(problems, "") << dump(tdb);
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM actions WHERE state IN ('intent', 'applied')"), "0") << dump(tdb);
  // The database's drain state of every link is the switches'.
  std::map<std::string, std::string> db_state;
  for (const auto& row : tdb.column("SELECT name || ' ' || drain_state FROM links")) {
    db_state[row.substr(0, row.find(' '))] = row.substr(row.find(' ') + 1);
  }
  ASSERT_EQ(db_state.size(), sw->size());
  std::string mismatches;
  for (const auto& [name, st] : *sw) {
    const std::string real = st.a_drained && st.b_drained ? "drained" : !st.a_drained && !st.b_drained ? "undrained"
                                                                                                      : "half-drained";
    if (db_state[name] != real) mismatches += name + ": database " + db_state[name] + ", switches " + real + "\n";
  }
  EXPECT_EQ(mismatches, "") << dump(tdb);
  // A drained link waits for a person (repair) with its incident saying so, never in a
  // state where nobody will act on it.
  EXPECT_EQ(tdb.column("SELECT l.name || ' ' || coalesce(i.state, 'no incident') FROM links l LEFT JOIN incidents i "
                       "ON i.link = l.name AND i.state NOT IN ('closed', 'dismissed') WHERE l.drain_state = 'drained' "
                       "AND coalesce(i.state, '') NOT IN ('repair_requested', 'escalated')"),
            std::vector<std::string>{})
      << dump(tdb);

  // What the run exercised (printed, not asserted: the kills land where they land).
  const auto count = [&](const std::string& where) { return tdb.scalar("SELECT count(*) FROM actions WHERE " + where); };
  std::printf(
      "crash test: %d kills (%d with an action unfinished), %d repairs marked, %d incidents dismissed, %s drains and "
      "%s undrains succeeded, %s actions finished by reconciliation, %s incidents, %d checks\n",
      n, kills_mid_action, repairs_marked, rejects, count("kind = 'drain' AND state = 'succeeded'").c_str(),
      count("kind = 'undrain' AND state = 'succeeded'").c_str(), count("steps::text LIKE '%reconcile:%'").c_str(),
      tdb.scalar("SELECT count(*) FROM incidents").c_str(), checker.checks());
  EXPECT_NE(count("kind = 'drain' AND state = 'succeeded'"), "0") << "no drain happened: the test tested nothing";
}

}  // namespace
}  // namespace medic
