#include "common/json.h"
#include "common/files.h"
#include "cli/replay.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <sstream>

#include "common/strings.h"
#include "detectors/config.h"
#include "fabric/loader.h"
#include "remediation/policy.h"
#include "pipeline/pipeline.h"
#include "telemetry/mapping.h"

namespace medic::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct ScrapeFile {
  fabric::DeviceId device;
  telemetry::PayloadFormat format;
  fs::path path;
};

json finding_json(const detectors::Finding& f, const fabric::Topology& t) {
  json j = {{"type", "finding"},
            {"time", format_iso8601(f.observed_at)},
            {"kind", std::string(detectors::to_string(f.kind))},
            {"severity", std::string(detectors::to_string(f.severity))},
            {"summary", f.summary},
            {"first_seen", format_iso8601(f.first_seen)}};
  if (f.link != fabric::kNone) j["link"] = t.link(f.link).name;
  if (f.device != fabric::kNone) j["device"] = t.device(f.device).name;
  if (f.port != fabric::kNone) j["port"] = t.endpoint_name(f.port);
  if (!f.suspect.empty()) j["suspect"] = f.suspect;
  json ev = json::object();
  for (const auto& [k, v] : f.evidence) ev[k] = v;
  j["evidence"] = ev;
  return j;
}

}  // namespace

std::optional<ReplayModel> load_replay_model(const ReplayOptions& o, std::ostream& err) {
  const auto started = std::chrono::steady_clock::now();
  ReplayModel m;
  try {
    m.topology = fabric::load_topology_file(o.topology_path);
    m.counter_map = telemetry::CounterMap::load_file(o.counter_map_path.empty() ? data_dir() + "/counter_map.json"
                                                                                : o.counter_map_path);
    m.detectors = detectors::DetectorConfig::load_file(o.detectors_path.empty() ? data_dir() + "/detectors.json"
                                                                                : o.detectors_path);
    m.triage.device_fault_links = o.device_fault_links;
    m.triage.reopen_window = from_seconds(o.reopen_window_s);
    m.triage.validate();
  } catch (const fabric::TopologyError& e) {
    for (const auto& p : e.problems()) err << p << '\n';
    return std::nullopt;
  } catch (const std::exception& e) {
    err << "medic: " << e.what() << '\n';
    return std::nullopt;
  }
  m.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return m;
}

int replay(const ReplayOptions& o, std::ostream& out, std::ostream& err) {
  const auto model = load_replay_model(o, err);
  return model ? replay(*model, o, out, err) : 2;
}

int replay(const ReplayModel& model, const ReplayOptions& o, std::ostream& out, std::ostream& err) {
  const auto started = std::chrono::steady_clock::now();
  const fabric::Topology& topo = model.topology;

  // Scrape folders in time order; every file named after a device of the topology.
  std::error_code ec;
  if (!fs::is_directory(o.scrapes_dir, ec)) {
    err << "medic: " << o.scrapes_dir << ": not a directory\n";
    return 2;
  }
  std::map<double, std::vector<ScrapeFile>> polls;
  std::set<fabric::DeviceId> polled;
  for (const auto& entry : fs::directory_iterator(o.scrapes_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory()) {
      err << "medic: " << entry.path().string() << ": expected only folders named by Unix time\n";
      return 2;
    }
    double when = 0;
    const auto [ptr, perr] = std::from_chars(name.data(), name.data() + name.size(), when);
    // Finite and within what a Time holds ("inf" and "1e300" parse as doubles too).
    if (perr != std::errc() || ptr != name.data() + name.size() || !(when > 0 && when < 9e12)) {
      err << "medic: " << entry.path().string() << ": folder name is not a Unix time in seconds\n";
      return 2;
    }
    auto& files = polls[when];
    for (const auto& f : fs::directory_iterator(entry.path(), ec)) {
      const std::string fname = f.path().filename().string();
      const std::string ext = f.path().extension().string();
      if (!f.is_regular_file() || (ext != ".prom" && ext != ".json" && ext != ".snmp")) {
        err << "medic: " << f.path().string() << ": expected DEVICE.prom, DEVICE.json or DEVICE.snmp\n";
        return 2;
      }
      const std::string dev_name = f.path().stem().string();
      const auto dev = topo.find_device(dev_name);
      if (!dev) {
        err << "medic: " << f.path().string() << ": no device " << quote(dev_name) << " in " << o.topology_path << '\n';
        return 2;
      }
      files.push_back({*dev,
                       ext == ".json"   ? telemetry::PayloadFormat::openconfig
                       : ext == ".snmp" ? telemetry::PayloadFormat::snmp
                                        : telemetry::PayloadFormat::prometheus,
                       f.path()});
      polled.insert(*dev);
    }
  }
  if (ec) {
    err << "medic: " << o.scrapes_dir << ": " << ec.message() << '\n';
    return 1;
  }

  pipeline::Pipeline pipeline(topo, model.counter_map, model.detectors, model.triage);
  int64_t next_id = 1;
  // The ids replay gives the incidents it opens, handed back to triage at the next poll
  // (as medicd does with the database's).
  triage::Recorded recorded;
  size_t samples = 0, findings = 0, incidents = 0, rejected = 0, payload_bytes = 0;
  for (auto& [when, files] : polls) {
    const Time now = from_unix_seconds(when);
    std::vector<std::string> bodies(files.size());
    std::vector<pipeline::DeviceAnswer> answers;
    std::set<fabric::DeviceId> answered;
    for (size_t i = 0; i < files.size(); ++i) {
      auto text = read_data_file(files[i].path.string(), 64u << 20);
      if (!text.ok()) {
        err << "medic: " << text.error() << "\n";
        return 1;
      }
      bodies[i] = std::move(*text);
      payload_bytes += bodies[i].size();
      pipeline::DeviceAnswer a;
      a.device = files[i].device;
      a.time = now;
      a.answered = true;
      a.format = files[i].format;
      a.body = bodies[i];
      answers.push_back(a);
      answered.insert(files[i].device);
    }
    // A device recorded in other polls but missing from this one did not answer.
    for (const auto d : polled) {
      if (answered.count(d)) continue;
      pipeline::DeviceAnswer a;
      a.device = d;
      a.time = now;
      a.error = "no recorded answer at " + format_iso8601(now);
      answers.push_back(a);
    }
    auto outcome = pipeline.poll(answers, now, {}, {}, recorded);
    recorded = {};
    samples += outcome.samples;
    rejected += outcome.rejected.size();
    for (const auto& [dev, e] : outcome.rejected) {
      if (!o.findings) break;  // --incidents-only: only counted in the summary
      std::string file;
      for (const auto& f : files) {
        if (f.device == dev) file = f.path.string();
      }
      out << json_text(json{{"type", "rejected"},
                            {"time", format_iso8601(now)},
                            {"device", topo.device(dev).name},
                            {"file", file},
                            {"error", e}})
          << '\n';
    }
    findings += outcome.findings.size();
    if (o.findings) {
      for (const auto& n : outcome.triage.noted) {
        json j = finding_json(n.finding, topo);
        j["note"] = n.note;
        out << json_text(j) << '\n';
      }
    }
    for (auto& u : outcome.triage.updates) {
      int64_t id = u.incident_id;
      std::string event = "updated";
      if (u.is_new()) {
        id = next_id++;
        recorded.add_opened(u, id);
        event = "opened";
        ++incidents;
      } else if (u.reopened) {
        recorded.add_opened(u, id);
        event = "reopened";
      } else if (u.escalated()) {
        event = "escalated";
      }
      if (o.findings) {
        for (const auto& f : u.findings) {
          json j = finding_json(f, topo);
          j["incident"] = id;
          out << json_text(j) << '\n';
        }
      }
      json j = {{"type", "incident"},
                {"time", format_iso8601(now)},
                {"event", event},
                {"id", id},
                {"class", std::string(triage::to_string(u.cls))},
                {"severity", std::string(detectors::to_string(u.severity))},
                {"summary", u.summary},
                {"started_at", format_iso8601(u.started_at)},
                {"findings", u.findings.size()},
                {"mitigation", remediation::mitigation_for(u.cls, u.severity) == remediation::Mitigation::drain ? "drain"
                                                                                                                 : "none"}};
      if (u.link != fabric::kNone) j["link"] = topo.link(u.link).name;
      if (u.device != fabric::kNone) j["device"] = topo.device(u.device).name;
      if (!u.suspect.empty()) j["suspect"] = u.suspect;
      out << json_text(j) << '\n';
    }
  }
  const double secs =
      model.load_seconds + std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "replayed %zu polls of %zu devices: %zu port samples, %zu findings, %zu incidents, %zu answers rejected "
                "(%.1f MB in %.2fs)\n",
                polls.size(), polled.size(), samples, findings, incidents, rejected, payload_bytes / 1e6, secs);
  err << buf;
  return 0;
}

}  // namespace medic::cli
