// A TCP proxy on 127.0.0.1 for fault tests: forwards every connection to a target, and can
// stop forwarding while keeping the connections open (a hung server: the kernel still
// accepts and acknowledges, nothing answers), or cut every connection (a dropped link).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace medic::testing {

class TcpProxy {
 public:
  // Forwards 127.0.0.1:port() to target_host:target_port; throws on a socket error.
  TcpProxy(const std::string& target_host, uint16_t target_port);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  uint16_t port() const { return port_; }
  // Stops moving bytes (both ways, new connections accepted but not forwarded) until resume().
  void pause();
  void resume();
  // Closes every open connection at once (new ones are forwarded as usual).
  void cut();
  // Closes the connection whose client next sends bytes holding `needle` (a statement's
  // text: "COMMIT"), once: after forwarding them (the server gets the statement, the client
  // never its answer) or instead of it (the server never gets it).
  void cut_at(const std::string& needle, bool forward);
  // How many connections cut_at has cut.
  int cut_at_count() const { return cut_at_count_.load(); }
  // A URL like the target's with host and port replaced by the proxy's.
  static std::string rewrite_url(const std::string& url, uint16_t port);
  // Host and port of a postgresql:// URL.
  static std::pair<std::string, uint16_t> url_host_port(const std::string& url);

 private:
  void run();

  std::string target_host_;
  uint16_t target_port_ = 0;
  int listener_ = -1;
  uint16_t port_ = 0;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> paused_{false};
  std::atomic<bool> cut_{false};
  std::mutex cut_at_mutex_;
  std::string cut_at_;  // "" once used (or never set)
  bool cut_at_forward_ = false;
  std::atomic<int> cut_at_count_{0};
  std::thread thread_;
};

}  // namespace medic::testing
