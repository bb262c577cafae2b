// Schema migrations: db/migrations/NNN_name.sql, applied in order, each once, each recorded
// in schema_migrations with a checksum so an edited, already-applied file is caught.
#pragma once

#include <string>
#include <vector>

namespace medic::db {

struct Migration {
  int version;
  const char* name;
  const char* sql;
};

const std::vector<Migration>& embedded_migrations();

}  // namespace medic::db
