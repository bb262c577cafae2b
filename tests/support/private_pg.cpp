#include "tests/support/private_pg.h"

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace medic::testing {

namespace {

std::string pg_script() { return source_dir() + "/scripts/pg"; }

// The pids whose parent is `parent`, from /proc.
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    pid_t ppid = 0;
    if (std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == parent) {
      out.push_back(static_cast<pid_t>(std::stoi(name)));
    }
  }
  return out;
}

}  // namespace

PrivatePostgres::PrivatePostgres() { start(); }

PrivatePostgres::~PrivatePostgres() {
  if (frozen_) thaw();
  run_command("/bin/bash", {pg_script(), "stop", dir_.path()}, std::chrono::seconds(60));
}

void PrivatePostgres::start() {
  std::vector<std::string> env;
  if (!port_.empty()) env.push_back("MEDIC_PG_PORT=" + port_);
  const auto [status, out] = run_command("/bin/bash", {pg_script(), "start", dir_.path()}, std::chrono::seconds(120), env);
  if (status != 0) throw std::runtime_error("private PostgreSQL did not start: " + out);
  url_ = read_file(dir_.file("url"));
  while (!url_.empty() && (url_.back() == '\n' || url_.back() == ' ')) url_.pop_back();
  const size_t colon = url_.rfind(':'), slash = url_.rfind('/');
  port_ = url_.substr(colon + 1, slash - colon - 1);
}

void PrivatePostgres::stop() {
  const auto [status, out] = run_command("/bin/bash", {pg_script(), "stop", dir_.path()}, std::chrono::seconds(60));
  if (status != 0) throw std::runtime_error("private PostgreSQL did not stop: " + out);
}

std::vector<pid_t> PrivatePostgres::server_pids() const {
  for (const std::string& data : {dir_.file("data"), dir_.file("cluster/data")}) {
    std::ifstream pidfile(data + "/postmaster.pid");
    pid_t pid = 0;
    if (pidfile >> pid && pid > 0) {
      std::vector<pid_t> all{pid};
      for (const pid_t c : children_of(pid)) all.push_back(c);
      return all;
    }
  }
  throw std::runtime_error("private PostgreSQL: no postmaster.pid under " + dir_.path());
}

void PrivatePostgres::freeze() {
  for (const pid_t p : server_pids()) ::kill(p, SIGSTOP);
  frozen_ = true;
}

void PrivatePostgres::thaw() {
  for (const pid_t p : server_pids()) ::kill(p, SIGCONT);
  frozen_ = false;
}

}  // namespace medic::testing
