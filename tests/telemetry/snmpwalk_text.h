// Reads what net-snmp's snmpwalk/snmpbulkwalk print with -On (".1.3.6... = TYPE: value"),
// so tests can hand the collector's decoder exactly what the real tools read from an agent.
#pragma once

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "telemetry/snmp.h"

namespace medic::telemetry {

inline std::vector<uint32_t> oid_of(const std::string& dotted) {
  std::vector<uint32_t> o;
  std::istringstream in(dotted);
  for (std::string part; std::getline(in, part, '.');) {
    if (!part.empty()) o.push_back(static_cast<uint32_t>(std::stoul(part)));
  }
  return o;
}

inline std::vector<SnmpValue> parse_snmpwalk(const std::string& text) {
  std::vector<SnmpValue> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find(" = ");
    if (line.empty() || line[0] != '.' || eq == std::string::npos) continue;
    SnmpValue v;
    v.oid = oid_of(line.substr(0, eq));
    const std::string rest = line.substr(eq + 3);
    const size_t colon = rest.find(": ");
    const std::string type = colon == std::string::npos ? rest : rest.substr(0, colon);
    const std::string value = colon == std::string::npos ? "" : rest.substr(colon + 2);
    if (type == "STRING") {
      v.type = SnmpValue::Type::octets;
      v.text = value.size() >= 2 && value.front() == '"' ? value.substr(1, value.size() - 2) : value;
    } else if (type == "\"\"") {
      v.type = SnmpValue::Type::octets;
    } else if (type == "INTEGER") {
      v.type = SnmpValue::Type::integer;
      v.number = static_cast<uint64_t>(std::stoll(value));
    } else if (type == "Counter32") {
      v.type = SnmpValue::Type::counter32;
      v.number = std::stoull(value);
    } else if (type == "Counter64") {
      v.type = SnmpValue::Type::counter64;
      v.number = std::stoull(value);
    } else if (type == "Gauge32") {
      v.type = SnmpValue::Type::gauge32;
      v.number = std::stoull(value);
    } else if (type == "Timeticks") {
      v.type = SnmpValue::Type::timeticks;
      v.number = std::stoull(value.substr(1));  // "(94164) 0:15:41.64"
    } else if (rest.rfind("No Such", 0) == 0) {
      v.type = SnmpValue::Type::no_such;
    } else if (rest.rfind("No more variables", 0) == 0) {
      v.type = SnmpValue::Type::end_of_view;
    } else {
      v.type = SnmpValue::Type::other;
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace medic::telemetry
