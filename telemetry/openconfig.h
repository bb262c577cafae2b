// OpenConfig-modelled JSON as a gNMI gateway returns it (JSON_IETF, RFC 7951): module-
// prefixed names ("openconfig-interfaces:interfaces"), 64-bit counters and decimal64
// readings as strings, enumerations as strings. The parser streams the document (no DOM)
// and reports every leaf of an interface or a transceiver component with the interface it
// belongs to and its path with list keys and module prefixes removed, e.g.
//   ("Ethernet1", "interfaces/interface/state/counters/in-pkts", "1234")
//   ("Ethernet1", "components/component/transceiver/physical-channels/channel/state/input-power/instant", "-2.31")
// A transceiver component is tied to its interface through the interface's
// state/transceiver leaf (openconfig-platform-transceiver), else by having the interface's
// name, else by the component's own name.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/result.h"

namespace medic::telemetry {

// What a leaf held in the JSON: RFC 7951 writes 64-bit counters and decimal64 as strings,
// so a number may come as either; the rest is for the reader to refuse.
enum class OcKind : uint8_t { number, string, boolean, null, array };
std::string_view to_string(OcKind k);

class OcSink {
 public:
  virtual ~OcSink() = default;
  // `value` is the leaf's text: a number (as written, quotes removed), an enum/string,
  // "true"/"false", "null"; for an empty array where a leaf might be, "[]" (kind array: so
  // that a reader expecting a number there can refuse it; a leaf-list with items reports
  // each item instead, and an object's leaves are reported under its path).
  virtual void on_leaf(std::string_view port, std::string_view path, std::string_view value, OcKind kind) = 0;
};

struct OcStats {
  size_t leaves = 0;         // leaves reported (an empty array reported is not one)
  size_t orphan_leaves = 0;  // leaves outside any interface or component (ignored)
};

// Stops at the first syntax error: "byte N: what".
Status parse_openconfig(std::string_view json, OcSink& sink, OcStats* stats = nullptr);

}  // namespace medic::telemetry
