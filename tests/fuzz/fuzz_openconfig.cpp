// A gNMI gateway's answer (OpenConfig JSON_IETF) as telemetry/collector.cpp hands it over:
// parse_openconfig, then ScrapeMapper::map with the shipped counter map as every device of
// a small topology, the way medicd's pipeline maps a device's answer.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/strings.h"
#include "telemetry/mapping.h"
#include "telemetry/openconfig.h"
#include "tests/fuzz/fuzz_common.h"

using namespace medic;
using namespace medic::telemetry;

namespace {

class CheckingSink : public OcSink {
 public:
  size_t leaves = 0;  // leaves, not the empty arrays also reported (OcStats::leaves)
  void on_leaf(std::string_view port, std::string_view path, std::string_view value, OcKind kind) override {
    if (kind != OcKind::array) ++leaves;
    (void)port;
    fuzz::check(!path.empty(), "leaf with an empty path");
    switch (kind) {
      case OcKind::boolean: fuzz::check(value == "true" || value == "false", "boolean leaf text", value); break;
      case OcKind::null: fuzz::check(value == "null", "null leaf text", value); break;
      case OcKind::array: fuzz::check(value == "[]", "array leaf text", value); break;
      case OcKind::number: fuzz::check(!value.empty(), "empty number leaf"); break;
      case OcKind::string: break;
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const CounterMap map = CounterMap::parse(fuzz::source_file("data/counter_map.json"), "counter_map.json");
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  CheckingSink sink;
  OcStats stats;
  const Status st = parse_openconfig(text, sink, &stats);
  if (st.ok()) fuzz::check(stats.leaves == sink.leaves, "stats.leaves differs from the leaves reported");
  // Syntax errors say "byte N: ..."; a document of neither interfaces nor components is
  // refused as such. Whatever the payload held, the message is UTF-8 (it goes to the logs).
  if (!st.ok()) fuzz::check(!st.error().empty() && !utf8_error(st.error()), "a refusal that is not UTF-8", st.error());

  const auto& topo = fuzz::topology();
  ScrapeMapper mapper(topo, map);
  for (fabric::DeviceId d = 0; d < topo.devices().size(); ++d) {
    std::vector<PortSample> out;
    MapStats ms;
    const PayloadFormat format = detect_format("application/json", text);
    const Status m = mapper.map(d, format, text, from_unix_seconds(1.8e9), out, &ms);
    if (!m.ok()) {
      fuzz::check(out.empty(), "a refused payload appended samples");
      continue;
    }
    fuzz::check(st.ok(), "the mapper accepted what the parser refused");
    fuzz::check(out.size() <= topo.ports_of(d).size(), "more samples than the device has ports");
    for (const auto& s : out) {
      fuzz::check(s.port < topo.ports().size() && topo.port(s.port).device == d, "sample for a port of another device");
      fuzz::check(s.present != 0 && s.present < (1u << kCounterCount), "sample with no or unknown counters");
      for (size_t c = 0; c < kCounterCount; ++c) {
        // OpenConfig counters are refused unless numbers >= 0 (docs/formats.md).
        if ((s.present & (1u << c)) != 0 && !is_gauge(static_cast<Counter>(c))) {
          fuzz::check(!(s.v[c] < 0), "negative counter mapped from OpenConfig");
        }
      }
    }
  }
  return 0;
}
