#include "common/json.h"
#include "sim/server.h"

#include <nlohmann/json.hpp>

namespace medic::sim {

using nlohmann::json;

namespace {

json rpc_error(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

HttpResponse rpc(FabricSim& sim, fabric::DeviceId device, double t, const HttpRequest& req) {
  const json doc = json::parse(req.body, nullptr, false);
  if (doc.is_discarded()) return HttpResponse::json(200, json_text(rpc_error(nullptr, -32700, "parse error")));
  if (!doc.is_object() || !(doc.contains("jsonrpc") && doc["jsonrpc"] == "2.0") || !doc.contains("method") ||
      !doc["method"].is_string()) {
    return HttpResponse::json(200, rpc_error(doc.is_object() && doc.contains("id") ? doc["id"] : json(nullptr),
                                             -32600, "invalid request")
                                       .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  switch (sim.rpc_answer(device)) {
    case RpcAnswer::error: return HttpResponse::text(500, "internal error: interface manager restarting");
    case RpcAnswer::garbage:
      return HttpResponse::json(200, "<html><body>502 upstream</body></html>\n{\"jsonrpc\": \"2.0\", \"res");
    case RpcAnswer::close: {
      HttpResponse r;
      r.hang_up = true;
      return r;
    }
    case RpcAnswer::lie:  // FabricSim answers what was asked and does nothing
    case RpcAnswer::none: break;
  }
  const json id = doc.contains("id") ? doc["id"] : json(nullptr);
  const std::string method = doc["method"];
  const json params = doc.value("params", json::object());
  if (!params.is_object() || !params.contains("interface") || !params["interface"].is_string()) {
    return HttpResponse::json(200, rpc_error(id, -32602, "params.interface (a string) is required").dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  const std::string iface = params["interface"];
  Result<PortCounters> r = Error{""};
  if (method == "interface.drain") {
    r = sim.set_drained(device, iface, true, t);
  } else if (method == "interface.undrain") {
    r = sim.set_drained(device, iface, false, t);
  } else if (method == "interface.get_state") {
    r = sim.state(device, iface, t);
  } else {
    return HttpResponse::json(200, json_text(rpc_error(id, -32601, "method not found: " + method)));
  }
  if (!r.ok()) return HttpResponse::json(200, rpc_error(id, -32602, r.error()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  const json result = {{"interface", iface},
                       {"drained", r->drained},
                       {"oper_status", r->oper_up ? "up" : "down"}};
  return HttpResponse::json(200, json{{"jsonrpc", "2.0"}, {"id", id}, {"result", result}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace

HttpResponse handle(FabricSim& sim, double t, const HttpRequest& req, const ServerOptions& options) {
  const auto& topo = sim.topology();
  if (req.path == "/healthz") return HttpResponse::text(200, "ok");
  if (req.path == "/admin/links") {
    if (req.method != "GET") return HttpResponse::text(405, "use GET");
    json links = json::array();
    for (fabric::LinkId l = 0; l < topo.links().size(); ++l) {
      const auto& link = topo.link(l);
      links.push_back({{"name", link.name},
                       {"up", sim.link_up(l)},
                       {"a_drained", sim.counters(link.a, t).drained},
                       {"b_drained", sim.counters(link.b, t).drained},
                       {"carries_traffic", sim.carries_traffic(l)}});
    }
    return HttpResponse::json(200, json_text(links));
  }
  if (req.path == "/admin/drain_calls") {
    if (req.method != "GET") return HttpResponse::text(405, "use GET");
    json calls = json::array();
    for (const auto& c : sim.drain_calls()) {
      calls.push_back({{"at_unix", options.t0_unix + c.t},
                       {"endpoint", topo.endpoint_name(c.port)},
                       {"drained", c.drained},
                       {"carried_out", c.carried_out}});
    }
    return HttpResponse::json(200, json_text(json{{"calls", calls}, {"dropped", sim.drain_calls_dropped()}}));
  }
  // /s/NAME/metrics, /s/NAME/gnmi, /s/NAME/rpc, /h/NAME/metrics
  const bool switch_path = req.path.rfind("/s/", 0) == 0;
  const bool host_path = req.path.rfind("/h/", 0) == 0;
  if (switch_path || host_path) {
    const size_t slash = req.path.find('/', 3);
    if (slash != std::string::npos) {
      const std::string name = req.path.substr(3, slash - 3);
      const std::string what = req.path.substr(slash + 1);
      const auto dev = topo.find_device(name);
      if (!dev || topo.device(*dev).is_switch() != switch_path) {
        return HttpResponse::text(404, std::string("no ") + (switch_path ? "switch" : "host") + " named " + name);
      }
      const bool telemetry = what == "metrics" || (switch_path && what == "gnmi");
      if (telemetry) {
        if (req.method != "GET") return HttpResponse::text(405, "use GET");
        switch (sim.mode(*dev)) {
          case DeviceMode::silent: return HttpResponse::text(503, name + " is not answering");
          case DeviceMode::garbage: {
            HttpResponse r;
            r.content_type = what == "gnmi" ? "application/json" : "text/plain; version=0.0.4; charset=utf-8";
            r.body = what == "gnmi" ? "{\"openconfig-interfaces:interfaces\": {\"interface\": [{\"name\": "
                                    : "node_network_up{device=\"eth1\" 1\nnode_network_receive_packets_total{device=";
            return r;
          }
          case DeviceMode::normal: break;
        }
        HttpResponse r;
        if (what == "gnmi") {
          r.content_type = "application/json";
          r.body = sim.render_openconfig(*dev, t);
        } else {
          r.content_type = "text/plain; version=0.0.4; charset=utf-8";
          r.body = switch_path ? sim.render_prometheus(*dev, t) : sim.render_host(*dev, t);
        }
        return r;
      }
      if (switch_path && what == "rpc") {
        if (req.method != "POST") return HttpResponse::text(405, "use POST");
        if (!options.token.empty()) {
          const std::string* auth = req.header("authorization");
          if (auth == nullptr || *auth != "Bearer " + options.token) {
            return HttpResponse::text(401, "missing or wrong bearer token");
          }
        }
        return rpc(sim, *dev, t, req);
      }
    }
  }
  return HttpResponse::text(404, "not found: " + req.path);
}

double answer_delay_s(const FabricSim& sim, const HttpRequest& req) {
  // /s/NAME/rpc only.
  if (req.path.rfind("/s/", 0) != 0) return 0;
  const size_t slash = req.path.find('/', 3);
  if (slash == std::string::npos || req.path.substr(slash + 1) != "rpc") return 0;
  const auto dev = sim.topology().find_device(req.path.substr(3, slash - 3));
  return dev ? sim.rpc_delay_s(*dev) : 0;
}

}  // namespace medic::sim
