// The inventory: switches and links from the topology, and their drain and oper states.
#include "db/inventory_store.h"

#include "db/internal.h"

namespace medic::db {

using namespace internal;

Status InventoryStore::sync_inventory(const fabric::Topology& t) {
  return c_.run("sync_inventory", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    w.exec("CREATE TEMP TABLE in_switches (LIKE switches INCLUDING DEFAULTS) ON COMMIT DROP");
    w.exec(
        "CREATE TEMP TABLE in_links (name text, a_device text, a_port text, b_device text, "
        "b_port text, speed_gbps double precision) ON COMMIT DROP");
    {
      pqxx::stream_to s(w, "in_switches",
                        std::vector<std::string>{"name", "role", "zone", "plane", "telemetry_url",
                                                 "driver_kind", "driver_url"});
      for (const auto& d : t.devices()) {
        if (!d.is_switch()) continue;
        // -1 means "no zone/plane" in the model and NULL (a null pointer) in the table.
        const std::string zone = std::to_string(d.zone), plane = std::to_string(d.plane);
        s << std::make_tuple(d.name, std::string(fabric::to_string(d.role)),
                             d.zone >= 0 ? zone.c_str() : nullptr,
                             d.plane >= 0 ? plane.c_str() : nullptr, d.telemetry_url,
                             d.driver_kind, d.driver_url);
      }
      s.complete();
    }
    {
      pqxx::stream_to s(w, "in_links",
                        std::vector<std::string>{"name", "a_device", "a_port", "b_device", "b_port", "speed_gbps"});
      for (const auto& l : t.links()) {
        const auto& pa = t.port(l.a);
        const auto& pb = t.port(l.b);
        s << std::make_tuple(l.name, t.device(pa.device).name, pa.name, t.device(pb.device).name,
                             pb.name, l.speed_gbps);
      }
      s.complete();
    }
    w.exec(
        "INSERT INTO switches (name, role, zone, plane, telemetry_url, driver_kind, driver_url) "
        "SELECT name, role, zone, plane, telemetry_url, driver_kind, driver_url FROM in_switches "
        "ON CONFLICT (name) DO UPDATE SET role = excluded.role, zone = excluded.zone, "
        "plane = excluded.plane, telemetry_url = excluded.telemetry_url, "
        "driver_kind = excluded.driver_kind, driver_url = excluded.driver_url, updated_at = now()");
    w.exec(
        "INSERT INTO links (name, a_device, a_port, b_device, b_port, speed_gbps) "
        "SELECT name, a_device, a_port, b_device, b_port, speed_gbps FROM in_links "
        "ON CONFLICT (name) DO UPDATE SET speed_gbps = excluded.speed_gbps, updated_at = now() "
        "WHERE links.speed_gbps IS DISTINCT FROM excluded.speed_gbps");
    w.commit();
    return Ok{};
  });
}

Result<std::vector<LinkDrainRow>> InventoryStore::drain_states() {
  return c_.run("drain_states", [&](Pq& pq) -> Result<std::vector<LinkDrainRow>> {
    pqxx::nontransaction n(pq.c);
    const auto r = n.exec(
        "SELECT name, drain_state, coalesce(drain_incident_id, 0) FROM links "
        "WHERE drain_state <> 'undrained' ORDER BY name");
    std::vector<LinkDrainRow> out;
    for (const auto& row : r) {
      out.push_back({row[0].as<std::string>(), row[1].as<std::string>(), row[2].as<int64_t>()});
    }
    return out;
  });
}

Result<std::string> InventoryStore::resolve_link(const std::string& ref) {
  return c_.run("resolve_link", [&](Pq& pq) -> Result<std::string> {
    pqxx::nontransaction n(pq.c);
    const auto r = n.exec_params(
        "SELECT name FROM links WHERE name = $1 OR a_device || ':' || a_port = $1 OR b_device || ':' || b_port = $1 "
        "LIMIT 1",
        ref);
    return r.empty() ? std::string() : r[0][0].as<std::string>();
  });
}

Result<bool> InventoryStore::device_known(const std::string& name) {
  return c_.run("device_known", [&](Pq& pq) -> Result<bool> {
    pqxx::nontransaction n(pq.c);
    const auto r = n.exec_params(
        "SELECT EXISTS (SELECT 1 FROM switches WHERE name = $1) OR "
        "EXISTS (SELECT 1 FROM links WHERE a_device = $1 OR b_device = $1)",
        name);
    return r[0][0].as<bool>();
  });
}

Status InventoryStore::set_link_oper(const std::vector<std::pair<std::string, bool>>& links, Time at) {
  return c_.run("set_link_oper", [&](Pq& pq) -> Status {
    // Two statements whatever the count: a whole fabric coming up at medicd's first poll
    // (75,000 links on zone32k) is one update, not 75,000.
    std::vector<std::string> up, down;
    for (const auto& [name, is_up] : links) (is_up ? up : down).push_back(name);
    pqxx::work w(pq.c);
    for (const auto& [names, state] : {std::pair{&up, "up"}, std::pair{&down, "down"}}) {
      if (names->empty()) continue;
      w.exec_params(
          "UPDATE links SET oper_state = $2, oper_changed_at = $3::timestamptz WHERE name = ANY($1::text[]) "
          "AND oper_state <> $2",
          text_array(*names), std::string(state), ts(at));
    }
    w.commit();
    return Ok{};
  });
}

Result<std::vector<remediation::RecordedLinkState>> InventoryStore::link_states() {
  return c_.run("link states", [&](Pq& pq) -> Result<std::vector<remediation::RecordedLinkState>> {
    pqxx::read_transaction tx(pq.c);
    const pqxx::result r = tx.exec_params(
        "SELECT name, drain_state, oper_state FROM links WHERE drain_state <> $1 OR oper_state <> $2 ORDER BY name",
        "undrained", "up");
    std::vector<remediation::RecordedLinkState> out;
    out.reserve(r.size());
    for (const auto& row : r) out.push_back({row[0].as<std::string>(), row[1].as<std::string>(), row[2].as<std::string>()});
    return out;
  });
}

}  // namespace medic::db
