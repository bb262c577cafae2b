#include "telemetry/snmp.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>

#include "common/files.h"
#include "common/json.h"
#include "common/strings.h"

namespace medic::telemetry {

namespace {

constexpr uint32_t kSysUpTime0[] = {1, 3, 6, 1, 2, 1, 1, 3, 0};

std::vector<uint32_t> col(std::initializer_list<uint32_t> table, uint32_t column) {
  std::vector<uint32_t> o(table);
  o.push_back(column);
  return o;
}

bool has_prefix(const std::vector<uint32_t>& oid, const std::vector<uint32_t>& prefix) {
  return oid.size() > prefix.size() && std::equal(prefix.begin(), prefix.end(), oid.begin());
}

// An interface name that can stand in a label as it is (switch ports always can).
bool plain_label(std::string_view s) {
  return !s.empty() && s.size() <= 256 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c > ' ' && c != '"' && c != '\\' && c != 0x7f; });
}

}  // namespace

// --- credentials ------------------------------------------------------------------------

Result<SnmpCredentials> SnmpCredentials::parse(std::string_view text, const std::string& source) {
  auto doc = parse_json(text, source);
  if (!doc) {
    // The parser's message quotes what it last read, which may be a secret: say where only.
    std::string m = doc.error();
    if (const size_t cut = m.find(": invalid JSON"); cut != std::string::npos) m = m.substr(0, cut);
    return Error::invalid(m + ": invalid JSON (the text is not shown: it may hold a secret)");
  }
  const nlohmann::json& j = *doc;
  auto fail = [&](const std::string& path, const std::string& what) {
    return Error::invalid(source + ": " + path + ": " + what);
  };
  if (!j.is_object()) return fail("$", std::string("expected an object, got ") + json_type_name(j));
  for (const auto& [k, v] : j.items()) {
    static constexpr std::string_view known[] = {"version",      "community",     "user",         "auth_protocol",
                                                 "auth_password", "priv_protocol", "priv_password", "comment"};
    if (std::find(std::begin(known), std::end(known), k) == std::end(known)) return fail("$", "unknown key " + quote(k));
    if (!v.is_string()) return fail("$." + k, std::string("expected a string, got ") + json_type_name(v));
  }
  auto str = [&](const char* k) { return j.contains(k) ? j[k].get<std::string>() : std::string(); };
  SnmpCredentials c;
  const std::string version = str("version");
  if (version == "2c" || version == "v2c") {
    c.version = Version::v2c;
    c.community = str("community");
    if (c.community.empty()) return fail("$.community", "SNMPv2c needs a community");
    for (const char* k : {"user", "auth_protocol", "auth_password", "priv_protocol", "priv_password"}) {
      if (j.contains(k)) return fail(std::string("$.") + k, "is for SNMPv3; this file says version 2c");
    }
  } else if (version == "3" || version == "v3") {
    c.version = Version::v3;
    if (j.contains("community")) return fail("$.community", "is for SNMPv2c; this file says version 3");
    c.user = str("user");
    if (c.user.empty()) return fail("$.user", "SNMPv3 needs a user");
    if (c.user.size() > 32) return fail("$.user", "at most 32 characters (RFC 3414)");
    if (const auto p = str("auth_protocol"); !p.empty() && p != "SHA" && p != "SHA1") {
      return fail("$.auth_protocol", "unsupported " + quote(p) + " (this build authenticates with SHA)");
    }
    if (const auto p = str("priv_protocol"); !p.empty() && p != "AES" && p != "AES128") {
      return fail("$.priv_protocol", "unsupported " + quote(p) + " (this build encrypts with AES-128)");
    }
    c.auth_password = str("auth_password");
    c.priv_password = str("priv_password");
    if (c.auth_password.size() < 8) return fail("$.auth_password", "at least 8 characters (RFC 3414)");
    if (c.priv_password.size() < 8) return fail("$.priv_password", "at least 8 characters (RFC 3414)");
  } else if (version.empty()) {
    return fail("$.version", "missing: \"2c\" or \"3\"");
  } else {
    return fail("$.version", "unsupported " + quote(version) + " (\"2c\" or \"3\")");
  }
  return c;
}

Result<SnmpCredentials> SnmpCredentials::load_file(const std::string& path) {
  auto text = read_data_file(path, 64 * 1024);
  if (!text) return text.failure();
  return parse(*text, path);
}

Result<SnmpCredentials> SnmpCredentials::from_env() {
  auto env = [](const char* k) {
    const char* v = std::getenv(k);
    return v == nullptr ? std::string() : std::string(v);
  };
  const std::string community = env("MEDIC_SNMP_COMMUNITY"), user = env("MEDIC_SNMP_USER");
  if (!community.empty() && !user.empty()) {
    return Error::invalid("both MEDIC_SNMP_COMMUNITY and MEDIC_SNMP_USER are set: say which of SNMPv2c or SNMPv3");
  }
  nlohmann::json j;
  if (!community.empty()) {
    j = {{"version", "2c"}, {"community", community}};
  } else if (!user.empty()) {
    j = {{"version", "3"},
         {"user", user},
         {"auth_password", env("MEDIC_SNMP_AUTH_PASSWORD")},
         {"priv_password", env("MEDIC_SNMP_PRIV_PASSWORD")}};
  } else {
    return Error::not_found("no SNMP credentials in the environment (MEDIC_SNMP_COMMUNITY or MEDIC_SNMP_USER)");
  }
  std::string text;
  try {
    text = j.dump();
  } catch (const nlohmann::json::exception&) {
    return Error::invalid("MEDIC_SNMP_*: a value is not UTF-8 text (use --snmp-credentials FILE)");
  }
  auto c = parse(text, "the environment");
  if (!c) {
    // Name the variables, not the file keys.
    std::string m = c.error();
    for (const auto& [key, var] : {std::pair{"$.auth_password", "MEDIC_SNMP_AUTH_PASSWORD"},
                                   std::pair{"$.priv_password", "MEDIC_SNMP_PRIV_PASSWORD"},
                                   std::pair{"$.user", "MEDIC_SNMP_USER"}}) {
      if (const size_t at = m.find(key); at != std::string::npos) m.replace(at, std::string_view(key).size(), var);
    }
    return Error::invalid(std::move(m));
  }
  return c;
}

std::string SnmpCredentials::describe() const {
  if (version == Version::v2c) return "SNMPv2c (community set)";
  return "SNMPv3 user " + quote(user) + ", authPriv SHA/AES";
}

// --- what is walked ---------------------------------------------------------------------

const std::vector<SnmpColumn>& snmp_columns() {
  // IF-MIB ifTable 1.3.6.1.2.1.2.2.1, ifXTable 1.3.6.1.2.1.31.1.1.1; EtherLike-MIB
  // dot3StatsTable 1.3.6.1.2.1.10.7.2.1 and dot3PauseTable 1.3.6.1.2.1.10.7.10.1.
  static const std::vector<SnmpColumn> columns = [] {
    const std::initializer_list<uint32_t> if_table = {1, 3, 6, 1, 2, 1, 2, 2, 1};
    const std::initializer_list<uint32_t> ifx_table = {1, 3, 6, 1, 2, 1, 31, 1, 1, 1};
    const std::initializer_list<uint32_t> dot3_stats = {1, 3, 6, 1, 2, 1, 10, 7, 2, 1};
    const std::initializer_list<uint32_t> dot3_pause = {1, 3, 6, 1, 2, 1, 10, 7, 10, 1};
    const std::initializer_list<uint32_t> sensor_table = {1, 3, 6, 1, 2, 1, 99, 1, 1, 1};
    const std::initializer_list<uint32_t> physical_table = {1, 3, 6, 1, 2, 1, 47, 1, 1, 1, 1};
    const std::initializer_list<uint32_t> alias_table = {1, 3, 6, 1, 2, 1, 47, 1, 3, 2, 1};
    return std::vector<SnmpColumn>{
        {"ifName", col(ifx_table, 1)},
        {"ifOperStatus", col(if_table, 8)},
        {"ifLastChange", col(if_table, 9)},
        {"ifHighSpeed", col(ifx_table, 15)},
        {"ifHCInOctets", col(ifx_table, 6)},
        {"ifHCInUcastPkts", col(ifx_table, 7)},
        {"ifHCInMulticastPkts", col(ifx_table, 8)},
        {"ifHCInBroadcastPkts", col(ifx_table, 9)},
        {"ifHCOutOctets", col(ifx_table, 10)},
        {"ifHCOutUcastPkts", col(ifx_table, 11)},
        {"ifHCOutMulticastPkts", col(ifx_table, 12)},
        {"ifHCOutBroadcastPkts", col(ifx_table, 13)},
        {"ifInDiscards", col(if_table, 13)},
        {"ifInErrors", col(if_table, 14)},
        {"ifOutDiscards", col(if_table, 19)},
        {"ifOutErrors", col(if_table, 20)},
        {"dot3StatsFCSErrors", col(dot3_stats, 3)},
        {"dot3StatsSymbolErrors", col(dot3_stats, 18)},
        {"dot3InPauseFrames", col(dot3_pause, 3)},
        {"dot3OutPauseFrames", col(dot3_pause, 4)},
        {"ifInOctets", col(if_table, 10), true},
        {"ifInUcastPkts", col(if_table, 11), true},
        {"ifOutOctets", col(if_table, 16), true},
        {"ifOutUcastPkts", col(if_table, 17), true},
        // ENTITY-SENSOR-MIB entPhySensorTable 1.3.6.1.2.1.99.1.1.1; ENTITY-MIB
        // entPhysicalTable 1.3.6.1.2.1.47.1.1.1.1 and entAliasMappingTable 1.3.6.1.2.1.47.1.3.2.1.
        {"entPhySensorType", col(sensor_table, 1), false, SnmpColumn::Table::entity},
        {"entPhySensorScale", col(sensor_table, 2), false, SnmpColumn::Table::entity},
        {"entPhySensorPrecision", col(sensor_table, 3), false, SnmpColumn::Table::entity},
        {"entPhySensorUnitsDisplay", col(sensor_table, 6), false, SnmpColumn::Table::entity},
        {"entPhysicalContainedIn", col(physical_table, 4), false, SnmpColumn::Table::entity},
        {"entPhysicalName", col(physical_table, 7), false, SnmpColumn::Table::entity},
        {"entAliasMappingIdentifier", col(alias_table, 2), false, SnmpColumn::Table::entity},
        {"entPhySensorValue", col(sensor_table, 4), false, SnmpColumn::Table::sensor_value},
        {"entPhySensorOperStatus", col(sensor_table, 5), false, SnmpColumn::Table::sensor_value},
    };
  }();
  return columns;
}

std::span<const uint32_t> snmp_sys_uptime_oid() { return kSysUpTime0; }

// --- one agent across polls ---------------------------------------------------------------

SnmpAgentState::Poll SnmpAgentState::render(std::span<const SnmpValue> values) {
  const auto& columns = snmp_columns();
  const size_t ncol = columns.size();
  auto column_of = [&](std::string_view name) {
    for (size_t i = 0; i < ncol; ++i) {
      if (columns[i].name == name) return i;
    }
    return ncol;
  };
  static const size_t c_name = column_of("ifName"), c_oper = column_of("ifOperStatus"),
                      c_change = column_of("ifLastChange");
  // The HC twin of each 32-bit column, which replaces it where present.
  static const std::vector<size_t> twin = [&] {
    std::vector<size_t> t(ncol, ncol);
    for (size_t i = 0; i < ncol; ++i) {
      if (!columns[i].low_counterpart) continue;
      std::string hc = "ifHC" + std::string(columns[i].name.substr(2));
      t[i] = column_of(hc);
    }
    return t;
  }();

  struct Cell {
    bool set = false;
    const SnmpValue* v = nullptr;
  };
  struct Row {
    uint32_t if_index = 0;
    std::vector<Cell> cells;
  };
  std::vector<Row> rows;  // in the order the agent first names them
  std::unordered_map<uint32_t, size_t> row_at;
  auto row_of = [&](uint32_t index) -> Row& {
    const auto [it, added] = row_at.try_emplace(index, rows.size());
    if (added) rows.push_back(Row{index, std::vector<Cell>(ncol)});
    return rows[it->second];
  };

  Poll p;
  std::optional<uint64_t> uptime;
  for (const SnmpValue& v : values) {
    if (v.type == SnmpValue::Type::no_such || v.type == SnmpValue::Type::end_of_view) continue;
    if (std::equal(v.oid.begin(), v.oid.end(), std::begin(kSysUpTime0), std::end(kSysUpTime0))) {
      if (v.type == SnmpValue::Type::timeticks) uptime = v.number;
      continue;
    }
    for (size_t c = 0; c < ncol; ++c) {
      if (columns[c].table != SnmpColumn::Table::interface) continue;
      if (v.oid.size() != columns[c].oid.size() + 1 || !has_prefix(v.oid, columns[c].oid)) continue;
      Cell& cell = row_of(v.oid.back()).cells[c];
      cell.set = true;
      cell.v = &v;
      break;
    }
  }

  if (uptime && uptime_ && *uptime < *uptime_) p.restarted = true;
  if (uptime) uptime_ = uptime;
  // What this walk asked for (wants() before it, from the same state).
  const bool entity_walk = entities_due();
  const bool sensor_walk = entity_walk || (!sensors_.empty() && polls_ % kSensorEveryPolls == 0);
  if (entity_walk) learn_sensors(values);

  auto numeric = [&](const Cell& cell, size_t c, uint64_t& out) {
    if (!cell.set) return false;
    const auto t = cell.v->type;
    const bool ok = c == c_change ? t == SnmpValue::Type::timeticks
                                  : (t == SnmpValue::Type::integer || t == SnmpValue::Type::counter32 ||
                                     t == SnmpValue::Type::counter64 || t == SnmpValue::Type::gauge32);
    if (!ok) {
      if (p.problem.empty()) p.problem = std::string(columns[c].name) + " of ifIndex " + std::to_string(cell.v->oid.back()) + " is not a number";
      return false;
    }
    out = cell.v->number;
    return true;
  };

  bool hc_everywhere = true;
  size_t nameless = 0;
  std::unordered_map<uint32_t, std::string_view> named_rows;  // ifIndex -> ifName, this walk
  std::unordered_set<std::string_view> names;
  std::string& b = p.body;
  b.reserve(rows.size() * 24 * 48);
  for (const Row& r : rows) {
    const Cell& name_cell = r.cells[c_name];
    if (!name_cell.set || name_cell.v->type != SnmpValue::Type::octets || !plain_label(name_cell.v->text)) {
      ++nameless;
      continue;
    }
    const std::string& name = name_cell.v->text;
    if (!names.insert(name).second) {
      if (p.problem.empty()) {
        p.problem = "ifName " + quote(name, 64) + " is named twice (again at ifIndex " + std::to_string(r.if_index) +
                    "); the second is left out";
      }
      continue;
    }
    const size_t values_before = p.values;
    named_rows.emplace(r.if_index, name);
    // The 32-bit twins are no longer walked only once every one of them has its HC column.
    for (size_t c = 0; c < ncol; ++c) {
      if (twin[c] < ncol && !r.cells[twin[c]].set) hc_everywhere = false;
    }
    auto line = [&](std::string_view object, uint64_t value) {
      b.append(object);
      b.append("{ifName=\"");
      b.append(name);
      b.append("\",ifIndex=\"");
      b.append(std::to_string(r.if_index));
      b.append("\"} ");
      b.append(std::to_string(value));
      b.push_back('\n');
      ++p.values;
    };
    for (size_t c = 0; c < ncol; ++c) {
      if (c == c_name || c == c_change) continue;
      if (twin[c] < ncol && r.cells[twin[c]].set) continue;  // the 64-bit counter is here
      uint64_t v = 0;
      if (!numeric(r.cells[c], c, v)) continue;
      if (c == c_oper) {
        line(columns[c].name, static_cast<uint64_t>(static_cast<int64_t>(v) < 0 ? 0 : v));
      } else {
        line(columns[c].name, v);
      }
    }
    // Flaps: the state differs from last poll's, or it is the same but changed in between.
    uint64_t oper = 0, change = 0;
    const bool has_oper = numeric(r.cells[c_oper], c_oper, oper);
    const bool has_change = numeric(r.cells[c_change], c_change, change);
    if (has_oper) {
      Link& l = links_[name];
      if (l.known) {
        if (l.if_index != r.if_index) p.renumbered = true;
        if (static_cast<int64_t>(oper) != l.oper) {
          l.flaps += 1;
        } else if (has_change && uptime && !p.restarted && change > l.last_change) {
          // The same state, changed in between. Only with sysUpTime in this poll (else a
          // restart could not be told) and only forward (ifLastChange going back is a
          // restart's new clock, never a flap).
          l.flaps += 2;
        }
      }
      l.known = true;
      l.oper = static_cast<int64_t>(oper);
      if (has_change) l.last_change = change;
      l.if_index = r.if_index;
      l.seen = polls_;
      line(kSnmpFlapObject, l.flaps);
    }
    // An interface counts when something of it was read, not for its name alone.
    if (p.values > values_before) ++p.interfaces;
  }
  if (sensor_walk && !sensors_.empty()) render_sensors(values, named_rows, p);
  if (p.restarted) restart_seen_ = true;
  if (p.interfaces > 0) hc_everywhere_ = hc_everywhere;
  // Names an agent no longer offers are forgotten once they outnumber the ones it does, so
  // an agent inventing new names poll after poll cannot grow this without bound.
  if (links_.size() > 2 * p.interfaces + 64) std::erase_if(links_, [&](const auto& kv) { return kv.second.seen != polls_; });
  ++polls_;
  if (nameless > 0 && p.problem.empty()) {
    p.problem = std::to_string(nameless) + " interface(s) without a usable ifName were left out";
  }
  return p;
}

bool SnmpAgentState::wants(const SnmpColumn& column) const {
  switch (column.table) {
    case SnmpColumn::Table::interface: return !column.low_counterpart || wants_low_counters();
    case SnmpColumn::Table::entity: return entities_due();
    case SnmpColumn::Table::sensor_value:
      return entities_due() || (!sensors_.empty() && polls_ % kSensorEveryPolls == 0);
  }
  return true;
}

namespace {

// A column's rows of a walk, by their one index (entPhysicalIndex).
std::unordered_map<uint32_t, const SnmpValue*> rows_of(std::span<const SnmpValue> values, std::string_view column) {
  std::unordered_map<uint32_t, const SnmpValue*> out;
  for (const auto& c : snmp_columns()) {
    if (c.name != column) continue;
    for (const SnmpValue& v : values) {
      if (v.oid.size() == c.oid.size() + 1 && has_prefix(v.oid, c.oid)) out[v.oid.back()] = &v;
    }
  }
  return out;
}

int64_t signed_of(const SnmpValue* v) { return static_cast<int64_t>(v->number); }

bool has_word(std::string_view name, std::initializer_list<std::string_view> words) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const std::string_view w : words) {
    if (lower.find(w) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

void SnmpAgentState::learn_sensors(std::span<const SnmpValue> values) {
  sensors_.clear();
  entities_read_ = true;
  entities_read_at_ = polls_;
  restart_seen_ = false;
  const auto types = rows_of(values, "entPhySensorType");
  const auto scales = rows_of(values, "entPhySensorScale");
  const auto precisions = rows_of(values, "entPhySensorPrecision");
  const auto units = rows_of(values, "entPhySensorUnitsDisplay");
  const auto parents = rows_of(values, "entPhysicalContainedIn");
  const auto names = rows_of(values, "entPhysicalName");
  // entAliasMappingIdentifier.ENTITY.LOGICAL = ifIndex.N: the entities that are interfaces.
  static const std::vector<uint32_t> if_index_oid = {1, 3, 6, 1, 2, 1, 2, 2, 1, 1};
  std::unordered_map<uint32_t, uint32_t> alias;
  for (const auto& c : snmp_columns()) {
    if (c.name != "entAliasMappingIdentifier") continue;
    for (const SnmpValue& v : values) {
      if (v.oid.size() == c.oid.size() + 2 && has_prefix(v.oid, c.oid) && v.type == SnmpValue::Type::object_id &&
          v.object.size() == if_index_oid.size() + 1 && has_prefix(v.object, if_index_oid) && v.object.back() != 0) {
        alias.emplace(v.oid[c.oid.size()], v.object.back());
      }
    }
  }
  for (const auto& [entity, type_v] : types) {
    if (type_v->type != SnmpValue::Type::integer || sensors_.size() >= 65536) continue;
    const int64_t type = signed_of(type_v);
    const auto name_it = names.find(entity);
    const std::string_view name = name_it != names.end() && name_it->second->type == SnmpValue::Type::octets
                                      ? std::string_view(name_it->second->text)
                                      : std::string_view();
    const auto unit_it = units.find(entity);
    const bool dbm = type == 14 || (unit_it != units.end() && unit_it->second->type == SnmpValue::Type::octets &&
                                    has_word(unit_it->second->text, {"dbm"}));
    const bool rx = has_word(name, {"rx", "receive", "input"});
    const bool tx = !rx && has_word(name, {"tx", "transmit", "output"});
    Sensor s;
    int unit_exponent = 0;  // from the sensor's base unit to the object's
    if (dbm && (rx || tx)) {
      s.object = rx ? kSensorRxPowerDbm : kSensorTxPowerDbm;
    } else if (type == 6 && (rx || tx)) {  // watts
      s.object = rx ? kSensorRxPowerMw : kSensorTxPowerMw;
      unit_exponent = 3;
    } else if (type == 5 && has_word(name, {"bias"})) {  // amperes
      s.object = kSensorBiasMa;
      unit_exponent = 3;
    } else if (type == 8) {  // celsius
      s.object = kSensorTemperatureC;
    } else {
      continue;
    }
    // The port: this entity or one it is contained in that is an interface.
    uint32_t e = entity;
    for (int depth = 0; depth < 8 && e != 0 && s.if_index == 0; ++depth) {
      if (const auto a = alias.find(e); a != alias.end()) {
        s.if_index = a->second;
        break;
      }
      const auto up = parents.find(e);
      if (up == parents.end() || up->second->type != SnmpValue::Type::integer) break;
      e = static_cast<uint32_t>(up->second->number);
    }
    if (s.if_index == 0) continue;  // a chassis, fan or ASIC sensor: no port's
    // entPhySensorScale: 1 yocto .. 9 units .. 17 yotta (powers of 1000); precision: digits
    // after the point (-8..9).
    const auto sc = scales.find(entity);
    const auto pr = precisions.find(entity);
    const int64_t scale = sc != scales.end() && sc->second->type == SnmpValue::Type::integer ? signed_of(sc->second) : 9;
    const int64_t precision = pr != precisions.end() && pr->second->type == SnmpValue::Type::integer ? signed_of(pr->second) : 0;
    if (scale < 1 || scale > 17 || precision < -8 || precision > 9) continue;
    s.exponent = static_cast<int>((scale - 9) * 3 - precision) + unit_exponent;
    sensors_.emplace(entity, s);
  }
}

void SnmpAgentState::render_sensors(std::span<const SnmpValue> values,
                                    const std::unordered_map<uint32_t, std::string_view>& named_rows, Poll& p) const {
  const auto readings = rows_of(values, "entPhySensorValue");
  const auto status = rows_of(values, "entPhySensorOperStatus");
  for (const auto& [entity, s] : sensors_) {
    const auto v = readings.find(entity);
    if (v == readings.end() || v->second->type != SnmpValue::Type::integer) continue;
    if (const auto st = status.find(entity); st != status.end() && signed_of(st->second) != 1) continue;  // not ok(1)
    const auto name = named_rows.find(s.if_index);
    if (name == named_rows.end()) continue;
    const double reading = static_cast<double>(signed_of(v->second)) * std::pow(10.0, s.exponent);
    char number[64];
    const auto end = std::to_chars(number, number + sizeof number, reading).ptr;
    std::string& b = p.body;
    b.append(s.object);
    b.append("{ifName=\"");
    b.append(name->second);
    b.append("\",ifIndex=\"");
    b.append(std::to_string(s.if_index));
    b.append("\",sensor=\"");
    b.append(std::to_string(entity));
    b.append("\"} ");
    b.append(number, end);
    b.push_back('\n');
    ++p.values;
    ++p.sensors;
  }
}

SnmpAgentState::Notification SnmpAgentState::judge_notification(uint32_t if_index, bool up,
                                                                std::optional<uint64_t> uptime) {
  if (!uptime) return Notification::fresh;
  if (uptime_ && *uptime <= *uptime_) return Notification::before_poll;
  const auto it = notified_.find(if_index);
  if (it != notified_.end() && it->second == std::pair(up, *uptime)) return Notification::duplicate;
  if (notified_.size() >= 4096) notified_.clear();  // an agent inventing ifIndexes
  notified_[if_index] = {up, *uptime};
  return Notification::fresh;
}

std::optional<std::string> SnmpAgentState::name_of(uint32_t if_index) const {
  if (polls_ == 0) return std::nullopt;
  for (const auto& [name, l] : links_) {
    if (l.if_index == if_index && l.seen + 1 == polls_) return name;
  }
  return std::nullopt;
}

// --- notifications ------------------------------------------------------------------------

Result<SnmpLinkTrap> decode_link_trap(std::span<const SnmpValue> values) {
  // SNMPv2-MIB snmpTrapOID.0; IF-MIB linkDown and linkUp (snmpTraps 3 and 4); the columns a
  // linkDown/linkUp names its interface with: ifIndex, ifAdminStatus, ifOperStatus, ifName.
  static const std::vector<uint32_t> trap_oid0 = {1, 3, 6, 1, 6, 3, 1, 1, 4, 1, 0};
  static const std::vector<uint32_t> link_down = {1, 3, 6, 1, 6, 3, 1, 1, 5, 3};
  static const std::vector<uint32_t> link_up = {1, 3, 6, 1, 6, 3, 1, 1, 5, 4};
  static const std::vector<uint32_t> if_entry = {1, 3, 6, 1, 2, 1, 2, 2, 1};
  static const std::vector<uint32_t> if_name = {1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 1};
  const SnmpValue* trap = nullptr;
  std::optional<uint64_t> uptime;
  for (const SnmpValue& v : values) {
    if (v.oid.size() == 9 && std::equal(v.oid.begin(), v.oid.end(), std::begin(kSysUpTime0)) &&
        v.type == SnmpValue::Type::timeticks && !uptime) {
      uptime = v.number;
    }
    if (v.oid == trap_oid0 && trap == nullptr) trap = &v;
  }
  if (trap == nullptr) return Error::invalid("no snmpTrapOID.0 among its " + std::to_string(values.size()) + " variables");
  if (trap->type != SnmpValue::Type::object_id) return Error::invalid("snmpTrapOID.0 is not an OBJECT IDENTIFIER");
  SnmpLinkTrap t;
  t.uptime = uptime;
  if (trap->object == link_down) {
    t.kind = SnmpLinkTrap::Kind::link_down;
  } else if (trap->object == link_up) {
    t.kind = SnmpLinkTrap::Kind::link_up;
  } else {
    return t;
  }
  // The interface: ifIndex.N's value, else the instance N of its ifAdminStatus/ifOperStatus.
  std::optional<uint64_t> index;
  for (const SnmpValue& v : values) {
    if (v.oid.size() == if_entry.size() + 2 && has_prefix(v.oid, if_entry)) {
      const uint32_t column = v.oid[if_entry.size()];
      if (column == 1 && v.type == SnmpValue::Type::integer) {
        index = v.number;
      } else if ((column == 7 || column == 8) && !index) {
        index = v.oid.back();
      }
    } else if (v.oid.size() == if_name.size() + 1 && has_prefix(v.oid, if_name) && v.type == SnmpValue::Type::octets &&
               plain_label(v.text)) {
      t.if_name = v.text;
      if (!index) index = v.oid.back();
    }
  }
  const char* what = t.kind == SnmpLinkTrap::Kind::link_down ? "linkDown" : "linkUp";
  if (!index) return Error::invalid(std::string(what) + " names no interface (no ifIndex, ifOperStatus or ifName)");
  if (*index == 0 || *index > 0x7fffffff) {
    return Error::invalid(std::string(what) + ": ifIndex " + std::to_string(static_cast<int64_t>(*index)) +
                          " is out of range (1..2147483647)");
  }
  t.if_index = static_cast<uint32_t>(*index);
  return t;
}

}  // namespace medic::telemetry
