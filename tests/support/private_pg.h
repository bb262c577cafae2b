// A PostgreSQL cluster of one test's own (scripts/pg in a temporary directory), for tests
// that stop, freeze or restart the server: the shared test server must not be touched, as
// other tests run against it at the same time.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "tests/support/testing.h"

namespace medic::testing {

class PrivatePostgres {
 public:
  // initdb and start; fails the calling test (throws) when the server does not start.
  PrivatePostgres();
  ~PrivatePostgres();
  PrivatePostgres(const PrivatePostgres&) = delete;
  PrivatePostgres& operator=(const PrivatePostgres&) = delete;

  const std::string& url() const { return url_; }
  // Fast shutdown, and start again on the same port with the same data.
  void stop();
  void start();
  // SIGSTOP / SIGCONT to the postmaster and every server process it started (by pid).
  void freeze();
  void thaw();

 private:
  std::vector<pid_t> server_pids() const;

  TempDir dir_;
  std::string url_;
  std::string port_;
  bool frozen_ = false;
};

}  // namespace medic::testing
