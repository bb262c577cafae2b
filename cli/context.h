// What every group of `medic` subcommands shares: the database option, the action chosen by
// the parse, and the output streams. Each group registers itself from its own file.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>

#include <unistd.h>

#include "db/audit_store.h"
#include "db/connection.h"
#include "fabric/loader.h"

namespace medic::cli {

struct DbOption {
  std::string url;
  void add(CLI::App* cmd) { cmd->add_option("--db", url, "PostgreSQL URL (default: $MEDIC_DB_URL)"); }
  std::unique_ptr<db::Connection> open() const {
    std::string u = url;
    if (u.empty()) {
      if (const char* env = std::getenv("MEDIC_DB_URL")) u = env;
    }
    if (u.empty()) throw std::invalid_argument("no database: pass --db URL or set MEDIC_DB_URL");
    return std::make_unique<db::Connection>(u);
  }
};

// Who the CLI acts as in the audit trail. The CLI holds the database's URL (full access),
// so it is recorded as such: role "cli", the name given with --by (default: the login
// name), from this host and Unix user.
inline db::Actor cli_actor(const std::string& by) {
  std::string user;
  if (const char* u = std::getenv("USER"); u != nullptr && *u != 0) user = u;
  if (user.empty()) user = "uid " + std::to_string(::getuid());
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = 0;
  return db::Actor{by.empty() ? user : by, "cli", "cli on " + std::string(host) + " as " + user};
}

// Loads a topology file; on failure writes every problem and "medic: FILE: N problems" to
// `err` and returns nullopt (the caller picks the exit status).
inline std::optional<fabric::Topology> load_topology_reporting(const std::string& file, std::ostream& err) {
  try {
    return fabric::load_topology_file(file);
  } catch (const fabric::TopologyError& e) {
    for (const auto& p : e.problems()) err << p << '\n';
    err << "medic: " << file << ": " << e.problems().size() << " problem" << (e.problems().size() == 1 ? "" : "s")
        << "\n";
    return std::nullopt;
  }
}

struct CommandContext {
  CLI::App& app;
  DbOption& dbo;
  std::function<int()>& action;  // set by the callback of the subcommand that was given
  std::ostream& out;
  std::ostream& err;
};

}  // namespace medic::cli
