// medicd's config file (service/options.cpp), read as `medicd --config FILE` and `medic
// config check FILE` read it: the harness writes the input to a file and calls
// DaemonOptions::parse with only --config (the file must name the topology itself), then
// DaemonOptions::config(), which reads the secrets and checks every setting (DaemonConfig).
// One DaemonOptions parses every input (each parse starts from the defaults, as
// Options.ParsingAgainStartsFromTheDefaults shows): building CLI11's options took two thirds
// of the harness's time.
//
// Invariants: parse goes on or returns a status with a message that starts with the
// program's name and is UTF-8 (what the file got wrong is quoted escaped); config() refuses
// only with std::invalid_argument.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "common/strings.h"
#include "service/options.h"
#include "tests/fuzz/fuzz_common.h"

using namespace medic;

namespace {

const std::string& config_path() {
  static const std::string path = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/medic-fuzz-toml-XXXXXX";
    const int fd = ::mkstemp(tmpl.data());
    if (fd < 0) fuzz::fail("mkstemp failed", tmpl);
    ::close(fd);
    std::atexit([] { ::unlink(config_path().c_str()); });
    return tmpl;
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Secrets from the environment would hide the file's own.
  static const bool env_cleared = [] {
    for (const char* v : {"MEDIC_DB_URL", "MEDIC_DRIVER_TOKEN", "MEDIC_API_TOKEN", "MEDIC_WEBHOOK_SECRET"}) ::unsetenv(v);
    return true;
  }();
  (void)env_cleared;
  {
    std::ofstream f(config_path(), std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  static service::DaemonOptions options("medicd");
  std::ostringstream out, err;
  const auto rc = options.parse({"--config", config_path()}, out, err);
  if (rc) {
    const std::string e = err.str();
    if (*rc == 2) {
      fuzz::check(e.rfind("medicd: ", 0) == 0, "a refusal without the program's name", e);
      fuzz::check(!utf8_error(e).has_value(), "a refusal that is not UTF-8", e);
    }
    return 0;
  }
  fuzz::check(options.config_file() == config_path(), "the config file is not the one given");
  try {
    const service::DaemonConfig c = options.config();
    const auto& s = c.settings();
    fuzz::check(s.poll_interval_s >= 0.05 && s.poll_interval_s <= 3600, "poll-interval out of range");
  } catch (const std::invalid_argument& e) {
    fuzz::check(*e.what() != '\0', "an empty refusal");
  }
  return 0;
}
