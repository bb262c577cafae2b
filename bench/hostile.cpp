// bench/hostile: what one hostile scrape costs the poll loop, on one core.
//
//   build/bench/bench_hostile [--repeat N]
//
// Payloads a broken or hostile exporter could send, each parsed and mapped as medicd does
// (ScrapeMapper over the Prometheus text format), beside an ordinary scrape of the same
// size: a line of 100,000 labels (12.4 s before labels were bounded: duplicate checks
// against every earlier label), a 1.9 MB scrape of 150,000 labels on one line, the same
// labels spread 128 to a line (the most one sample may carry), and a 16 MB scrape (the
// collector's body limit) of such lines. Prints the median time of each and whether it was
// accepted or refused (with the refusal).
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "fabric/generator.h"
#include "telemetry/mapping.h"
#include "telemetry/prometheus.h"

using namespace medic;

namespace {

std::string labels_line(size_t n, size_t first = 0) {
  std::string l = "node_network_receive_packets_total{device=\"eth1\"";
  for (size_t i = 0; i < n; ++i) l += ",l" + std::to_string(first + i) + "=\"v\"";
  return l + "} 1\n";
}

std::string ordinary(size_t bytes) {
  std::string out;
  for (size_t i = 0; out.size() < bytes; ++i) {
    out += "node_network_receive_packets_total{device=\"eth" + std::to_string(i % 64) + "\"} " + std::to_string(i) + "\n";
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: bench_hostile [--repeat N]\n");
      return 2;
    }
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  sched_setaffinity(0, sizeof one, &one);

  const fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  const telemetry::CounterMap map = telemetry::CounterMap::load_file(MEDIC_SOURCE_DIR "/data/counter_map.json");
  const fabric::DeviceId dev = *topo.find_device("rtsw0001");

  struct Case {
    const char* name;
    std::string body;
  };
  std::vector<Case> cases;
  cases.push_back({"one line of 100,000 labels", labels_line(100000)});
  cases.push_back({"1.9 MB: 150,000 labels on one line", labels_line(150000)});
  {
    std::string spread;
    for (size_t first = 0; first < 150000; first += 127) spread += labels_line(127, first);
    cases.push_back({"the same 150,000 labels, 128 a line", spread});
  }
  {
    std::string big;
    for (size_t first = 0; big.size() < (16u << 20); first += 127) big += labels_line(127, first);
    cases.push_back({"16 MB of 128-label lines", big});
  }
  cases.push_back({"16 MB ordinary scrape", ordinary(16u << 20)});
  cases.push_back({"1.9 MB ordinary scrape", ordinary(1900000)});

  std::printf("bench_hostile: Prometheus text through ScrapeMapper, one core, median of %d\n", repeat);
  for (const auto& c : cases) {
    std::vector<double> ms;
    std::string outcome;
    for (int r = 0; r < repeat; ++r) {
      telemetry::ScrapeMapper mapper(topo, map);
      std::vector<telemetry::PortSample> out;
      const auto t0 = std::chrono::steady_clock::now();
      const Status st = mapper.map_prometheus(dev, c.body, Time{} + std::chrono::seconds(r + 1), out);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      outcome = st.ok() ? "accepted" : "refused: " + st.error();
    }
    std::sort(ms.begin(), ms.end());
    std::printf("  %-40s %8.2f MB  %9.3f ms  %s\n", c.name, static_cast<double>(c.body.size()) / 1e6, ms[ms.size() / 2],
                outcome.c_str());
  }
  return 0;
}
