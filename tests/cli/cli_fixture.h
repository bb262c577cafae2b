// Shared by the CLI tests: `medic` run in process with its output and exit status captured,
// output split into lines and words, an environment variable cleared for one test, and a
// fresh PostgreSQL database migrated and holding a fabric's inventory.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "tests/db/all_stores.h"
#include "fabric/generator.h"
#include "fabric/topology.h"
#include "tests/support/testing.h"

namespace medic::cli {

// What one `medic` run printed and the status it exited with.
struct Ran {
  int code = -1;
  std::string out, err;
};

// Runs `medic args...` in process.
inline Ran medic(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  Ran r;
  r.code = run(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

inline std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Clears an environment variable for one test and puts the old value back.
class ScopedUnset {
 public:
  explicit ScopedUnset(const char* name) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v;
    ::unsetenv(name);
  }
  ~ScopedUnset() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedUnset(const ScopedUnset&) = delete;
  ScopedUnset& operator=(const ScopedUnset&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A fresh database, migrated, with the inventory of `topo_` (the demo fabric unless the
// test passes another).
class CliDbTest : public ::testing::Test {
 protected:
  explicit CliDbTest(fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo")))
      : topo_(std::move(topo)) {}
  void SetUp() override {
    db_ = std::make_unique<db::AllStores>(tdb_.url());
    db_->migrate();
    ASSERT_TRUE(db_->sync_inventory(topo_).ok());
  }
  std::string url() const { return tdb_.url(); }
  // The name of the link with the end `ref` ("rtsw0001:eth5").
  std::string link_name(const std::string& ref) const { return topo_.link(*topo_.find_link(ref)).name; }

  testing::TestDatabase tdb_;
  fabric::Topology topo_;
  std::unique_ptr<db::AllStores> db_;
};

}  // namespace medic::cli
