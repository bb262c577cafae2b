// A switch's or host exporter's answer read as the Prometheus text format (what
// telemetry/collector.cpp hands over after an HTTP scrape): PromParser::parse, then the
// same bytes through ScrapeMapper::map with the shipped counter map, as every device of a
// small topology, the way medicd's pipeline maps a device's answer.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/strings.h"
#include "telemetry/mapping.h"
#include "telemetry/prometheus.h"
#include "tests/fuzz/fuzz_common.h"

using namespace medic;
using namespace medic::telemetry;

namespace {

bool is_name(std::string_view s, bool colon) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':') ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// What the parser promises of every sample it reports.
class CheckingSink : public PromSink {
 public:
  size_t samples = 0;
  void on_sample(const PromSample& s) override {
    ++samples;
    fuzz::check(is_name(s.name, true), "sample with an invalid metric name", s.name);
    // name_repeats is the mapper's shortcut: it must only say so when the sample before it
    // in this payload had the same name (and so the same family's type).
    if (s.name_repeats) {
      fuzz::check(samples > 1 && s.name == prev_name_, "name_repeats on a sample whose name differs", s.name);
      fuzz::check(s.type == prev_type_, "name_repeats on a sample whose type differs", s.name);
    }
    prev_name_.assign(s.name);
    prev_type_ = s.type;
    fuzz::check(s.labels.size() <= PromLimits{}.max_labels_per_sample, "more labels than the limit");
    for (const auto& l : s.labels) {
      fuzz::check(is_name(l.name, false), "invalid label name", l.name);
      fuzz::check(!utf8_error(l.value).has_value(), "label value is not UTF-8", l.value);
      fuzz::check(s.label(l.name) != nullptr, "label() does not find a label of the sample", l.name);
    }
  }

 private:
  std::string prev_name_;
  MetricType prev_type_ = MetricType::untyped;
};

// parse_prom_float's shortcut for short decimals must give the double strtod gives (the
// nearest to the text), to the bit: checked on every plain decimal (a sign, digits, at most
// one point), which it must also accept.
void check_float(std::string_view text) {
  const std::string_view body = !text.empty() && (text[0] == '+' || text[0] == '-') ? text.substr(1) : text;
  size_t digits = 0, points = 0;
  for (const char c : body) {
    if (c >= '0' && c <= '9') ++digits;
    else if (c == '.') ++points;
    else return;  // not a plain decimal: only its safety is fuzzed (above)
  }
  if (digits == 0 || points > 1) return;
  double got = 0;
  fuzz::check(parse_prom_float(text, got), "parse_prom_float refuses a plain decimal", text);
  const double want = std::strtod(std::string(text).c_str(), nullptr);
  fuzz::check(std::memcmp(&got, &want, sizeof got) == 0, "parse_prom_float's double differs from strtod's", text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const CounterMap map = CounterMap::parse(fuzz::source_file("data/counter_map.json"), "counter_map.json");
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  PromParser parser;
  CheckingSink sink;
  PromStats stats;
  const Status st = parser.parse(text, sink, &stats);
  // Stats are written for a payload that parses; a refused one has its samples reported
  // up to the bad line (the mapper throws them away).
  if (st.ok()) fuzz::check(stats.samples == sink.samples, "stats.samples differs from the samples reported");
  if (!st.ok()) {
    fuzz::check(st.error().rfind("line ", 0) == 0, "error without its line", st.error());
    fuzz::check(!utf8_error(st.error()), "a refusal that is not UTF-8 (payload bytes quoted raw)", st.error());
  }
  // The parser is reused between scrapes of a device: a second parse must agree.
  CheckingSink again;
  const Status st2 = parser.parse(text, again);
  fuzz::check(st.ok() == st2.ok() && sink.samples == again.samples, "a second parse with the same parser differs");

  // The float reader: the input's first word, and its first 64 bytes, for safety; each
  // against strtod when it is a plain decimal.
  double v = 0;
  for (const std::string_view t : {text.substr(0, std::min(text.find_first_of(" \t\n"), size_t{64})), text.substr(0, 64)}) {
    (void)parse_prom_float(t, v);
    check_float(t);
  }

  const auto& topo = fuzz::topology();
  ScrapeMapper mapper(topo, map);
  for (fabric::DeviceId d = 0; d < topo.devices().size(); ++d) {
    std::vector<PortSample> out;
    MapStats ms;
    const PayloadFormat format = detect_format("text/plain; version=0.0.4", text);
    const Status m = mapper.map(d, format, text, from_unix_seconds(1.8e9), out, &ms);
    if (!m.ok()) {
      fuzz::check(out.empty(), "a refused payload appended samples");
      continue;
    }
    fuzz::check(out.size() <= topo.ports_of(d).size(), "more samples than the device has ports");
    for (const auto& s : out) {
      fuzz::check(s.port < topo.ports().size() && topo.port(s.port).device == d, "sample for a port of another device");
      // NaN and +/-Inf are values of the format: the tracker judges them, not the mapper.
      fuzz::check(s.present != 0 && s.present < (1u << kCounterCount), "sample with no or unknown counters");
    }
  }
  return 0;
}
