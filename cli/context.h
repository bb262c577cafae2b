// What every group of `medic` subcommands shares: the database option, the action chosen by
// the parse, and the output streams. Each group registers itself from its own file.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <functional>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>

#include "db/database.h"

namespace medic::cli {

struct DbOption {
  std::string url;
  void add(CLI::App* cmd) { cmd->add_option("--db", url, "PostgreSQL URL (default: $MEDIC_DB_URL)"); }
  std::unique_ptr<db::Database> open() const {
    std::string u = url;
    if (u.empty()) {
      if (const char* env = std::getenv("MEDIC_DB_URL")) u = env;
    }
    if (u.empty()) throw std::invalid_argument("no database: pass --db URL or set MEDIC_DB_URL");
    return std::make_unique<db::Database>(u);
  }
};

struct CommandContext {
  CLI::App& app;
  DbOption& dbo;
  std::function<int()>& action;  // set by the callback of the subcommand that was given
  std::ostream& out;
  std::ostream& err;
};

}  // namespace medic::cli
