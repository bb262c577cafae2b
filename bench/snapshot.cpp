// bench/snapshot: a whole-fabric snapshot of zone32k (about 150,000 ports) captured and
// written to PostgreSQL (the ports with COPY), then read back.
//
//   build/bench/bench_snapshot --db URL [--preset zone32k|demo] [--rounds N]
//   bench/snapshot            (starts a private PostgreSQL cluster and runs this)
//
// Every port carries the readings a healthy fabric reports (traffic counters in the
// trillions, a few errors and discards, optics and temperatures with their noise), a few
// links are down or drained and a few incidents open. Each round captures the fabric,
// writes the snapshot (one transaction: the snapshots row with its groups and incidents as
// JSONB, every port a row of snapshot_ports by COPY), reads it back in full and checks it;
// the snapshots written are deleted at the end. Prints the best and median of each phase,
// rows and bytes. Target: the whole fabric written in under one second.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <pqxx/pqxx>
#include <sys/resource.h>
#include <random>
#include <string>
#include <vector>

#include "bench/measure.h"
#include "tests/db/all_stores.h"
#include "fabric/generator.h"
#include "remediation/capacity.h"
#include "remediation/capacity_config.h"
#include "snapshot/snapshot.h"

using namespace medic;
using telemetry::Counter;

namespace {

using namespace medic::bench;  // process_cpu_s: the client's share of a write

// Readings of a port of a fabric that has carried traffic for weeks.
telemetry::PortSample readings(fabric::PortId p, Time at, bool up, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::normal_distribution<double> noise(0.0, 1.0);
  auto whole = [](double v) { return std::floor(v); };
  telemetry::PortSample s;
  s.port = p;
  s.time = at;
  const double rx_packets = whole(2e11 + 8e11 * unit(rng));
  const double tx_packets = whole(rx_packets * (0.97 + 0.06 * unit(rng)));
  s.set(Counter::oper_up, up ? 1 : 0);
  s.set(Counter::carrier_changes, 2 * whole(1 + 3 * unit(rng)));
  s.set(Counter::link_down_events, whole(1 + 3 * unit(rng)));
  s.set(Counter::rx_packets, rx_packets);
  s.set(Counter::tx_packets, tx_packets);
  s.set(Counter::rx_bytes, whole(rx_packets * (1500 + 2500 * unit(rng))));
  s.set(Counter::tx_bytes, whole(tx_packets * (1500 + 2500 * unit(rng))));
  const bool dirty = unit(rng) < 0.02;
  s.set(Counter::rx_errors, dirty ? whole(1 + 5000 * unit(rng)) : 0);
  s.set(Counter::tx_errors, 0);
  s.set(Counter::rx_discards, whole(200 * unit(rng)));
  s.set(Counter::tx_discards, whole(50 * unit(rng)));
  s.set(Counter::rx_crc_errors, dirty ? whole(1 + 4000 * unit(rng)) : 0);
  s.set(Counter::rx_symbol_errors, dirty ? whole(1 + 9000 * unit(rng)) : 0);
  const double codewords = whole(rx_packets * 40 * (0.9 + 0.2 * unit(rng)));
  s.set(Counter::fec_codewords, codewords);
  s.set(Counter::fec_corrected_codewords, whole(codewords * 1e-5 * (0.5 + unit(rng))));
  s.set(Counter::fec_corrected_bits, whole(codewords * 1.3e-5 * (0.5 + unit(rng))));
  s.set(Counter::fec_uncorrectable_codewords, dirty ? whole(10 * unit(rng)) : 0);
  s.set(Counter::rx_pause, whole(1e5 * unit(rng)));
  s.set(Counter::tx_pause, whole(1e5 * unit(rng)));
  s.set(Counter::rx_power_dbm, up ? -1.2 + 0.8 * noise(rng) : -40.0);
  s.set(Counter::tx_power_dbm, 0.4 + 0.3 * noise(rng));
  s.set(Counter::laser_bias_ma, 7.5 + 0.6 * noise(rng));
  s.set(Counter::temperature_c, 45 + 6 * noise(rng));
  s.set(Counter::pre_fec_ber, std::pow(10.0, -9 + 1.5 * unit(rng)));
  return s;
}

struct Figures {
  std::vector<double> capture, write, write_cpu, read;
};

double best(std::vector<double> v) { return *std::min_element(v.begin(), v.end()); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string ms(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f ms", s * 1000);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  std::string url, preset_name = "zone32k";
  int rounds = 5;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--db") && i + 1 < argc) {
      url = argv[++i];
    } else if (!std::strcmp(argv[i], "--preset") && i + 1 < argc) {
      preset_name = argv[++i];
    } else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: bench_snapshot --db URL [--preset zone32k|demo] [--rounds N]\n");
      return 2;
    }
  }
  if (url.empty()) {
    if (const char* env = std::getenv("MEDIC_DB_URL")) url = env;
  }
  if (url.empty()) {
    std::fprintf(stderr, "bench_snapshot: no database: pass --db URL or set MEDIC_DB_URL (bench/snapshot starts one)\n");
    return 2;
  }
  const auto shape = fabric::preset(preset_name);
  if (!shape || rounds < 1) {
    std::fprintf(stderr, "bench_snapshot: --preset must be demo or zone32k, --rounds at least 1\n");
    return 2;
  }

  const fabric::Topology topo =
      remediation::with_derived_groups(fabric::generate_clos(*shape), remediation::CapacityConfig{});
  remediation::CapacityModel capacity(topo);
  std::mt19937_64 rng(20270115);
  // A few links down, the budget's worth drained.
  std::vector<bool> link_up(topo.links().size(), true);
  for (int i = 0; i < 40; ++i) link_up[rng() % topo.links().size()] = false;
  for (fabric::LinkId l = 0; l < topo.links().size(); ++l) {
    if (!link_up[l]) capacity.set_oper_up(l, false);
  }
  for (int i = 0; i < 64; ++i) capacity.set_drained(static_cast<fabric::LinkId>(rng() % topo.links().size()), true);
  const Time now = from_unix_seconds(1'800'000'000);
  std::vector<telemetry::PortSample> latest(topo.ports().size());
  std::vector<int> oper(topo.ports().size(), -1);
  for (fabric::DeviceId d = 0; d < topo.devices().size(); ++d) {
    if (d % 997 == 5) continue;  // a silent device now and then: never answered
    const Time scraped = now - Duration(static_cast<int64_t>(rng() % 2'000'000));
    for (const fabric::PortId p : topo.ports_of(d)) {
      const fabric::LinkId l = topo.port(p).link;
      const bool up = l == fabric::kNone || link_up[l];
      latest[p] = readings(p, scraped, up, rng);
      oper[p] = up ? 1 : 0;
    }
  }
  std::vector<snapshot::IncidentReading> incidents;
  for (int64_t i = 1; i <= 12; ++i) {
    const auto& link = topo.link(static_cast<fabric::LinkId>(rng() % topo.links().size()));
    incidents.push_back({i, "link_flap", "mitigated", "critical", link.name, topo.device(topo.port(link.a).device).name});
  }
  const snapshot::FabricState state{topo,
                                    capacity,
                                    [&](fabric::PortId p) -> const telemetry::PortSample& { return latest[p]; },
                                    [&](fabric::PortId p) { return oper[p]; },
                                    incidents,
                                    now};

  std::unique_ptr<db::AllStores> db;
  try {
    db = std::make_unique<db::AllStores>(url);
    db->migrate();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_snapshot: %s\n", e.what());
    return 1;
  }
  std::printf("bench: %s, %zu devices, %zu ports, %zu capacity groups, %d rounds, PostgreSQL at %s\n",
              preset_name.c_str(), topo.devices().size(), topo.ports().size(), topo.groups().size(), rounds,
              db::redact_url(url).c_str());

  Figures f;
  std::vector<int64_t> written;
  size_t rows = 0;
  for (int r = 0; r < rounds; ++r) {
    auto t0 = Steady::now();
    const snapshot::Snapshot s = snapshot::capture_fabric(state, "bench");
    f.capture.push_back(since(t0));
    t0 = Steady::now();
    const double cpu0 = process_cpu_s();
    const auto id = db->write_snapshot(s);
    f.write.push_back(since(t0));
    f.write_cpu.push_back(process_cpu_s() - cpu0);
    if (!id.ok()) {
      std::fprintf(stderr, "bench_snapshot: %s\n", id.error().c_str());
      return 1;
    }
    written.push_back(*id);
    t0 = Steady::now();
    const auto back = db->snapshot(*id);
    f.read.push_back(since(t0));
    if (!back.ok() || !back->has_value()) {
      std::fprintf(stderr, "bench_snapshot: reading snapshot %lld back: %s\n", static_cast<long long>(*id),
                   back.ok() ? "gone" : back.error().c_str());
      return 1;
    }
    // The round trip is exact: every reading of every port.
    const snapshot::Snapshot& b = **back;
    bool same = b.ports.size() == s.ports.size() && b.groups.size() == s.groups.size();
    for (size_t i = 0; same && i < s.ports.size(); ++i) {
      same = b.ports[i].device == s.ports[i].device && b.ports[i].port == s.ports[i].port &&
             b.ports[i].present == s.ports[i].present && b.ports[i].sampled_at == s.ports[i].sampled_at &&
             b.ports[i].oper == s.ports[i].oper && b.ports[i].drained == s.ports[i].drained &&
             b.ports[i].v == s.ports[i].v;
    }
    if (!same) {
      std::fprintf(stderr, "bench_snapshot: snapshot %lld read back differs from what was written\n",
                   static_cast<long long>(*id));
      return 1;
    }
    rows = s.ports.size();
    std::printf("round %d: capture %s, write %s (client CPU %s), read back %s\n", r + 1, ms(f.capture.back()).c_str(),
                ms(f.write.back()).c_str(), ms(f.write_cpu.back()).c_str(), ms(f.read.back()).c_str());
  }

  // Sizes as PostgreSQL keeps them, then the bench's snapshots go.
  long long row_bytes = 0, json_bytes = 0, table_bytes = 0;
  try {
    pqxx::connection c(url);
    pqxx::work w(c);
    const std::string last = std::to_string(written.back());
    row_bytes = w.exec_params("SELECT coalesce(sum(pg_column_size(p.*)), 0) FROM snapshot_ports p WHERE snapshot_id = $1",
                              written.back())[0][0]
                    .as<long long>();
    json_bytes =
        w.exec_params("SELECT pg_column_size(data) FROM snapshots WHERE id = $1", written.back())[0][0].as<long long>();
    table_bytes = w.exec("SELECT pg_total_relation_size('snapshot_ports')")[0][0].as<long long>() /
                  static_cast<long long>(rounds);
    for (const int64_t id : written) w.exec_params("DELETE FROM snapshots WHERE id = $1", id);
    w.commit();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_snapshot: sizes: %s\n", e.what());
    return 1;
  }

  const double write_best = best(f.write), write_median = median(f.write);
  std::printf("\n%-34s %12s %12s\n", "", "best", "median");
  std::printf("%-34s %12s %12s\n", "capture_fabric", ms(best(f.capture)).c_str(), ms(median(f.capture)).c_str());
  std::printf("%-34s %12s %12s\n", "write_snapshot (one transaction)", ms(write_best).c_str(), ms(write_median).c_str());
  std::printf("%-34s %12s %12s\n", "  of which client CPU", ms(best(f.write_cpu)).c_str(),
              ms(median(f.write_cpu)).c_str());
  std::printf("%-34s %12s %12s\n", "read back (snapshot(id))", ms(best(f.read)).c_str(), ms(median(f.read)).c_str());
  std::printf("\nrows: %zu port rows per snapshot (%.0f rows/s written, median)\n", rows,
              static_cast<double>(rows) / write_median);
  std::printf("bytes: %.1f MB of port rows (%lld B a row), %.1f MB on disk with the index (per snapshot), %.1f kB of JSONB "
              "(groups and incidents)\n",
              static_cast<double>(row_bytes) / 1e6, row_bytes / static_cast<long long>(rows ? rows : 1),
              static_cast<double>(table_bytes) / 1e6, static_cast<double>(json_bytes) / 1e3);
  std::printf("whole fabric written in %s (median; target < 1000 ms): %s\n", ms(write_median).c_str(),
              write_median < 1.0 ? "met" : "NOT met");
  return 0;
}
