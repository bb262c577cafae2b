// Reading and writing the JSON topology format (docs/formats.md).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fabric/topology.h"

namespace medic::fabric {

// Every problem found in a file, each "FILE: $.json.path: what is wrong".
class TopologyError : public std::runtime_error {
 public:
  explicit TopologyError(std::vector<std::string> problems);
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::vector<std::string> problems_;
};

// Throws TopologyError naming the file, the JSON path and the problem.
Topology load_topology_file(const std::string& path);
Topology parse_topology(std::string_view text, const std::string& source);

nlohmann::json topology_to_json(const Topology& t);

}  // namespace medic::fabric
