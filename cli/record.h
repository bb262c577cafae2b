// `medic record`: scrapes every device of a topology a number of times and writes the
// answers as a scrape set `medic replay` reads (DIR/UNIXTIME/DEVICE.prom|.json|.snmp): the
// switches polled at snmp:// are walked as medicd walks them, their walks written as
// rendered (the text counter_map.json's "snmp" rules read).
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
  // SNMP credentials for switches at snmp:// (default: the MEDIC_SNMP_* environment).
  std::string snmp_credentials_path;
};

int record(const RecordOptions& options, std::ostream& out, std::ostream& err);

}  // namespace medic::cli
