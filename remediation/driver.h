// Drivers take a switch interface out of forwarding (drain) and put it back (undrain).
// Every call is idempotent: draining a drained interface succeeds and changes nothing.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/http_client.h"
#include "common/result.h"
#include "fabric/topology.h"

namespace medic::remediation {

struct InterfaceState {
  std::string interface;
  bool drained = false;
  bool oper_up = false;
};

// A failure says, by its kind, whether the switch may have carried the call out anyway
// (ErrorKind::indeterminate: some of it may have been done) or certainly did not.
class Driver {
 public:
  virtual ~Driver() = default;
  virtual std::string kind() const = 0;
  virtual Result<InterfaceState> drain(const std::string& interface) = 0;
  virtual Result<InterfaceState> undrain(const std::string& interface) = 0;
  virtual Result<InterfaceState> get_state(const std::string& interface) = 0;
};

struct JsonRpcOptions {
  double timeout_s = 3.0;
  int attempts = 3;           // tries per call, with exponential backoff between them
  double backoff_s = 0.2;
  std::string bearer_token;   // sent as "Authorization: Bearer ..." when set
  std::string ca_file;        // PEM CA bundle for https:// URLs ("" = the system's); peer and host are verified
};

// JSON-RPC 2.0 over HTTP(S) POST, methods interface.drain, interface.undrain,
// interface.get_state with params {"interface": NAME} (docs/api.md). Network failures and
// HTTP 5xx are retried with exponential backoff; HTTP 4xx, JSON-RPC errors and TLS
// certificate failures are final. A failure is ErrorKind::indeterminate when the switch may
// have carried the call out: a request went out and its answer was lost (a timeout, a cut
// connection), was a 5xx, or was not understood; a refusal (4xx, a JSON-RPC error) or a
// request that never left (a refused connection, a certificate) is not.
class JsonRpcDriver final : public Driver {
 public:
  JsonRpcDriver(std::string device, std::string url, JsonRpcOptions options = {});
  std::string kind() const override { return "jsonrpc"; }
  Result<InterfaceState> drain(const std::string& interface) override;
  Result<InterfaceState> undrain(const std::string& interface) override;
  Result<InterfaceState> get_state(const std::string& interface) override;

 private:
  Result<InterfaceState> call(const std::string& method, const std::string& interface);
  std::string device_;
  std::string url_;
  JsonRpcOptions options_;
  HttpClient http_;
  std::mutex mu_;
  int64_t next_id_ = 1;
};

// Records what it would do and remembers the resulting state; touches nothing.
class DryRunDriver final : public Driver {
 public:
  explicit DryRunDriver(std::string device) : device_(std::move(device)) {}
  std::string kind() const override { return "dryrun"; }
  Result<InterfaceState> drain(const std::string& interface) override;
  Result<InterfaceState> undrain(const std::string& interface) override;
  Result<InterfaceState> get_state(const std::string& interface) override;
  std::vector<std::string> log() const;

 private:
  std::string device_;
  mutable std::mutex mu_;
  std::map<std::string, bool> drained_;
  std::vector<std::string> log_;
};

// One driver per switch, built from the topology's driver kind and URL.
class DriverSet {
 public:
  DriverSet(const fabric::Topology& topology, const JsonRpcOptions& options);
  // For tests: put a driver in place of a switch's own.
  void replace(fabric::DeviceId device, std::unique_ptr<Driver> driver);
  // nullptr for hosts and for switches without a driver.
  Driver* for_device(fabric::DeviceId device) const;

 private:
  std::vector<std::unique_ptr<Driver>> drivers_;
};

}  // namespace medic::remediation
