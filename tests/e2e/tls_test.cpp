// End to end over TLS with the real binaries: fabsim serves the switches' JSON-RPC drain
// API over HTTPS with a certificate from a throwaway CA and requires a bearer token;
// medicd trusts that CA (--driver-ca), sends the token (--driver-token), finds a flapping
// link and drains it. With the wrong CA the drain fails with curl's verification error
// naming the switch and the URL, and nothing is drained.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "common/http_client.h"
#include "tests/e2e/e2e_fixture.h"
#include "tests/support/testing.h"
#include "tests/support/tls_certs.h"

namespace medic {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kLink = "rtsw0001:eth5--ctsw001:eth1";  // flaps on a healthy ToR
constexpr const char* kToken = "s3cret-drain-token";

std::string scenario() {
  return json{{"faults",
               {{{"kind", "flap"}, {"link", "rtsw0001:eth5"}, {"at_s", 2}, {"count", 8}, {"period_s", 0.5},
                 {"down_s", 0.15}}}}}
      .dump(1);
}

// "https://127.0.0.1:P/s/rtsw0001/metrics" -> BASE + "/s/rtsw0001/metrics"
std::string replace_base(const std::string& url, const std::string& base) {
  return base + url.substr(url.find('/', url.find("://") + 3));
}

// The demo fabric with its drain API at https://127.0.0.1:RPC and its counters at
// http://127.0.0.1:TELEMETRY. medicd's collector verifies https:// telemetry against the
// system's CAs only (it has no CA option), so in this test the counters stay on plain HTTP
// and TLS is what the drain API speaks; fabsim serves both addresses from one fabric.
struct Fabric {
  std::string topology_path, rpc_base, telemetry_base;
};

Fabric write_topology(const testing::TempDir& dir) {
  Fabric f;
  const uint16_t rpc_port = testing::closed_port();
  uint16_t telemetry_port = testing::closed_port();
  while (telemetry_port == rpc_port) telemetry_port = testing::closed_port();
  f.rpc_base = "https://127.0.0.1:" + std::to_string(rpc_port);
  f.telemetry_base = "http://127.0.0.1:" + std::to_string(telemetry_port);
  const auto [status, text] = testing::run_command(MEDIC_CLI_BIN, {"fabric", "gen", "demo", "--base-url", f.rpc_base});
  EXPECT_EQ(status, 0) << text;
  json doc = json::parse(text);
  for (auto& s : doc["switches"]) {
    // The generator put every URL under the https:// base.
    EXPECT_THAT(s["telemetry"].get<std::string>(), StartsWith(f.rpc_base + "/s/"));
    EXPECT_EQ(s["driver"]["url"], f.rpc_base + "/s/" + s["name"].get<std::string>() + "/rpc");
    s["telemetry"] = replace_base(s["telemetry"], f.telemetry_base);
  }
  for (auto& h : doc["hosts"]) {
    if (h.contains("telemetry")) h["telemetry"] = replace_base(h["telemetry"], f.telemetry_base);
  }
  f.topology_path = dir.file("demo-tls.json");
  testing::write_file(f.topology_path, doc.dump(1));
  return f;
}

class E2ETls : public ::testing::Test {
 protected:
  void SetUp() override {
    curl_global_setup();
    pki_ = testing::make_test_pki(dir_.path());
    other_ = testing::make_test_pki(dir_.path(), "other-");
    fabric_ = write_topology(dir_);
    testing::write_file(dir_.file("scenario.json"), scenario());
  }
  std::unique_ptr<testing::Process> start_fabsim() {
    auto p = std::make_unique<testing::Process>(
        MEDIC_FABSIM_BIN,
        std::vector<std::string>{"--topology", fabric_.topology_path, "--scenario", dir_.file("scenario.json"),
                                 "--tls-cert", pki_.server_cert, "--tls-key", pki_.server_key, "--rpc-token", kToken,
                                 "--stamp-port", "0", "--export-topology", exported()});
    EXPECT_TRUE(testing::eventually([&] { return std::filesystem::exists(exported()); }, 30s))
        << "fabsim did not start:\n"
        << p->output();
    return p;
  }
  std::unique_ptr<testing::Process> start_medicd(const std::string& ca) {
    return std::make_unique<testing::Process>(
        MEDIC_MEDICD_BIN,
        std::vector<std::string>{"--topology", exported(), "--db", tdb_.url(), "--poll-interval", "0.2", "--no-probe",
                                 "--driver-ca", ca, "--driver-token", kToken, "--run-for", "120"});
  }
  std::string exported() const { return dir_.file("exported.json"); }
  std::map<std::string, json> links() {
    HttpClient http;
    auto r = http.get(fabric_.telemetry_base + "/admin/links");
    EXPECT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.error());
    std::map<std::string, json> by_name;
    if (!r.ok()) return by_name;
    for (const auto& l : json::parse(r->body)) by_name[l["name"]] = l;
    return by_name;
  }

  testing::TempDir dir_;
  testing::TestDatabase tdb_;
  testing::TlsFiles pki_, other_;
  Fabric fabric_;
};

TEST_F(E2ETls, MedicdDrainsAFlappingLinkOverHttpsWithTheRightCaAndToken) {
  auto fabsim = start_fabsim();
  ASSERT_TRUE(std::filesystem::exists(exported()));
  EXPECT_THAT(fabsim->output(), HasSubstr("fabsim listening on 127.0.0.1:" +
                                          fabric_.rpc_base.substr(fabric_.rpc_base.rfind(':') + 1) + " over HTTPS"));
  // The exported topology keeps each URL on the server that answers it, scheme included.
  const json live = json::parse(testing::read_file(exported()));
  for (const auto& s : live["switches"]) {
    EXPECT_THAT(s["driver"]["url"].get<std::string>(), StartsWith(fabric_.rpc_base + "/s/"));
    EXPECT_THAT(s["telemetry"].get<std::string>(), StartsWith(fabric_.telemetry_base + "/s/"));
  }

  auto medicd = start_medicd(pki_.ca_cert);
  const std::string where = std::string("link = '") + kLink + "'";
  const bool drained = testing::eventually(
      [&] {
        return try_scalar(tdb_, "SELECT state FROM incidents WHERE " + where) == "repair_requested" &&
               try_scalar(tdb_, "SELECT drain_state FROM links WHERE name = '" + std::string(kLink) + "'") == "drained";
      },
      90s);
  ASSERT_TRUE(drained) << "medicd:\n" << medicd->output() << "\nfabsim:\n" << fabsim->output();

  // PostgreSQL: one drain, carried out and read back at both ends over HTTPS.
  EXPECT_EQ(tdb_.scalar("SELECT class FROM incidents WHERE " + where), "link_flap");
  EXPECT_EQ(tdb_.scalar("SELECT kind || ' ' || state || ' ' || coalesce(reason, '') FROM actions WHERE " + where),
            "drain succeeded ");
  EXPECT_EQ(tdb_.scalar("SELECT (steps - 4)::text FROM actions WHERE " + where),
            R"(["drain rtsw0001:eth5 -> drained", "drain ctsw001:eth1 -> drained", )"
            R"("verify rtsw0001:eth5 -> drained", "verify ctsw001:eth1 -> drained"])");
  // Then the counters: the link's traffic fell to nothing once drained.
  EXPECT_THAT(tdb_.scalar("SELECT steps->>4 FROM actions WHERE " + where),
              ::testing::MatchesRegex("verify traffic: [0-9]+ pps before, 0 pps after"));
  EXPECT_EQ(tdb_.scalar("SELECT count(*) FROM links WHERE drain_state <> 'undrained'"), "1");
  EXPECT_EQ(tdb_.scalar("SELECT count(*) FROM actions WHERE state = 'failed'"), "0");

  // fabsim agrees: both ends are out of forwarding.
  auto by_name = links();
  ASSERT_EQ(by_name.size(), 80u);
  EXPECT_EQ(by_name[kLink]["a_drained"], true);
  EXPECT_EQ(by_name[kLink]["b_drained"], true);
  EXPECT_EQ(by_name[kLink]["carries_traffic"], false);

  ASSERT_TRUE(medicd->signal(SIGTERM));
  const auto status = medicd->wait(30s);
  ASSERT_TRUE(status) << medicd->output();
  EXPECT_EQ(*status, 0) << medicd->output();
  EXPECT_THAT(medicd->output(), HasSubstr("1 drained, 0 refused, 0 failed"));
}

TEST_F(E2ETls, WithTheWrongCaTheDrainFailsNamingSwitchUrlAndReason) {
  auto fabsim = start_fabsim();
  auto medicd = start_medicd(other_.ca_cert);
  const std::string where = std::string("link = '") + kLink + "'";
  const bool failed = testing::eventually(
      [&] { return try_scalar(tdb_, "SELECT count(*) FROM actions WHERE state = 'failed' AND " + where) != "" &&
                   try_scalar(tdb_, "SELECT count(*) FROM actions WHERE state = 'failed' AND " + where) != "0"; },
      90s);
  ASSERT_TRUE(failed) << "medicd:\n" << medicd->output() << "\nfabsim:\n" << fabsim->output();
  const std::string reason = "rtsw0001 interface.drain(eth5): " + fabric_.rpc_base +
                             "/s/rtsw0001/rpc: SSL certificate problem: unable to get local issuer certificate";
  EXPECT_EQ(tdb_.scalar("SELECT reason FROM actions WHERE state = 'failed' AND " + where + " ORDER BY id LIMIT 1"),
            reason);
  EXPECT_TRUE(testing::eventually(
      [&] { return try_scalar(tdb_, "SELECT state FROM incidents WHERE " + where) == "escalated"; }, 30s))
      << medicd->output();
  EXPECT_EQ(tdb_.scalar("SELECT count(*) FROM links WHERE drain_state <> 'undrained'"), "0");
  auto by_name = links();
  EXPECT_EQ(by_name[kLink]["a_drained"], false);
  EXPECT_EQ(by_name[kLink]["b_drained"], false);
  EXPECT_THAT(medicd->output(), HasSubstr(reason));

  // A CA file that is not there stops medicd at start-up, naming the flag and the file.
  const std::string missing = dir_.file("missing-ca.pem");
  const auto [st, out] = testing::run_command(
      MEDIC_MEDICD_BIN, {"--topology", exported(), "--db", tdb_.url(), "--driver-ca", missing}, 60s);
  EXPECT_NE(st, 0) << out;
  EXPECT_NE(st, -1000) << out;
  EXPECT_THAT(out, HasSubstr("--driver-ca"));
  EXPECT_THAT(out, HasSubstr(missing));
}

// fabsim with --listen serves everything over HTTPS: counters, drain API and admin; the
// exported topology says https://; plain HTTP and a missing token are turned away.
TEST(E2ETlsFabsim, ListenServesEverythingOverHttps) {
  curl_global_setup();
  testing::TempDir dir;
  const auto pki = testing::make_test_pki(dir.path());
  const auto [gen_status, topology] = testing::run_command(MEDIC_CLI_BIN, {"fabric", "gen", "demo"});
  ASSERT_EQ(gen_status, 0) << topology;
  testing::write_file(dir.file("demo.json"), topology);
  const std::string exported = dir.file("exported.json");
  testing::Process fabsim(MEDIC_FABSIM_BIN, {"--topology", dir.file("demo.json"), "--listen", "127.0.0.1:0",
                                             "--tls-cert", pki.server_cert, "--tls-key", pki.server_key,
                                             "--rpc-token", kToken, "--export-topology", exported});
  ASSERT_TRUE(testing::eventually([&] { return std::filesystem::exists(exported); }, 30s)) << fabsim.output();
  const json live = json::parse(testing::read_file(exported));
  const std::string metrics = live["switches"][0]["telemetry"];
  const std::string rpc = live["switches"][0]["driver"]["url"];
  ASSERT_THAT(metrics, StartsWith("https://127.0.0.1:"));
  ASSERT_THAT(rpc, StartsWith("https://127.0.0.1:"));
  for (const auto& h : live["hosts"]) {
    if (h.contains("telemetry")) {
      EXPECT_THAT(h["telemetry"].get<std::string>(), StartsWith("https://127.0.0.1:"));
    }
  }

  HttpClient http;
  HttpCallOptions trust;
  trust.ca_file = pki.ca_cert;
  auto m = http.get(metrics, trust);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m->status, 200);
  EXPECT_FALSE(m->body.empty());

  const std::string body = R"({"jsonrpc":"2.0","id":1,"method":"interface.get_state","params":{"interface":"eth5"}})";
  auto no_token = http.post(rpc, body, "application/json", trust);
  ASSERT_TRUE(no_token.ok()) << no_token.error();
  EXPECT_EQ(no_token->status, 401);
  HttpCallOptions with_token = trust;
  with_token.headers.emplace_back("Authorization", std::string("Bearer ") + kToken);
  auto ok = http.post(rpc, body, "application/json", with_token);
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(json::parse(ok->body)["result"]["drained"], false);

  std::string plain = metrics;
  plain.replace(0, 5, "http");
  auto p = http.get(plain);
  EXPECT_FALSE(p.ok() && p->status == 200);
  EXPECT_TRUE(fabsim.running()) << fabsim.output();

  // Bad TLS material stops fabsim at start-up with the file and OpenSSL's reason.
  testing::write_file(dir.file("garbage.pem"), "not a certificate\n");
  const auto [bad_status, bad_out] = testing::run_command(
      MEDIC_FABSIM_BIN, {"--topology", dir.file("demo.json"), "--listen", "127.0.0.1:0", "--tls-cert",
                         dir.file("garbage.pem"), "--tls-key", pki.server_key},
      60s);
  EXPECT_EQ(bad_status, 1) << bad_out;
  EXPECT_THAT(bad_out, HasSubstr("fabsim: TLS certificate " + dir.file("garbage.pem") + ": no PEM block (-----BEGIN ...) in the file"));
  // An https:// topology without a certificate is refused too.
  const auto [https_status, https_topology] =
      testing::run_command(MEDIC_CLI_BIN, {"fabric", "gen", "demo", "--base-url", "https://127.0.0.1:1"});
  ASSERT_EQ(https_status, 0) << https_topology;
  testing::write_file(dir.file("https.json"), https_topology);
  const auto [no_cert_status, no_cert_out] =
      testing::run_command(MEDIC_FABSIM_BIN, {"--topology", dir.file("https.json")}, 60s);
  EXPECT_EQ(no_cert_status, 1) << no_cert_out;
  EXPECT_THAT(no_cert_out, HasSubstr("is https://: give --tls-cert and --tls-key"));
}

}  // namespace
}  // namespace medic
