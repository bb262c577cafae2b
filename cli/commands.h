// The `medic` command line. Each command returns its exit status and writes to the given
// streams so tests can run it in-process.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace medic::cli {

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace medic::cli
