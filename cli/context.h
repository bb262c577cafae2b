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
