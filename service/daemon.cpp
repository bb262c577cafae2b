#include "service/daemon.h"

#include <spdlog/spdlog.h>

#include "fabric/loader.h"

namespace medic::service {

using triage::IncidentState;

std::string DaemonMetrics::render_prometheus() const {
  std::string out;
  auto add = [&](const char* name, const char* help, uint64_t v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name + " " +
           std::to_string(v) + "\n";
  };
  add("medic_cycles_total", "Poll cycles run.", cycles);
  add("medic_scrapes_ok_total", "Switch scrapes answered.", scrapes_ok);
  add("medic_scrapes_failed_total", "Switch scrapes that failed or timed out.", scrapes_failed);
  add("medic_payloads_rejected_total", "Answers rejected as malformed.", payloads_rejected);
  add("medic_samples_mapped_total", "Counter samples mapped onto canonical counters.", samples_mapped);
  add("medic_findings_total", "Findings made by detectors.", findings);
  add("medic_incidents_opened_total", "Incidents opened.", incidents_opened);
  add("medic_drains_succeeded_total", "Drains carried out and verified.", drains_succeeded);
  add("medic_drains_refused_total", "Drains refused by the safe-capacity check.", drains_refused);
  add("medic_drains_failed_total", "Drains that failed at the switch.", drains_failed);
  add("medic_db_errors_total", "Database calls that failed.", db_errors);
  return out;
}

Daemon::Daemon(const DaemonConfig& config, const Clock& clock) : config_(config), clock_(clock) {
  const auto& s = config.settings();
  topology_ = std::make_unique<fabric::Topology>(fabric::load_topology_file(s.topology_path));
  counter_map_ = std::make_unique<telemetry::CounterMap>(telemetry::CounterMap::load_file(s.counter_map_path));
  db_ = std::make_unique<db::Database>(s.db_url);
  for (const auto& name : db_->migrate()) spdlog::info("applied migration {}", name);
  if (auto st = db_->sync_inventory(*topology_); !st.ok()) throw std::runtime_error(st.error());
  journal_ = std::make_unique<db::DbJournal>(*db_, *topology_);

  telemetry::CollectorOptions copt;
  copt.timeout_s = s.scrape_timeout_s;
  copt.max_in_flight = static_cast<size_t>(s.scrape_concurrency);
  collector_ = std::make_unique<telemetry::Collector>(copt);
  mapper_ = std::make_unique<telemetry::ScrapeMapper>(*topology_, *counter_map_);
  tracker_ = std::make_unique<telemetry::CounterTracker>(topology_->ports().size());
  flap_ = std::make_unique<detectors::FlapDetector>(*topology_, config.flap());
  capacity_ = std::make_unique<remediation::CapacityModel>(*topology_);
  remediation::JsonRpcOptions jopt;
  jopt.bearer_token = s.driver_token;
  drivers_ = std::make_unique<remediation::DriverSet>(*topology_, jopt);
  if (s.dry_run) {
    for (fabric::DeviceId d = 0; d < topology_->devices().size(); ++d) {
      if (topology_->device(d).is_switch()) {
        drivers_->replace(d, std::make_unique<remediation::DryRunDriver>(topology_->device(d).name));
      }
    }
  }
  executor_ = std::make_unique<remediation::Executor>(*topology_, *capacity_, *drivers_, *journal_, clock_);

  for (fabric::DeviceId d = 0; d < topology_->devices().size(); ++d) {
    const auto& dev = topology_->device(d);
    if (!dev.telemetry_url.empty()) targets_.push_back({d, dev.telemetry_url});
  }
  port_oper_.assign(topology_->ports().size(), -1);
  last_scrape_error_.resize(topology_->devices().size());

  // Drain state survives restarts: the database is the record.
  auto drains = db_->drain_states();
  if (!drains.ok()) throw std::runtime_error(drains.error());
  for (const auto& row : *drains) {
    const auto link = topology_->find_link(row.link);
    if (!link) continue;
    if (row.drain_state == "draining" || row.drain_state == "undraining") {
      spdlog::warn("link {} has an unfinished {} from before a restart; counting it as drained", row.link,
                   row.drain_state == "draining" ? "drain" : "undrain");
    }
    capacity_->set_drained(*link, true);
  }
  db::IncidentFilter open_filter;
  open_filter.open_only = true;
  auto open = db_->incidents(open_filter);
  if (!open.ok()) throw std::runtime_error(open.error());
  std::vector<triage::OpenIncident> known;
  for (const auto& row : *open) {
    const auto cls = triage::parse_incident_class(row.incident_class);
    const auto link = topology_->find_link(row.link);
    if (cls && link) known.push_back({row.id, *cls, *link});
  }
  triage_.load_open(known);
  spdlog::info("medicd ready: {} switches polled, {} links, {} capacity groups, {} drained, {} open incidents",
               targets_.size(), topology_->links().size(), topology_->groups().size(), drains->size(), known.size());
}

Daemon::~Daemon() = default;

void Daemon::cycle() {
  ++metrics_.cycles;
  const auto results = collector_->scrape(targets_, clock_);
  std::vector<telemetry::PortSample> samples;
  samples.reserve(topology_->ports().size());
  for (const auto& r : results) {
    std::string& last_err = last_scrape_error_[r.device];
    const std::string& name = topology_->device(r.device).name;
    if (!r.ok) {
      ++metrics_.scrapes_failed;
      if (last_err != r.error) spdlog::warn("scrape {} failed: {}", name, r.error);
      last_err = r.error;
      continue;
    }
    ++metrics_.scrapes_ok;
    telemetry::MapStats st;
    auto mapped = mapper_->map_prometheus(r.device, r.body, r.time, samples, &st);
    if (!mapped.ok()) {
      ++metrics_.payloads_rejected;
      const std::string err = "malformed counters: " + mapped.error();
      if (last_err != err) spdlog::warn("scrape {}: {}", name, err);
      last_err = err;
      continue;
    }
    if (!last_err.empty()) spdlog::info("scrape {} answering again", name);
    last_err.clear();
    metrics_.samples_mapped += st.mapped;
  }

  std::vector<detectors::Finding> findings;
  for (const auto& s : samples) {
    const telemetry::PortDelta d = tracker_->observe(s);
    if (d.has(telemetry::Counter::oper_up)) {
      port_oper_[s.port] = d.get(telemetry::Counter::oper_up) > 0.5 ? 1 : 0;
      const fabric::LinkId l = topology_->port(s.port).link;
      if (l != fabric::kNone) {
        const auto& link = topology_->link(l);
        // A link is up when no end that reports says it is down.
        const bool up = port_oper_[link.a] != 0 && port_oper_[link.b] != 0;
        if (capacity_->oper_up(l) != up) capacity_->set_oper_up(l, up);
      }
    }
    flap_->observe(d, findings);
  }
  metrics_.findings += findings.size();
  if (findings.empty()) return;
  auto updates = triage_.process(findings);
  for (auto& u : updates) handle_update(u);
}

void Daemon::handle_update(triage::IncidentUpdate& u) {
  const std::string link_name = u.link != fabric::kNone ? topology_->link(u.link).name : "";
  if (u.incident_id != 0) {
    if (auto st = db_->add_findings(u.incident_id, u.findings, *topology_); !st.ok()) {
      ++metrics_.db_errors;
      spdlog::error("{}", st.error());
    }
    return;
  }
  auto id = db_->open_incident(u, *topology_, clock_.now());
  if (!id.ok()) {
    // Not recorded: do not act on it. The detector will report it again.
    ++metrics_.db_errors;
    spdlog::error("could not open incident for {}: {}", link_name, id.error());
    return;
  }
  ++metrics_.incidents_opened;
  triage_.bind(u.cls, u.link, *id);
  spdlog::info("incident {} opened: {} on {}: {}", *id, triage::to_string(u.cls), link_name, u.summary);
  if (u.cls == triage::IncidentClass::link_flap && u.link != fabric::kNone) mitigate(*id, u.link);
}

void Daemon::mitigate(int64_t incident_id, fabric::LinkId link) {
  const auto res = executor_->drain_link(incident_id, link);
  const std::string& name = topology_->link(link).name;
  Status st = Ok{};
  switch (res.status) {
    case remediation::DrainStatus::drained:
      ++metrics_.drains_succeeded;
      spdlog::info("incident {}: drained {} ({})", incident_id, name, res.reason.empty() ? "verified" : res.reason);
      st = db_->set_incident_state(incident_id, IncidentState::mitigated, res.at);
      if (st.ok()) st = db_->set_incident_state(incident_id, IncidentState::repair_requested, res.at);
      break;
    case remediation::DrainStatus::refused:
      ++metrics_.drains_refused;
      spdlog::warn("incident {}: drain of {} refused: {}", incident_id, name, res.reason);
      st = db_->set_incident_state(incident_id, IncidentState::blocked, res.at, res.reason);
      break;
    case remediation::DrainStatus::failed:
      ++metrics_.drains_failed;
      spdlog::error("incident {}: drain of {} failed: {}", incident_id, name, res.reason);
      st = db_->set_incident_state(incident_id, IncidentState::escalated, res.at, "drain failed: " + res.reason);
      break;
  }
  if (!st.ok()) {
    ++metrics_.db_errors;
    spdlog::error("{}", st.error());
  }
}

}  // namespace medic::service
