// A test database migrated and holding the demo fabric's inventory.
#pragma once

#include <stdexcept>
#include <string>

#include "tests/db/all_stores.h"
#include "fabric/generator.h"
#include "tests/support/testing.h"

namespace medic::db {

struct DemoDb {
  testing::TestDatabase tdb;
  fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  AllStores db{tdb.url()};
  DemoDb() {
    db.migrate();
    const auto st = db.sync_inventory(topo);
    if (!st.ok()) throw std::runtime_error(st.error());
  }
  fabric::LinkId link(const std::string& ref) const { return *topo.find_link(ref); }
  std::string link_name(const std::string& ref) const { return topo.link(link(ref)).name; }
  fabric::PortId port(const std::string& dev, const std::string& p) const { return *topo.find_port(dev, p); }
  fabric::DeviceId device(const std::string& name) const { return *topo.find_device(name); }
};

}  // namespace medic::db
