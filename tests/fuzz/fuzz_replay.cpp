// A scrape set as `medic replay` reads it (cli/replay.cpp): the input describes the folder,
// the harness writes it to a private temporary directory and calls cli::replay on it with
// a small topology and the shipped counter map and detector thresholds (loaded once: they
// are not the input). So folder and file names (Unix times, device names, extensions),
// payloads of every format and how polls follow each other (counter resets and wraps,
// devices missing from a poll) all come from the input. The input is sections, each a
// header line and the file's bytes:
//   @@ 1795281813.395/rtsw1.prom
//   ifHCInOctets{ifName="Eth1/49"} 12
//   @@ 1795281814.395/ctsw1.json
//   {...}
// A header naming a path the harness will not write (empty, ".", "..", a NUL, more than one
// '/') skips its section. replay must exit 0, 1 or 2 and print only JSON lines.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>

#include "cli/replay.h"
#include "tests/fuzz/fuzz_common.h"

using namespace medic;
namespace fs = std::filesystem;

namespace {

const fs::path& workdir() {
  static const fs::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/medic-fuzz-replay-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) fuzz::fail("mkdtemp failed", tmpl);
    std::ofstream(tmpl + "/topology.json") << fuzz::kTopology;
    return fs::path(tmpl);
  }();
  return dir;
}

// Removes the working directory when the harness exits.
struct Cleanup {
  ~Cleanup() {
    std::error_code ec;
    fs::remove_all(workdir(), ec);
  }
};

bool plain_name(std::string_view s) {
  return !s.empty() && s.size() <= 100 && s != "." && s != ".." && s.find('\0') == std::string_view::npos &&
         s.find('/') == std::string_view::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Cleanup cleanup;
  static const cli::ReplayOptions options = [] {
    cli::ReplayOptions o;
    o.topology_path = (workdir() / "topology.json").string();
    o.scrapes_dir = (workdir() / "scrapes").string();
    o.counter_map_path = std::string(MEDIC_SOURCE_DIR) + "/data/counter_map.json";
    o.detectors_path = std::string(MEDIC_SOURCE_DIR) + "/data/detectors.json";
    o.device_fault_links = 2;
    return o;
  }();
  const fs::path scrapes = options.scrapes_dir;
  std::error_code ec;
  fs::remove_all(scrapes, ec);
  fs::create_directory(scrapes);

  std::string_view in(reinterpret_cast<const char*>(data), size);
  int files = 0;
  while (!in.empty() && files < 32) {
    // A section starts with "@@ " at the start of the input or of a line.
    if (in.rfind("@@ ", 0) != 0) {
      const size_t next = in.find("\n@@ ");
      if (next == std::string_view::npos) break;
      in.remove_prefix(next + 1);
      continue;
    }
    const size_t eol = in.find('\n');
    const std::string_view header = in.substr(3, eol == std::string_view::npos ? std::string_view::npos : eol - 3);
    in.remove_prefix(eol == std::string_view::npos ? in.size() : eol + 1);
    const size_t end = in.find("\n@@ ");
    const std::string_view body = in.substr(0, end);
    in.remove_prefix(end == std::string_view::npos ? in.size() : end + 1);

    const size_t slash = header.find('/');
    if (slash == std::string_view::npos) continue;
    const std::string_view folder = header.substr(0, slash), file = header.substr(slash + 1);
    if (!plain_name(folder) || !plain_name(file)) continue;
    fs::create_directory(scrapes / std::string(folder), ec);
    if (ec) continue;
    std::ofstream(scrapes / std::string(folder) / std::string(file), std::ios::binary)
        .write(body.data(), static_cast<std::streamsize>(body.size()));
    ++files;
  }

  // Loaded once (what medic replay does before the scrapes, the same for every input).
  static const cli::ReplayModel model = [] {
    std::ostringstream err;
    auto m = cli::load_replay_model(options, err);
    if (!m) fuzz::fail("the harness's topology, counter map or detectors do not load", err.str());
    return std::move(*m);
  }();
  std::ostringstream out, err;
  const int rc = cli::replay(model, options, out, err);
  fuzz::check(rc == 0 || rc == 1 || rc == 2, "replay exit status", std::to_string(rc));
  std::istringstream lines(out.str());
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    fuzz::check(!j.is_discarded() && j.is_object() && j.contains("type"), "replay printed a line that is not JSON", line);
  }
  if (rc == 0) fuzz::check(err.str().find("replayed ") != std::string::npos, "replay succeeded without its summary");
  return 0;
}
