#include "cli/config_check.h"

#include <cstdlib>
#include <exception>
#include <fstream>
#include <ostream>
#include <sstream>

#include "service/options.h"

namespace medic::cli {

namespace {

// The environment systemd gives medicd from its EnvironmentFile= (KEY=VALUE lines, # for
// comments, a value optionally in double or single quotes): set here, so the database URL
// and the secrets it holds are checked as medicd will see them. "" when it is set, else why
// not, naming the file and line.
std::string load_env_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return path + ": cannot open";
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#' || line[start] == ';') continue;
    const size_t eq = line.find('=', start);
    std::string key = eq == std::string::npos ? "" : line.substr(start, eq - start);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    const bool name_ok = !key.empty() && key.find_first_not_of(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
    if (!name_ok) return path + ":" + std::to_string(n) + ": expected KEY=VALUE";
    std::string value = line.substr(eq + 1);
    const size_t v = value.find_first_not_of(" \t");
    value = v == std::string::npos ? "" : value.substr(v);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t' || value.back() == '\r')) value.pop_back();
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    ::setenv(key.c_str(), value.c_str(), 1);
  }
  return "";
}

// What `medicd --config FILE` does before it connects to anything: the file's keys and
// values, the settings' checks, every file they name loaded. No database, no lock.
int cmd_config_check(const std::string& file, const std::string& env_file, std::ostream& out, std::ostream& err) {
  if (!env_file.empty()) {
    if (const std::string bad = load_env_file(env_file); !bad.empty()) {
      err << "medic: " << bad << '\n';
      return 2;
    }
  }
  service::DaemonOptions options("medic");
  std::ostringstream cli_out;  // nothing but --help writes there, and it is not asked for
  if (const auto status = options.parse({"--config=" + file}, cli_out, err)) return *status == 0 ? 0 : 2;
  try {
    const service::DaemonConfig config = options.config();
    const service::LoadedFiles files = service::LoadedFiles::load(config.settings());
    const size_t n = options.file_settings();
    out << file << ": OK: " << n << " setting" << (n == 1 ? "" : "s") << "; topology " << config.settings().topology_path
        << ": " << files.topology->devices().size() << " devices, " << files.topology->links().size() << " links\n";
    return 0;
  } catch (const std::exception& e) {
    err << "medic: " << e.what() << '\n';
    return 2;
  }
}

}  // namespace

void add_config_commands(CommandContext& ctx) {
  auto* config = ctx.app.add_subcommand("config", "medicd's config file (--config)");
  config->require_subcommand(1);
  auto file = std::make_shared<std::string>();
  auto* check = config->add_subcommand(
      "check", "check FILE as medicd would at start-up (keys, values, settings, every file it names); no database");
  check->add_option("file", *file, "medicd's TOML config file")->required();
  auto env_file = std::make_shared<std::string>();
  check->add_option("--env-file", *env_file,
                    "the EnvironmentFile systemd gives medicd (MEDIC_DB_URL, the secrets): checked as medicd sees them");
  check->callback([&ctx, file, env_file] {
    ctx.action = [&ctx, file, env_file] { return cmd_config_check(*file, *env_file, ctx.out, ctx.err); };
  });
}

}  // namespace medic::cli
