// medic: the fabric-medic command line.
#include <iostream>

#include "cli/commands.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return medic::cli::run(args, std::cout, std::cerr);
}
