// What an SNMP agent (or anyone answering from its address) can hand the collector, after
// net-snmp has decoded the PDU: any values at any OIDs, of any type. Two polls' worth go
// through SnmpAgentState::render (flaps, restarts, renumbering carry from one to the next)
// and the rendered answer through ScrapeMapper::map_snmp with the shipped counter map, as
// medicd's pipeline maps a device's answer. Each poll's values also go through
// decode_link_trap, as the variables of a notification would.
//
// Input: records of [what][type][ifIndex: 2 bytes][value: 8 bytes][text length][text].
// `what` picks sysUpTime.0, one of the walked columns (so most records land where the
// collector looks), snmpTrapOID.0 (linkDown or linkUp by the value's parity; an object_id
// there names it), ifIndex.N, or a raw OID made of the text's bytes; a 0xff record ends
// the first poll.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/strings.h"
#include "telemetry/mapping.h"
#include "telemetry/snmp.h"
#include "tests/fuzz/fuzz_common.h"

using namespace medic;
using namespace medic::telemetry;

namespace {

struct Reader {
  const uint8_t* p;
  size_t n;
  bool take(uint8_t& b) {
    if (n == 0) return false;
    b = *p++;
    --n;
    return true;
  }
};

// Every line the collector renders is `OBJECT{ifName="NAME",ifIndex="N"} VALUE`, one a line.
void check_rendered(std::string_view body) {
  size_t at = 0;
  while (at < body.size()) {
    const size_t nl = body.find('\n', at);
    fuzz::check(nl != std::string_view::npos, "a rendered line without its newline", body.substr(at));
    const std::string_view line = body.substr(at, nl - at);
    fuzz::check(line.find("{ifName=\"") != std::string_view::npos && line.find("\",ifIndex=\"") != std::string_view::npos,
                "a rendered line without its labels", line);
    at = nl + 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const CounterMap map = CounterMap::parse(fuzz::source_file("data/counter_map.json"), "counter_map.json");
  const auto& columns = snmp_columns();
  Reader r{data, size};
  std::vector<SnmpValue> polls[2];
  int poll = 0;
  uint8_t what = 0;
  while (r.take(what)) {
    if (what == 0xff) {
      poll = 1;
      continue;
    }
    SnmpValue v;
    uint8_t type = 0, i0 = 0, i1 = 0, len = 0;
    if (!r.take(type) || !r.take(i0) || !r.take(i1)) break;
    v.type = static_cast<SnmpValue::Type>(type % 10);
    for (int k = 0; k < 8; ++k) {
      uint8_t b = 0;
      if (!r.take(b)) break;
      v.number = (v.number << 8) | b;
    }
    if (r.take(len)) {
      for (uint8_t k = 0; k < len; ++k) {
        uint8_t b = 0;
        if (!r.take(b)) break;
        v.text.push_back(static_cast<char>(b));
      }
    }
    const uint32_t index = (static_cast<uint32_t>(i0) << 8) | i1;
    if (what == 0) {
      const auto up = snmp_sys_uptime_oid();
      v.oid.assign(up.begin(), up.end());
    } else if (what <= columns.size()) {
      v.oid = columns[what - 1].oid;
      v.oid.push_back(index);
    } else if (what == columns.size() + 1) {
      v.oid = {1, 3, 6, 1, 6, 3, 1, 1, 4, 1, 0};
      v.object = {1, 3, 6, 1, 6, 3, 1, 1, 5, static_cast<uint32_t>(3 + (v.number & 1))};
    } else if (what == columns.size() + 2) {
      v.oid = {1, 3, 6, 1, 2, 1, 2, 2, 1, 1, index};
    } else {
      // A raw OID: the text's bytes, each an arc.
      for (const char c : v.text) v.oid.push_back(static_cast<uint8_t>(c));
    }
    polls[poll].push_back(std::move(v));
  }

  SnmpAgentState agent;
  const auto& topo = fuzz::topology();
  ScrapeMapper mapper(topo, map);
  for (const auto& values : polls) {
    const auto p = agent.render(values);
    check_rendered(p.body);
    fuzz::check(p.interfaces == 0 || !p.body.empty(), "interfaces named but nothing rendered");
    fuzz::check(!utf8_error(p.problem) || p.problem.empty(), "a problem message that is not UTF-8", p.problem);
    std::vector<PortSample> out;
    MapStats ms;
    const Status st = mapper.map(0, detect_format("application/x-medic-snmp", p.body), p.body,
                                 from_unix_seconds(1.8e9), out, &ms);
    // The collector renders only what the text format can carry: its answer always parses.
    fuzz::check(st.ok(), "a rendered SNMP answer the mapper refused", st.ok() ? "" : st.error());
    const auto trap = decode_link_trap(values);
    if (trap.ok()) {
      fuzz::check(trap->kind == SnmpLinkTrap::Kind::other || (trap->if_index >= 1 && trap->if_index <= 0x7fffffffu),
                  "a link notification with an ifIndex out of range");
    } else {
      fuzz::check(!trap.error().empty() && !utf8_error(trap.error()), "a notification error that is not UTF-8 text",
                  trap.error());
    }
  }
  return 0;
}
