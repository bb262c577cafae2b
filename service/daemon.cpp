#include "service/daemon.h"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include "fabric/loader.h"
#include "remediation/capacity_config.h"
#include "remediation/policy.h"
#include "snapshot/snapshot.h"

namespace medic::service {

using triage::IncidentState;

std::string DaemonMetrics::render_prometheus() const {
  std::string out;
  auto add = [&](const char* name, const char* help, uint64_t v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name + " " +
           std::to_string(v) + "\n";
  };
  add("medic_cycles_total", "Poll cycles run.", cycles);
  add("medic_scrapes_ok_total", "Device scrapes answered.", scrapes_ok);
  add("medic_scrapes_failed_total", "Device scrapes that failed or timed out.", scrapes_failed);
  add("medic_scrapes_skipped_total", "Device scrapes skipped while the device is in backoff.", scrapes_skipped);
  add("medic_payloads_rejected_total", "Answers rejected as malformed.", payloads_rejected);
  add("medic_samples_total", "Samples parsed (metric lines and OpenConfig leaves).", samples);
  add("medic_samples_mapped_total", "Counter samples mapped onto canonical counters.", samples_mapped);
  add("medic_findings_total", "Findings made by detectors.", findings);
  add("medic_findings_noted_total", "Findings recorded without an incident (informational or under maintenance).",
      findings_noted);
  add("medic_incidents_opened_total", "Incidents opened.", incidents_opened);
  add("medic_incidents_reopened_total", "Closed incidents reopened because their fault came back.", incidents_reopened);
  add("medic_drains_succeeded_total", "Drains carried out and verified.", drains_succeeded);
  add("medic_drains_refused_total", "Drains held back by capacity floors, the budget or a rate limit.", drains_refused);
  add("medic_drains_failed_total", "Drains that failed at the switch or were rolled back.", drains_failed);
  add("medic_undrains_succeeded_total", "Undrains carried out and verified.", undrains_succeeded);
  add("medic_undrains_failed_total", "Undrains that failed or were not verified.", undrains_failed);
  add("medic_queued_for_approval_total", "Drains sent to the repair queue for approval.", queued_for_approval);
  add("medic_validations_failed_total", "Repaired links that failed their validation soak.", validations_failed);
  add("medic_actions_reconciled_total", "Unfinished actions reconciled after a restart.", actions_reconciled);
  add("medic_breaker_trips_total", "Times the circuit breaker opened.", breaker_trips);
  add("medic_snapshots_total", "Snapshots stored.", snapshots_taken);
  add("medic_db_errors_total", "Database calls that failed.", db_errors);
  add("medic_probe_rounds_total", "Probe rounds finished.", probe_rounds);
  add("medic_probes_sent_total", "STAMP probes sent.", probes_sent);
  add("medic_probes_received_total", "STAMP probes answered in time.", probes_received);
  add("medic_probe_verdicts_total", "Lossy links named by localization, summed over rounds.", probe_verdicts);
  return out;
}

// What the workflow reads of the fabric: the pipeline's latest counters and the flap detector.
class Daemon::Signals final : public remediation::LinkSignals {
 public:
  Signals(const fabric::Topology& topology, const remediation::CapacityModel& capacity, const Pipeline& pipeline)
      : topology_(topology), capacity_(capacity), pipeline_(pipeline) {}

  double tx_pps(fabric::LinkId link) const override {
    const auto& l = topology_.link(link);
    return std::max(pipeline_.tx_pps(l.a), pipeline_.tx_pps(l.b));
  }
  Time measured_from(fabric::LinkId link) const override {
    const auto& l = topology_.link(link);
    Time from = Time::max();
    for (const fabric::PortId p : {l.a, l.b}) {
      if (pipeline_.tx_pps(p) >= 0) from = std::min(from, pipeline_.tx_from(p));
    }
    return from == Time::max() ? Time{} : from;
  }
  double peer_pps(fabric::LinkId link) const override {
    const auto groups = topology_.groups_of(link);
    if (groups.empty()) return -1;
    double sum = 0;
    int n = 0;
    for (const fabric::LinkId peer : topology_.group(groups.front()).links) {
      if (peer == link || !capacity_.in_service(peer)) continue;
      const double pps = tx_pps(peer);
      if (pps < 0) continue;
      sum += pps;
      ++n;
    }
    return n == 0 ? -1 : sum / n;
  }
  int oper(fabric::LinkId link) const override { return pipeline_.link_oper(link); }
  double error_events(fabric::LinkId link) const override {
    const auto& l = topology_.link(link);
    return pipeline_.error_events(l.a) + pipeline_.error_events(l.b);
  }
  bool flap_suppressed(fabric::LinkId link, Time now) const override {
    return pipeline_.detectors().flap().suppressed(link, now);
  }

 private:
  const fabric::Topology& topology_;
  const remediation::CapacityModel& capacity_;
  const Pipeline& pipeline_;
};

Daemon::Daemon(const DaemonConfig& config, const Clock& clock, int64_t leader_epoch)
    : config_(config), clock_(clock) {
  const auto& s = config.settings();
  topology_ = std::make_unique<fabric::Topology>(fabric::load_topology_file(s.topology_path));
  counter_map_ = std::make_unique<telemetry::CounterMap>(telemetry::CounterMap::load_file(s.counter_map_path));
  detector_config_ = detectors::DetectorConfig::load_file(s.detectors_path);
  db_ = std::make_unique<db::Database>(s.db_url);
  for (const auto& name : db_->migrate()) spdlog::info("applied migration {}", name);
  if (auto st = db_->sync_inventory(*topology_); !st.ok()) throw std::runtime_error(st.error());
  store_ = std::make_unique<db::DbRemediationStore>(*db_, *topology_);
  if (leader_epoch > 0) store_->set_fence(s.name, leader_epoch);
  const auto capacity_config = remediation::CapacityConfig::load_file(s.capacity_path);
  const auto policy = remediation::RemediationPolicy::load_file(s.policy_path);
  capacity_topology_ = std::make_unique<fabric::Topology>(remediation::with_derived_groups(*topology_, capacity_config));

  telemetry::CollectorOptions copt;
  copt.timeout_s = s.scrape_timeout_s;
  copt.max_in_flight = static_cast<size_t>(s.scrape_concurrency);
  collector_ = std::make_unique<telemetry::Collector>(copt);
  backoff_ = std::make_unique<telemetry::Backoff>(topology_->devices().size(), config.poll_interval(),
                                                  from_seconds(s.backoff_max_s));
  pipeline_ = std::make_unique<Pipeline>(*topology_, *counter_map_, detector_config_, config.triage());
  capacity_ = std::make_unique<remediation::CapacityModel>(*capacity_topology_, capacity_config.budget());
  remediation::JsonRpcOptions jopt;
  jopt.bearer_token = s.driver_token;
  jopt.ca_file = s.driver_ca;
  drivers_ = std::make_unique<remediation::DriverSet>(*topology_, jopt);
  if (s.dry_run) {
    for (fabric::DeviceId d = 0; d < topology_->devices().size(); ++d) {
      if (topology_->device(d).is_switch()) {
        drivers_->replace(d, std::make_unique<remediation::DryRunDriver>(topology_->device(d).name));
      }
    }
  }
  signals_ = std::make_unique<Signals>(*capacity_topology_, *capacity_, *pipeline_);
  workflow_ = std::make_unique<remediation::Workflow>(*topology_, *capacity_, *drivers_, *store_, *signals_, policy,
                                                      clock_);
  workflow_->set_snapshot_hook([this](int64_t incident, int64_t action, fabric::LinkId link, const std::string& why) {
    take_snapshot(incident, action, link, "action", why);
  });

  for (fabric::DeviceId d = 0; d < topology_->devices().size(); ++d) {
    const auto& dev = topology_->device(d);
    if (!dev.telemetry_url.empty()) targets_.push_back({d, dev.telemetry_url});
  }
  last_scrape_error_.resize(topology_->devices().size());

  // Drain state survives restarts: the database is the record.
  auto drains = db_->drain_states();
  if (!drains.ok()) throw std::runtime_error(drains.error());
  for (const auto& row : *drains) {
    const auto link = topology_->find_link(row.link);
    if (!link) continue;
    // draining/undraining: an unfinished action; the workflow reconciles it with the switch
    // and counts the link as drained until then.
    if (row.drain_state == "drained") capacity_->set_drained(*link, true);
  }
  db::IncidentFilter open_filter;
  open_filter.open_only = true;
  open_filter.limit = 1000000;
  auto open = db_->incidents(open_filter);
  if (!open.ok()) throw std::runtime_error(open.error());
  std::vector<triage::OpenIncident> known;
  for (const auto& row : *open) {
    const auto cls = triage::parse_incident_class(row.incident_class);
    const auto sev = detectors::parse_severity(row.severity);
    const auto state = triage::parse_incident_state(row.state);
    if (!cls || !sev || !state) continue;
    triage::OpenIncident o;
    o.id = row.id;
    o.cls = *cls;
    o.severity = *sev;
    if (const auto l = topology_->find_link(row.link)) o.link = *l;
    if (const auto d = topology_->find_device(row.device)) o.device = *d;
    known.push_back(o);
  }
  pipeline_->triage().load_open(known);
  const Time now = clock_.now();
  if (auto closed = db_->closed_since(now - config.triage().reopen_window); closed.ok()) {
    std::vector<triage::ClosedIncident> recent;
    for (const auto& row : *closed) {
      const auto cls = triage::parse_incident_class(row.incident_class);
      if (!cls) continue;
      triage::ClosedIncident c;
      c.id = row.id;
      c.cls = *cls;
      if (const auto l = topology_->find_link(row.link)) c.link = *l;
      if (const auto d = topology_->find_device(row.device)) c.device = *d;
      c.closed_at = row.closed_at ? *row.closed_at : row.dismissed_at.value_or(now);
      recent.push_back(c);
    }
    pipeline_->triage().load_closed(recent);
  } else {
    throw std::runtime_error(closed.error());
  }
  refresh_maintenance(now);
  if (auto st = workflow_->start(); !st.ok()) throw std::runtime_error("remediation: " + st.error());
  if (s.probe) {
    bool can_probe = false;
    for (const auto& d : topology_->devices()) can_probe = can_probe || (!d.probe_source.empty() && d.reflector_port != 0);
    if (can_probe) {
      prober_ = std::make_unique<probes::ProbeScheduler>(*topology_, config.prober(), clock_);
      if (auto st = prober_->start(); !st.ok()) throw std::runtime_error("prober: " + st.error());
    } else {
      spdlog::info("no device has a probe source and a reflector port: active probing off");
    }
  }
  spdlog::info("medicd ready: {} devices polled, {} links, {} capacity groups, {} drained, {} open incidents, "
               "{} remediation cases",
               targets_.size(), topology_->links().size(), capacity_topology_->groups().size(), drains->size(),
               known.size(), workflow_->open_cases());
}

Daemon::~Daemon() {
  if (prober_) prober_->stop();
}

void Daemon::refresh_maintenance(Time now) {
  auto rows = db_->maintenance(now);
  if (!rows.ok()) {
    ++metrics_.db_errors;
    spdlog::error("{}", rows.error());
    return;  // keep the windows already known
  }
  maintenance_.clear();
  for (const auto& r : *rows) {
    triage::Maintenance m;
    m.id = r.id;
    m.starts_at = r.starts_at;
    m.ends_at = r.ends_at;
    m.reason = r.reason;
    if (!r.link.empty()) {
      const auto l = topology_->find_link(r.link);
      if (!l) continue;
      m.link = *l;
    } else {
      const auto d = topology_->find_device(r.device);
      if (!d) continue;
      m.device = *d;
    }
    maintenance_.push_back(m);
  }
  maintenance_loaded_ = now;
}

void Daemon::cycle() {
  ++metrics_.cycles;
  const Time started = clock_.now();
  if (started - maintenance_loaded_ >= std::chrono::seconds(10)) refresh_maintenance(started);

  std::vector<telemetry::ScrapeTarget> due;
  std::vector<DeviceAnswer> answers;
  due.reserve(targets_.size());
  for (const auto& t : targets_) {
    if (backoff_->due(t.device, started)) {
      due.push_back(t);
    } else {
      ++metrics_.scrapes_skipped;
      DeviceAnswer a;
      a.device = t.device;
      a.time = started;
      a.error = last_scrape_error_[t.device] + " (backing off)";
      answers.push_back(std::move(a));
    }
  }
  const auto results = collector_->scrape(due, clock_);
  for (const auto& r : results) {
    std::string& last_err = last_scrape_error_[r.device];
    const std::string& name = topology_->device(r.device).name;
    backoff_->record(r.device, r.ok, r.time);
    DeviceAnswer a;
    a.device = r.device;
    a.time = r.time;
    a.answered = r.ok;
    if (!r.ok) {
      ++metrics_.scrapes_failed;
      if (last_err != r.error) spdlog::warn("scrape {} failed: {}", name, r.error);
      last_err = r.error;
      a.error = r.error;
    } else {
      ++metrics_.scrapes_ok;
      a.format = telemetry::detect_format(r.content_type, r.body);
      a.body = r.body;
    }
    answers.push_back(std::move(a));
  }

  const Time now = clock_.now();
  std::vector<probes::RoundResult> rounds;
  if (prober_) {
    rounds = prober_->take_results();
    for (const auto& r : rounds) {
      ++metrics_.probe_rounds;
      metrics_.probes_sent += r.sent;
      metrics_.probes_received += r.received;
      metrics_.probe_verdicts += r.verdicts.size();
    }
  }
  PollOutcome out = pipeline_->poll(answers, now, maintenance_, rounds);
  metrics_.samples += out.stats.samples;
  metrics_.samples_mapped += out.stats.mapped;
  metrics_.payloads_rejected += out.rejected.size();
  for (const auto& [dev, err] : out.rejected) {
    std::string& last_err = last_scrape_error_[dev];
    const std::string msg = "malformed answer: " + err;
    if (last_err != msg) spdlog::warn("scrape {}: {}", topology_->device(dev).name, msg);
    last_err = msg;
  }
  for (const auto& r : results) {
    if (r.ok && !last_scrape_error_[r.device].empty() &&
        last_scrape_error_[r.device].rfind("malformed", 0) != 0) {
      spdlog::info("scrape {} answering again", topology_->device(r.device).name);
      last_scrape_error_[r.device].clear();
    }
  }
  for (const auto& c : out.link_changes) capacity_->set_oper_up(c.link, c.up);
  if (!out.link_changes.empty()) {
    std::vector<std::pair<std::string, bool>> opers;
    for (const auto& c : out.link_changes) opers.emplace_back(topology_->link(c.link).name, c.up);
    if (auto st = db_->set_link_oper(opers, now); !st.ok()) {
      ++metrics_.db_errors;
      spdlog::error("{}", st.error());
    }
  }
  metrics_.findings += out.findings.size();
  if (!out.triage.noted.empty()) {
    metrics_.findings_noted += out.triage.noted.size();
    if (auto st = db_->record_noted(out.triage.noted, *topology_); !st.ok()) {
      ++metrics_.db_errors;
      spdlog::error("{}", st.error());
    }
  }
  for (auto& u : out.triage.updates) handle(u, now);
  for (const int64_t closed : workflow_->tick()) pipeline_->triage().close(closed, clock_.now());
  sync_metrics();
  const double keep_days = config_.settings().snapshot_retention_days;
  if (keep_days > 0 && now - snapshots_pruned_ >= std::chrono::hours(1)) {
    snapshots_pruned_ = now;
    const auto cutoff = now - std::chrono::duration_cast<Duration>(std::chrono::duration<double>(keep_days * 86400));
    if (auto n = db_->prune_snapshots(cutoff); n.ok()) {
      if (*n > 0) spdlog::info("pruned {} snapshots older than {} days", *n, keep_days);
    } else {
      ++metrics_.db_errors;
      spdlog::error("{}", n.error());
    }
  }
}

void Daemon::sync_metrics() {
  const auto& w = workflow_->metrics();
  metrics_.drains_succeeded = w.drains_verified;
  metrics_.drains_refused = w.refusals;
  metrics_.drains_failed = w.drains_failed + w.drains_rolled_back;
  metrics_.undrains_succeeded = w.undrains_verified;
  metrics_.undrains_failed = w.undrains_failed;
  metrics_.queued_for_approval = w.queued_for_approval;
  metrics_.validations_failed = w.validations_failed;
  metrics_.actions_reconciled = w.reconciled;
  metrics_.breaker_trips = w.breaker_trips;
}

void Daemon::take_snapshot(int64_t incident, int64_t action, fabric::LinkId link, const std::string& scope,
                           const std::string& why) {
  db::IncidentFilter f;
  f.open_only = true;
  f.limit = 100000;
  auto open = db_->incidents(f);
  if (!open.ok()) {
    ++metrics_.db_errors;
    spdlog::error("snapshot: {}", open.error());
    return;
  }
  snapshot::FabricState state{*capacity_topology_, *capacity_,
                              [this](fabric::PortId p) -> const telemetry::PortSample& { return pipeline_->latest(p); },
                              [this](fabric::PortId p) { return pipeline_->port_oper(p); }, {}, clock_.now()};
  for (const auto& row : *open) state.open_incidents.push_back(db::incident_reading(row));
  snapshot::Snapshot snap = snapshot::capture_link(state, link, scope, why);
  snap.incident_id = incident;
  snap.action_id = action;
  if (auto id = db_->write_snapshot(snap); id.ok()) {
    ++metrics_.snapshots_taken;
  } else {
    ++metrics_.db_errors;
    spdlog::error("snapshot of {} ({}): {}", topology_->link(link).name, why, id.error());
  }
}

void Daemon::handle(triage::IncidentUpdate& u, Time now) {
  const std::string scope = u.link != fabric::kNone    ? topology_->link(u.link).name
                            : u.device != fabric::kNone ? topology_->device(u.device).name
                                                        : "";
  if (u.is_new()) {
    auto id = db_->open_incident(u, *topology_, now);
    if (!id.ok()) {
      // Not recorded: do not act on it. The detector reports it again.
      ++metrics_.db_errors;
      spdlog::error("could not open incident for {}: {}", scope, id.error());
      return;
    }
    ++metrics_.incidents_opened;
    pipeline_->triage().bind(u, *id);
    spdlog::info("incident {} opened: {} ({}) on {}: {}{}", *id, triage::to_string(u.cls),
                 detectors::to_string(u.severity), scope, u.summary, u.suspect.empty() ? "" : "; suspect: " + u.suspect);
    if (u.link != fabric::kNone) take_snapshot(*id, 0, u.link, "incident", "incident opened");
    to_workflow(*id, u, now);
    return;
  }
  if (u.reopened) {
    if (auto st = db_->reopen_incident(u, *topology_, now); !st.ok()) {
      ++metrics_.db_errors;
      spdlog::error("could not reopen incident {}: {}", u.incident_id, st.error());
      return;
    }
    ++metrics_.incidents_reopened;
    pipeline_->triage().bind(u, u.incident_id);
    spdlog::info("incident {} reopened: {} on {}: {}", u.incident_id, triage::to_string(u.cls), scope, u.summary);
    to_workflow(u.incident_id, u, now);
    return;
  }
  if (auto st = db_->add_findings(u, *topology_); !st.ok()) {
    ++metrics_.db_errors;
    spdlog::error("{}", st.error());
    return;
  }
  if (u.escalated()) spdlog::info("incident {} now {}: {}", u.incident_id, detectors::to_string(u.severity), u.summary);
  to_workflow(u.incident_id, u, now);
}

void Daemon::to_workflow(int64_t id, const triage::IncidentUpdate& u, Time now) {
  const double loss = remediation::loss_estimate(u);
  workflow_->on_update(id, u.link, u.cls, u.severity, loss, now);
  if (u.link != fabric::kNone && remediation::drainable(u.cls) && loss > 0) {
    if (auto st = db_->set_loss(id, loss); !st.ok()) {
      ++metrics_.db_errors;
      spdlog::error("{}", st.error());
    }
  }
}

}  // namespace medic::service
