// For tests: one connection with every store over it, so that a test can set up and read
// back any record through one object (`db.open_incident(...)`, `db.begin_action(...)`).
// Production code takes only the stores it uses.
#pragma once

#include <string>

#include "db/connection.h"
#include "db/incident_store.h"
#include "db/inventory_store.h"
#include "db/leader.h"
#include "db/maintenance_store.h"
#include "db/queue_store.h"
#include "db/remediation_store.h"
#include "db/slo_store.h"
#include "db/snapshot_store.h"
#include "db/user_store.h"
#include "db/audit_store.h"
#include "db/notify_store.h"

namespace medic::db {

struct AllStores : Connection,
                   InventoryStore,
                   IncidentStore,
                   MaintenanceStore,
                   RemediationRecords,
                   QueueStore,
                   SnapshotStore,
                   SloStore,
                   LeaderStore,
                   UserStore,
                   AuditStore,
                   NotifyStore {
  explicit AllStores(const std::string& url, DbOptions options = {})
      : Connection(url, options),
        InventoryStore(conn()),
        IncidentStore(conn()),
        MaintenanceStore(conn()),
        RemediationRecords(conn()),
        QueueStore(conn()),
        SnapshotStore(conn()),
        SloStore(conn()),
        LeaderStore(conn()),
        UserStore(conn()),
        AuditStore(conn()),
        NotifyStore(conn()) {}
  Connection& conn() { return *this; }
};

// An operator as a test names one in the audit trail.
inline Actor person(const std::string& name, const std::string& role = "operator") {
  return Actor{name, role, "test"};
}

}  // namespace medic::db
