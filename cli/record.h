// `medic record`: scrapes every device of a topology a number of times and writes the
// answers as a scrape set `medic replay` reads (DIR/UNIXTIME/DEVICE.prom|.json).
#pragma once

#include <iosfwd>
#include <string>

namespace medic::cli {

struct RecordOptions {
  std::string topology_path;
  std::string out_dir;
  int polls = 10;
  double interval_s = 1.0;
  double timeout_s = 2.0;
};

int record(const RecordOptions& options, std::ostream& out, std::ostream& err);

}  // namespace medic::cli
