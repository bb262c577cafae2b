// fabsim's HTTP surface, shared by the binary and the tests:
//   GET  /s/NAME/metrics  the switch's counters (Prometheus text format)
//   GET  /s/NAME/gnmi     the same as OpenConfig JSON, as a gNMI gateway returns it
//   GET  /h/NAME/metrics  a host's NIC counters (node_exporter with its ethtool collector)
//   POST /s/NAME/rpc      JSON-RPC 2.0: interface.drain, interface.undrain, interface.get_state
//   GET  /admin/links     every link's oper, drain and traffic state (JSON), for tests and demos
//   GET  /healthz         "ok"
#pragma once

#include <string>

#include "common/http_server.h"
#include "sim/fabric_sim.h"

namespace medic::sim {

struct ServerOptions {
  std::string token;  // when set, /rpc requires "Authorization: Bearer TOKEN"
  double t0_unix = 0;  // the Unix time of scenario time 0 (for /admin/drain_calls)
};

HttpResponse handle(FabricSim& sim, double t, const HttpRequest& req, const ServerOptions& options);

// How long the request waits before it is handled and answered: a switch whose drain API
// is slow (rpc_delay) takes that long to act and to answer; 0 for everything else.
double answer_delay_s(const FabricSim& sim, const HttpRequest& req);

}  // namespace medic::sim
