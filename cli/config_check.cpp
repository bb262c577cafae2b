#include "cli/config_check.h"

#include <exception>
#include <ostream>
#include <sstream>

#include "service/options.h"

namespace medic::cli {

namespace {

// What `medicd --config FILE` does before it connects to anything: the file's keys and
// values, the settings' checks, every file they name loaded. No database, no lock.
int cmd_config_check(const std::string& file, std::ostream& out, std::ostream& err) {
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
  check->callback([&ctx, file] { ctx.action = [&ctx, file] { return cmd_config_check(*file, ctx.out, ctx.err); }; });
}

}  // namespace medic::cli
