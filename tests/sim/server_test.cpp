#include "sim/server.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "fabric/generator.h"

namespace medic::sim {
namespace {

using nlohmann::json;

class ServerTest : public ::testing::Test {
 protected:
  HttpResponse get(const std::string& path) { return call("GET", path, ""); }
  HttpResponse call(const std::string& method, const std::string& path, const std::string& body,
                    const std::string& auth = "") {
    HttpRequest req;
    req.method = method;
    req.target = path;
    req.path = path;
    req.body = body;
    if (!auth.empty()) req.headers["authorization"] = auth;
    return handle(sim, t, req, options);
  }
  // POSTs a JSON-RPC body to rtsw0001 and returns the parsed answer (200 expected).
  json rpc(const std::string& body, const std::string& sw = "rtsw0001") {
    const HttpResponse r = call("POST", "/s/" + sw + "/rpc", body);
    EXPECT_EQ(r.status, 200u) << r.body;
    EXPECT_EQ(r.content_type, "application/json");
    return json::parse(r.body);
  }

  fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  FabricSim sim{topo};
  double t = 5.0;
  ServerOptions options;
};

TEST_F(ServerTest, Healthz) {
  const HttpResponse r = get("/healthz");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, "ok\n");
}

TEST_F(ServerTest, AdminLinksListsEveryLinkWithState) {
  ASSERT_TRUE(sim.set_drained(*topo.find_device("rtsw0001"), "eth5", true, t).ok());
  ASSERT_TRUE(sim.set_drained(*topo.find_device("ctsw001"), "eth1", true, t).ok());
  sim.set_link_up(*topo.find_link("rtsw0002:eth6"), false, t);
  const HttpResponse r = get("/admin/links");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.content_type, "application/json");
  const json links = json::parse(r.body);
  ASSERT_TRUE(links.is_array());
  ASSERT_EQ(links.size(), topo.links().size());
  int found = 0;
  for (const auto& l : links) {
    const std::string name = l["name"];
    if (name == "rtsw0001:eth5--ctsw001:eth1") {
      ++found;
      EXPECT_EQ(l["up"], true);
      EXPECT_EQ(l["a_drained"], true);
      EXPECT_EQ(l["b_drained"], true);
      EXPECT_EQ(l["carries_traffic"], false);
    } else if (name == topo.link(*topo.find_link("rtsw0002:eth6")).name) {
      ++found;
      EXPECT_EQ(l["up"], false);
      EXPECT_EQ(l["a_drained"], false);
      EXPECT_EQ(l["carries_traffic"], false);
    } else {
      EXPECT_EQ(l["up"], true) << name;
      EXPECT_EQ(l["carries_traffic"], true) << name;
    }
  }
  EXPECT_EQ(found, 2);
  EXPECT_EQ(call("POST", "/admin/links", "").status, 405u);
}

// Every drain API call carried out is listed in order with its Unix time, a lying switch's
// marked as not carried out, an unknown interface not at all.
TEST_F(ServerTest, AdminDrainCallsListsEveryCallInOrderWithItsTime) {
  options.t0_unix = 1'700'000'000;
  EXPECT_EQ(json::parse(get("/admin/drain_calls").body), (json{{"calls", json::array()}, {"dropped", 0}}));
  ASSERT_TRUE(sim.set_drained(*topo.find_device("rtsw0001"), "eth5", true, 5.0).ok());
  ASSERT_FALSE(sim.set_drained(*topo.find_device("rtsw0001"), "eth99", true, 5.5).ok());
  Fault lie;
  lie.kind = FaultKind::rpc_fault;
  lie.device = *topo.find_device("ctsw001");
  lie.answer = RpcAnswer::lie;
  sim.apply(lie, SimEvent::Phase::start, 6.0);
  ASSERT_TRUE(sim.set_drained(*topo.find_device("ctsw001"), "eth1", true, 6.25).ok());
  ASSERT_TRUE(sim.set_drained(*topo.find_device("rtsw0001"), "eth5", false, 7.5).ok());
  const HttpResponse r = get("/admin/drain_calls");
  ASSERT_EQ(r.status, 200u);
  const json calls = json::parse(r.body);
  EXPECT_EQ(calls["dropped"], 0);
  ASSERT_EQ(calls["calls"].size(), 3u) << r.body;
  EXPECT_EQ(calls["calls"][0], (json{{"at_unix", 1'700'000'005.0}, {"endpoint", "rtsw0001:eth5"}, {"drained", true}, {"carried_out", true}}));
  EXPECT_EQ(calls["calls"][1], (json{{"at_unix", 1'700'000'006.25}, {"endpoint", "ctsw001:eth1"}, {"drained", true}, {"carried_out", false}}));
  EXPECT_EQ(calls["calls"][2], (json{{"at_unix", 1'700'000'007.5}, {"endpoint", "rtsw0001:eth5"}, {"drained", false}, {"carried_out", true}}));
  EXPECT_EQ(call("POST", "/admin/drain_calls", "").status, 405u);
}

// Bounded: past kDrainCallsKept the oldest go, counted.
TEST_F(ServerTest, AdminDrainCallsKeepsTheLastOnesAndCountsTheRest) {
  const auto dev = *topo.find_device("rtsw0001");
  for (size_t i = 0; i < FabricSim::kDrainCallsKept + 5; ++i) ASSERT_TRUE(sim.set_drained(dev, "eth5", i % 2 == 0, 1.0 + i).ok());
  EXPECT_EQ(sim.drain_calls().size(), FabricSim::kDrainCallsKept);
  EXPECT_EQ(sim.drain_calls_dropped(), 5u);
  EXPECT_EQ(sim.drain_calls().front().t, 6.0);
}

TEST_F(ServerTest, MetricsForASwitch) {
  const HttpResponse r = get("/s/rtsw0001/metrics");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(r.body.find("node_network_up{device=\"eth5\"} 1\n"), std::string::npos) << r.body.substr(0, 400);
  EXPECT_EQ(call("POST", "/s/rtsw0001/metrics", "").status, 405u);
}

TEST_F(ServerTest, UnknownSwitchOrHostIs404) {
  HttpResponse r = get("/s/nope/metrics");
  EXPECT_EQ(r.status, 404u);
  EXPECT_EQ(r.body, "no switch named nope\n");
  r = get("/s/host0001/metrics");
  EXPECT_EQ(r.status, 404u);
  EXPECT_EQ(r.body, "no switch named host0001\n");
  EXPECT_EQ(call("POST", "/s/nope/rpc", "{}").status, 404u);
}

TEST_F(ServerTest, UnknownPathsAre404) {
  EXPECT_EQ(get("/").status, 404u);
  EXPECT_EQ(get("/s/rtsw0001").status, 404u);
  EXPECT_EQ(get("/s/rtsw0001/other").status, 404u);
  EXPECT_EQ(get("/nothing").body, "not found: /nothing\n");
}

TEST_F(ServerTest, RpcNeedsPost) {
  const HttpResponse r = get("/s/rtsw0001/rpc");
  EXPECT_EQ(r.status, 405u);
  EXPECT_EQ(r.body, "use POST\n");
}

TEST_F(ServerTest, RpcDrainGetStateUndrain) {
  json a = rpc(R"({"jsonrpc":"2.0","id":7,"method":"interface.drain","params":{"interface":"eth5"}})");
  EXPECT_EQ(a["id"], 7);
  EXPECT_EQ(a["jsonrpc"], "2.0");
  EXPECT_FALSE(a.contains("error"));
  EXPECT_EQ(a["result"]["interface"], "eth5");
  EXPECT_EQ(a["result"]["drained"], true);
  EXPECT_EQ(a["result"]["oper_status"], "up");
  EXPECT_TRUE(sim.state(*topo.find_device("rtsw0001"), "eth5", t)->drained);

  a = rpc(R"({"jsonrpc":"2.0","id":"x","method":"interface.get_state","params":{"interface":"eth5"}})");
  EXPECT_EQ(a["id"], "x");
  EXPECT_EQ(a["result"]["drained"], true);

  a = rpc(R"({"jsonrpc":"2.0","id":8,"method":"interface.undrain","params":{"interface":"eth5"}})");
  EXPECT_EQ(a["result"]["drained"], false);
  EXPECT_FALSE(sim.state(*topo.find_device("rtsw0001"), "eth5", t)->drained);
}

TEST_F(ServerTest, RpcParseError) {
  const json a = rpc("this is not json");
  EXPECT_EQ(a["error"]["code"], -32700);
  EXPECT_TRUE(a["id"].is_null());
}

TEST_F(ServerTest, RpcInvalidRequest) {
  json a = rpc(R"({"jsonrpc":"2.0","id":3,"params":{"interface":"eth5"}})");
  EXPECT_EQ(a["error"]["code"], -32600);
  EXPECT_EQ(a["id"], 3);
  a = rpc(R"({"jsonrpc":"1.0","id":3,"method":"interface.drain"})");
  EXPECT_EQ(a["error"]["code"], -32600);
  a = rpc(R"({"jsonrpc":"2.0","id":3,"method":5})");
  EXPECT_EQ(a["error"]["code"], -32600);
  a = rpc(R"([1,2,3])");
  EXPECT_EQ(a["error"]["code"], -32600);
  EXPECT_TRUE(a["id"].is_null());
}

TEST_F(ServerTest, RpcInvalidRequestWhenVersionIsNotAString) {
  HttpResponse r;
  ASSERT_NO_THROW(r = call("POST", "/s/rtsw0001/rpc", R"({"jsonrpc":2,"id":4,"method":"interface.drain"})"));
  EXPECT_EQ(r.status, 200u);
  const json a = json::parse(r.body);
  EXPECT_EQ(a["error"]["code"], -32600);
  EXPECT_EQ(a["id"], 4);
}

TEST_F(ServerTest, RpcUnknownMethod) {
  const json a = rpc(R"({"jsonrpc":"2.0","id":1,"method":"interface.explode","params":{"interface":"eth5"}})");
  EXPECT_EQ(a["error"]["code"], -32601);
  EXPECT_EQ(a["error"]["message"], "method not found: interface.explode");
  EXPECT_EQ(a["id"], 1);
}

TEST_F(ServerTest, RpcInvalidParams) {
  json a = rpc(R"({"jsonrpc":"2.0","id":1,"method":"interface.drain"})");
  EXPECT_EQ(a["error"]["code"], -32602);
  EXPECT_EQ(a["error"]["message"], "params.interface (a string) is required");
  a = rpc(R"({"jsonrpc":"2.0","id":1,"method":"interface.drain","params":{"interface":5}})");
  EXPECT_EQ(a["error"]["code"], -32602);
  a = rpc(R"({"jsonrpc":"2.0","id":1,"method":"interface.drain","params":["eth5"]})");
  EXPECT_EQ(a["error"]["code"], -32602);
  a = rpc(R"({"jsonrpc":"2.0","id":1,"method":"interface.drain","params":{"interface":"eth99"}})");
  EXPECT_EQ(a["error"]["code"], -32602);
  EXPECT_EQ(a["error"]["message"], "unknown interface \"eth99\" on rtsw0001");
}

TEST_F(ServerTest, RpcBearerToken) {
  options.token = "s3cret";
  const std::string body = R"({"jsonrpc":"2.0","id":1,"method":"interface.drain","params":{"interface":"eth5"}})";
  HttpResponse r = call("POST", "/s/rtsw0001/rpc", body);
  EXPECT_EQ(r.status, 401u);
  EXPECT_EQ(r.body, "missing or wrong bearer token\n");
  r = call("POST", "/s/rtsw0001/rpc", body, "Bearer nope");
  EXPECT_EQ(r.status, 401u);
  EXPECT_FALSE(sim.state(*topo.find_device("rtsw0001"), "eth5", t)->drained);
  r = call("POST", "/s/rtsw0001/rpc", body, "Bearer s3cret");
  EXPECT_EQ(r.status, 200u);
  EXPECT_TRUE(sim.state(*topo.find_device("rtsw0001"), "eth5", t)->drained);
  // Metrics stay readable without a token.
  EXPECT_EQ(get("/s/rtsw0001/metrics").status, 200u);
}

}  // namespace
}  // namespace medic::sim
