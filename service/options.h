// medicd's options, declared once for medicd and for `medic config check`: the command line
// and the TOML file `--config FILE` names. The file holds the same options, each keyed by
// its long name without the dashes (`poll-interval = 1.0`, a repeatable option as an array,
// a flag as true or false); a flag on the command line overrides the file. What the file
// gets wrong is named by its line, what the command line gets wrong by its flag:
//   medicd.toml:7: unknown key "pol-interval" (did you mean "poll-interval"?)
//   medicd.toml:3: poll-interval = 0.001: must be within [0.05, 3600] seconds
//   --poll-interval must be within [0.05, 3600] seconds
#pragma once

#include <cstddef>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "service/config.h"

namespace medic::service {

class DaemonOptions {
 public:
  // `program` begins every message: "medicd", or "medic" for `medic config check`.
  explicit DaemonOptions(std::string program = "medicd");
  ~DaemonOptions();
  DaemonOptions(const DaemonOptions&) = delete;
  DaemonOptions& operator=(const DaemonOptions&) = delete;

  // Parses the arguments (without the program's name), then the config file they name.
  // nullopt: go on. Otherwise the exit status, with what there was to say written to `out`
  // or `err`: 0 after --help, 2 for a config file refused, CLI11's own status for a command
  // line it refuses. Each call starts from the defaults, as a new DaemonOptions would.
  std::optional<int> parse(std::vector<std::string> args, std::ostream& out, std::ostream& err);
  std::optional<int> parse(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

  // The settings as given, secrets not read yet (main fills in the defaults of the host).
  DaemonSettings& settings();
  const std::string& log_level() const;

  // Reads the secrets (each from its file, else its flag, else its environment variable)
  // and checks every setting. Throws std::invalid_argument naming the flag, or the file and
  // line, that is wrong.
  DaemonConfig config();
  // After config(): the bootstrap token ("" for none).
  const std::string& api_token() const;

  // Every key a config file may hold (the options' long names), sorted.
  std::vector<std::string> keys() const;

  // The config file ("" without --config) and how many settings it holds.
  const std::string& config_file() const;
  size_t file_settings() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace medic::service
