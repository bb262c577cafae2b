// Shared test support: a fresh PostgreSQL database per test, child processes stopped by
// their pid, temporary directories, and paths to the binaries under test.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace medic::testing {

// Where the source tree is (fixtures live under tests/fixtures/).
std::string source_dir();
std::string fixture_path(const std::string& relative);
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& text);

// A temporary directory removed (with its contents) when the object goes.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A database of its own on the tests' server, created empty and dropped afterwards.
class TestDatabase {
 public:
  TestDatabase();
  ~TestDatabase();
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;
  const std::string& url() const { return url_; }
  // The same database over the private server's Unix socket (reachable from inside network
  // namespaces). Throws when the tests run against an outside server (MEDIC_DB_URL).
  std::string socket_url() const;
  // Runs a query and returns the first column of every row as text ("" for NULL).
  std::vector<std::string> column(const std::string& sql) const;
  std::string scalar(const std::string& sql) const;
  void exec(const std::string& sql) const;

 private:
  std::string admin_url_;
  std::string name_;
  std::string url_;
};

// A child process; killed (SIGTERM, then SIGKILL) by its pid when the object goes.
class Process {
 public:
  Process(const std::string& binary, const std::vector<std::string>& args,
          const std::vector<std::string>& env = {});
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  // Sends a signal by pid; returns false if the process is already gone.
  bool signal(int sig);
  // Waits up to `timeout` for exit; returns the exit status (or -signal), or nullopt.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  // stdout and stderr, captured to files.
  std::string output() const;

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::string out_path_;
};

// Runs a command to completion (bounded by timeout) and returns {exit status, stdout+stderr}.
std::pair<int, std::string> run_command(const std::string& binary, const std::vector<std::string>& args,
                                        std::chrono::milliseconds timeout = std::chrono::seconds(60),
                                        const std::vector<std::string>& env = {});

// A loopback port nothing listens on (bound, read, closed).
uint16_t closed_port();

// The lines joined with newlines (for failure messages).
std::string join_lines(const std::vector<std::string>& lines);

// Polls `condition` every 50 ms until it holds or `timeout` passes; returns whether it held.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

// Where a medicd serves HTTP ("http://127.0.0.1:PORT"), from the line it logs when it starts
// serving; "" while it has not.
std::string http_base_from_log(const std::string& log);
// One unlabelled sample of a Prometheus text exposition, nullopt when absent.
std::optional<double> metric_value(const std::string& exposition, const std::string& name);

}  // namespace medic::testing
