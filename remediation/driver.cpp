#include "remediation/driver.h"

#include "common/strings.h"

#include "remediation/netns_driver.h"

#include <cctype>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

namespace medic::remediation {

using nlohmann::json;

JsonRpcDriver::JsonRpcDriver(std::string device, std::string url, JsonRpcOptions options)
    : device_(std::move(device)), url_(std::move(url)), options_(std::move(options)) {}

Result<InterfaceState> JsonRpcDriver::drain(const std::string& interface) {
  return call("interface.drain", interface);
}
Result<InterfaceState> JsonRpcDriver::undrain(const std::string& interface) {
  return call("interface.undrain", interface);
}
Result<InterfaceState> JsonRpcDriver::get_state(const std::string& interface) {
  return call("interface.get_state", interface);
}

Result<InterfaceState> JsonRpcDriver::call(const std::string& method, const std::string& interface) {
  std::lock_guard lock(mu_);
  const std::string where = device_ + " " + method + "(" + interface + ")";
  HttpCallOptions opt;
  opt.timeout_s = options_.timeout_s;
  opt.ca_file = options_.ca_file;
  if (!options_.bearer_token.empty()) {
    opt.headers.emplace_back("Authorization", "Bearer " + options_.bearer_token);
  }
  std::string last_error;
  double backoff = options_.backoff_s;
  const int attempts = std::max(1, options_.attempts);
  // Whether any attempt may have been carried out by the switch: its request went out and
  // no answer said no. Such a failure is indeterminate (the caller must find out and put
  // the interface back); one whose every attempt was refused or never sent is not.
  bool maybe_done = false;
  auto fail = [&](std::string message, ErrorKind definite) {
    return Error{where + ": " + std::move(message), maybe_done ? ErrorKind::indeterminate : definite};
  };
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    if (attempt > 1) {
      std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
      backoff *= 2;
    }
    const json req = {{"jsonrpc", "2.0"},
                      {"id", next_id_++},
                      {"method", method},
                      {"params", {{"interface", interface}}}};
    auto reply = http_.post(url_, req.dump(), "application/json", opt);
    if (!reply.ok()) {
      maybe_done = maybe_done || http_.last_request_sent();
      // A certificate that does not verify will not verify on the next try either.
      if (http_.last_failure_permanent()) return fail(reply.error(), ErrorKind::unavailable);
      last_error = reply.error();
      continue;  // network trouble: retry
    }
    if (reply->status >= 500) {
      maybe_done = true;  // a server error says nothing of what was done before it
      last_error = "HTTP " + std::to_string(reply->status);
      continue;
    }
    if (reply->status != 200) {
      // 4xx will not get better by retrying (bad token, unknown path).
      // What a switch says is quoted escaped and cut: it goes into logs and action rows.
      std::string_view body = reply->body;
      while (!body.empty() && std::isspace(static_cast<unsigned char>(body.back()))) body.remove_suffix(1);
      return fail("HTTP " + std::to_string(reply->status) + ": " + escape_text(body, 200), ErrorKind::conflict);
    }
    const json doc = json::parse(reply->body, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) {
      maybe_done = true;  // an answer not understood: the switch may have acted
      return fail("answer is not a JSON object", ErrorKind::unavailable);
    }
    if (const auto e = doc.find("error"); e != doc.end() && !e->is_null()) {
      std::string msg = e->is_object() && e->contains("message") && (*e)["message"].is_string()
                            ? (*e)["message"].get<std::string>()
                            : e->dump();
      return fail("switch refused: " + escape_text(msg, 200), ErrorKind::conflict);
    }
    const auto r = doc.find("result");
    if (r == doc.end() || !r->is_object() || !r->contains("drained") || !(*r)["drained"].is_boolean()) {
      maybe_done = true;
      return fail("answer has no result.drained boolean", ErrorKind::unavailable);
    }
    InterfaceState st;
    st.interface = interface;
    st.drained = (*r)["drained"].get<bool>();
    if (const auto o = r->find("oper_status"); o != r->end() && o->is_string()) {
      st.oper_up = o->get<std::string>() == "up";
    }
    return st;
  }
  return fail(last_error + " (after " + std::to_string(attempts) + " attempts)", ErrorKind::unavailable);
}

Result<InterfaceState> DryRunDriver::drain(const std::string& interface) {
  std::lock_guard lock(mu_);
  log_.push_back("drain " + device_ + ":" + interface);
  drained_[interface] = true;
  return InterfaceState{interface, true, true};
}

Result<InterfaceState> DryRunDriver::undrain(const std::string& interface) {
  std::lock_guard lock(mu_);
  log_.push_back("undrain " + device_ + ":" + interface);
  drained_[interface] = false;
  return InterfaceState{interface, false, true};
}

Result<InterfaceState> DryRunDriver::get_state(const std::string& interface) {
  std::lock_guard lock(mu_);
  const auto it = drained_.find(interface);
  return InterfaceState{interface, it != drained_.end() && it->second, true};
}

std::vector<std::string> DryRunDriver::log() const {
  std::lock_guard lock(mu_);
  return log_;
}

DriverSet::DriverSet(const fabric::Topology& topology, const JsonRpcOptions& options)
    : drivers_(topology.devices().size()) {
  for (fabric::DeviceId d = 0; d < topology.devices().size(); ++d) {
    const fabric::Device& dev = topology.device(d);
    if (!dev.is_switch()) continue;
    if (dev.driver_kind == "jsonrpc") {
      drivers_[d] = std::make_unique<JsonRpcDriver>(dev.name, dev.driver_url, options);
    } else if (dev.driver_kind == "dryrun") {
      drivers_[d] = std::make_unique<DryRunDriver>(dev.name);
    } else if (dev.driver_kind == "netns") {
      // Throws std::invalid_argument for a url that is not netns:NAME: a start-up error.
      drivers_[d] = std::make_unique<NetnsDriver>(dev.name, dev.driver_url);
    }
  }
}

void DriverSet::replace(fabric::DeviceId device, std::unique_ptr<Driver> driver) {
  drivers_[device] = std::move(driver);
}

Driver* DriverSet::for_device(fabric::DeviceId device) const {
  return device < drivers_.size() ? drivers_[device].get() : nullptr;
}

}  // namespace medic::remediation
