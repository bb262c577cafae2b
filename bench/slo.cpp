// bench/slo: the SLO report over a 28-day window with 10k, 100k and 1M incidents (and their
// state histories) in PostgreSQL, loaded by COPY over the zone32k fabric's links.
//
//   build/bench/bench_slo --db URL [--sizes 10000,100000,1000000] [--span-days 365] [--rounds 3]
//   bench/slo            (starts a private PostgreSQL cluster and runs this)
//
// The incidents are spread evenly over the span (a year by default: 1M incidents is about
// 2,700 a day, far more than a 32k-GPU cluster sees) and the report's window is the 28 days
// ending at the span's end. Each incident has the life a link fault has: detected within
// a minute, drained within minutes (some waiting for approval or capacity),
// repaired within hours to days, undrained and closed; some dismissed; the newest still
// open. Capacity snapshots are taken around a share of the drains. Prints, per size, the
// load time, the report's time (best and median of the rounds), the incidents it read and
// what it found, and the process's peak resident memory: the report streams its rows and
// keeps per-SLO sums, so the peak does not grow with the number of incidents.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <pqxx/pqxx>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/measure.h"
#include "fabric/generator.h"
#include "slo/render.h"
#include "tests/db/all_stores.h"

using namespace medic;

namespace {

using namespace medic::bench;

struct Args {
  std::string db;
  std::vector<long> sizes = {10000, 100000, 1000000};
  double span_days = 365;
  int rounds = 3;
};

std::string ts(Time t) { return format_iso8601(t); }

// Adds incidents [from_id, to_id) with their histories, spread over [span_from, span_to).
void load(pqxx::connection& c, const fabric::Topology& topo, long from_id, long to_id, Time span_from, Time span_to,
          Time end, std::mt19937_64& rng, std::vector<uint8_t>& open_on_link) {
  pqxx::work w(c);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  // Stage times about as a healthy fleet has them: a few percent miss their targets.
  std::lognormal_distribution<double> detect(std::log(15.0), 0.5), mitigate(std::log(30.0), 0.6),
      repair(std::log(8 * 3600.0), 0.8), restore(std::log(900.0), 0.5);
  const char* classes[] = {"link_flap", "link_flap", "link_flap", "optics", "optics", "corruption", "fec", "link_down"};
  const double span = seconds(span_to - span_from);
  const long n = to_id - from_id;
  std::vector<std::string> cols = {"id",          "class",        "state",       "severity",     "link",
                                   "suspect",     "suspect_port", "summary",     "started_at",   "detected_at",
                                   "triaged_at",  "mitigated_at", "repaired_at", "undrained_at", "closed_at",
                                   "dismissed_at"};
  pqxx::stream_to inc(w, "incidents", cols);
  struct Ev {
    long id;
    Time at;
    const char* state;
    const char* note;
  };
  // The events go in by a second COPY once their incidents are in (their foreign key); a
  // chunk holds at most kChunk incidents' worth.
  std::vector<Ev> pending;
  auto flush_events = [&](pqxx::work& tx) {
    pqxx::stream_to e(tx, "incident_events", std::vector<std::string>{"incident_id", "at", "state", "note"});
    for (const Ev& x : pending) e << std::make_tuple(x.id, ts(x.at), std::string(x.state), std::string(x.note));
    e.complete();
    pending.clear();
  };
  std::vector<std::tuple<long, Time, Time>> drains;  // for snapshots
  const size_t n_links = topo.links().size();
  for (long k = 0; k < n; ++k) {
    const long id = from_id + k;
    const Time started = span_from + from_seconds(span * (static_cast<double>(k) + unit(rng)) / static_cast<double>(n));
    fabric::LinkId l = static_cast<fabric::LinkId>(rng() % n_links);
    // At most one open incident per link (the schema's rule): the newest, still open at the
    // end, take links that have none.
    while (open_on_link[l]) l = static_cast<fabric::LinkId>(rng() % n_links);
    const auto& link = topo.link(l);
    const auto& pa = topo.port(link.a);
    const std::string suspect = topo.device(pa.device).name;
    const std::string suspect_port = suspect + ":" + pa.name;
    const char* cls = classes[rng() % 8];
    const Time detected = started + from_seconds(detect(rng));
    const Time triaged = detected;
    const bool dismissed = unit(rng) < 0.05;
    std::optional<Time> mitigated, repaired, undrained, closed, dismissed_at;
    std::string state = "closed";
    pending.push_back({id, triaged, "triaged", ""});
    if (dismissed) {
      dismissed_at = detected + from_seconds(60 + 600 * unit(rng));
      state = "dismissed";
      pending.push_back({id, *dismissed_at, "dismissed", "not a fault"});
    } else {
      Time t = detected;
      const double wait = mitigate(rng);
      const double r = unit(rng);
      if (r < 0.15) pending.push_back({id, t + from_seconds(2), "pending_approval", "optics needs approval"});
      else if (r < 0.2) pending.push_back({id, t + from_seconds(2), "blocked", "capacity: tor_uplinks would fall below 75%"});
      mitigated = t + from_seconds(wait);
      pending.push_back({id, *mitigated, "mitigated", ""});
      pending.push_back({id, *mitigated, "repair_requested", ""});
      repaired = *mitigated + from_seconds(repair(rng));
      pending.push_back({id, *repaired, "repaired", ""});
      pending.push_back({id, *repaired + from_seconds(5), "validating", ""});
      undrained = *repaired + from_seconds(restore(rng));
      pending.push_back({id, *undrained, "undrained", ""});
      closed = *undrained + from_seconds(1);
      pending.push_back({id, *closed, "closed", ""});
      drains.emplace_back(id, *mitigated, *undrained);
      // The newest are still open at the end.
      if (*closed > end) {
        open_on_link[l] = 1;
        state = *repaired > end ? "repair_requested" : "validating";
        if (*repaired > end) repaired.reset();
        undrained.reset();
        closed.reset();
        pending.erase(std::remove_if(pending.end() - 6, pending.end(), [&](const Ev& e) { return e.at > end; }),
                      pending.end());
      }
    }
    auto opt = [](const std::optional<Time>& t) { return t ? std::optional<std::string>(ts(*t)) : std::nullopt; };
    const auto m = opt(mitigated), rp = opt(repaired), u = opt(undrained), cl = opt(closed), di = opt(dismissed_at);
    auto c_str = [](const std::optional<std::string>& s) { return s ? s->c_str() : nullptr; };
    inc << std::make_tuple(id, std::string(cls), state, std::string("critical"), link.name, suspect, suspect_port,
                           std::string("bench"), ts(started), ts(detected), ts(triaged), c_str(m), c_str(rp), c_str(u),
                           c_str(cl), c_str(di));
  }
  inc.complete();
  flush_events(w);
  // Snapshots before one drain in fifty, with the groups of its link.
  {
    pqxx::stream_to s(w, "snapshots", std::vector<std::string>{"incident_id", "reason", "taken_at", "data"});
    for (size_t i = 0; i < drains.size(); i += 50) {
      const auto& [id, at, until] = drains[i];
      const double avail = 0.7 + 0.3 * unit(rng);
      const std::string data = "{\"groups\": [{\"name\": \"tor_uplinks:" + std::to_string(id % 4096) +
                               "\", \"capacity_gbps\": 3200, \"available_gbps\": " + std::to_string(3200 * avail) +
                               ", \"floor\": 0.75}]}";
      s << std::make_tuple(id, std::string("before drain"), ts(at), data);
    }
    s.complete();
  }
  w.exec("SELECT setval('incidents_id_seq', " + std::to_string(to_id) + ")");
  w.commit();
}

void usage() {
  std::fprintf(stderr, "usage: bench_slo --db URL [--sizes N,N,...] [--span-days D] [--rounds N]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) usage();
    const std::string v = argv[++i];
    if (k == "--db") {
      a.db = v;
    } else if (k == "--sizes") {
      a.sizes.clear();
      std::stringstream ss(v);
      std::string x;
      while (std::getline(ss, x, ',')) a.sizes.push_back(std::stol(x));
    } else if (k == "--span-days") {
      a.span_days = std::stod(v);
    } else if (k == "--rounds") {
      a.rounds = std::max(1, std::stoi(v));
    } else {
      usage();
    }
  }
  if (a.db.empty() || a.sizes.empty()) usage();
  std::sort(a.sizes.begin(), a.sizes.end());

  const fabric::Topology topo = fabric::generate_clos(*fabric::preset("zone32k"));
  db::AllStores db(a.db);
  db.migrate();
  if (auto st = db.sync_inventory(topo); !st.ok()) {
    std::fprintf(stderr, "bench_slo: %s\n", st.error().c_str());
    return 1;
  }
  pqxx::connection c(a.db);
  long existing = 0;
  {
    // Only on an empty database (bench/slo starts a cluster of its own).
    pqxx::nontransaction nt(c);
    existing = nt.exec("SELECT count(*) FROM incidents")[0][0].as<long>();
    // A database this bench filled before, to the first size asked for, is measured as it is.
    if (existing != 0 && existing != a.sizes.front()) {
      std::fprintf(stderr, "bench_slo: the database already holds %ld incidents; run bench/slo, which starts a cluster of its own\n",
                   existing);
      return 1;
    }
  }
  const Time span_to = from_unix_seconds(1'798'761'600);  // 2027-01-01T00:00:00Z
  const Time span_from = span_to - from_seconds(a.span_days * 86400);
  std::mt19937_64 rng(42);
  std::printf("bench/slo: zone32k (%zu links), incidents over %.0f days ending %s, report window: the last 28 days\n",
              topo.links().size(), a.span_days, ts(span_to).c_str());
  std::printf("%10s %9s %11s %10s %10s %9s %6s %9s %15s %10s\n", "incidents", "load_s", "report_best", "report_med",
              "read", "breaches", "slos", "offenders", "report_peak_mib", "rss_mib");
  long loaded = existing;
  std::vector<uint8_t> open_on_link(topo.links().size(), 0);
  const double peak_before = peak_mib();
  for (const long n : a.sizes) {
    const auto t0 = Steady::now();
    // In chunks (one transaction each), so the loader's own memory stays small. The span is
    // filled evenly at every size: each chunk takes its share of it, in order.
    constexpr long kChunk = 50000;
    for (long first = loaded + 1; first <= n && n > loaded; first += kChunk) {
      const long last = std::min(n + 1, first + kChunk);
      const double share_from = static_cast<double>(first - loaded - 1) / static_cast<double>(n - loaded);
      const double share_to = static_cast<double>(last - loaded - 1) / static_cast<double>(n - loaded);
      const Duration span = span_to - span_from;
      load(c, topo, first, last, span_from + Duration(static_cast<int64_t>(share_from * static_cast<double>(span.count()))),
           span_from + Duration(static_cast<int64_t>(share_to * static_cast<double>(span.count()))), span_to, rng,
           open_on_link);
    }
    loaded = n;
    {
      pqxx::nontransaction nt(c);
      nt.exec("ANALYZE incidents");
      nt.exec("ANALYZE incident_events");
      nt.exec("ANALYZE snapshots");
    }
    const double load_s = since(t0);
    slo::ReportQuery q;
    q.window = {span_to - std::chrono::hours(24 * 28), span_to};
    q.label = "28d";
    std::vector<double> times;
    slo::Report last;
    reset_peak();
    for (int r = 0; r < a.rounds; ++r) {
      const auto t1 = Steady::now();
      auto rep = db.report(q, span_to);
      if (!rep.ok()) {
        std::fprintf(stderr, "bench_slo: %s\n", rep.error().c_str());
        return 1;
      }
      // Rendered too, as medic slo report --format json does.
      const std::string text = slo::report_json(*rep).dump();
      times.push_back(since(t1));
      if (text.empty()) return 1;
      last = std::move(*rep);
    }
    std::sort(times.begin(), times.end());
    std::printf("%10ld %9.1f %10.3fs %9.3fs %10zu %9zu %6zu %9zu %15.1f %10.1f\n", n, load_s, times.front(),
                times[times.size() / 2], last.incidents_read, last.breaches.size(), last.slos.size(),
                last.offenders.size() + last.offenders_left_off, hwm_mib(), rss_mib());
    std::fflush(stdout);
  }
  std::printf("peak resident memory before the first load: %.1f MiB (the zone32k topology and the connection); "
              "report_peak_mib: the process's peak while the rounds ran\n",
              peak_before);
  return 0;
}
