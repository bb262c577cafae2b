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
  auto gauge = [&](const char* name, const char* help, const std::string& v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n" + name + " " + v + "\n";
  };
  add("medic_cycles_total", "Poll cycles run.", cycles);
  add("medic_scrapes_ok_total", "Device scrapes answered.", scrapes_ok);
  add("medic_scrapes_failed_total", "Device scrapes that failed or timed out.", scrapes_failed);
  add("medic_scrapes_skipped_total", "Device scrapes skipped while the device is in backoff.", scrapes_skipped);
  add("medic_payloads_rejected_total", "Answers rejected as malformed.", payloads_rejected);
  add("medic_samples_total", "Samples parsed (metric lines and OpenConfig leaves).", samples);
  add("medic_samples_mapped_total", "Counter samples mapped onto canonical counters.", samples_mapped);
  add("medic_samples_implausible_total", "Counter values no port can produce, left out.", samples_implausible);
  add("medic_telemetry_outage_polls_total", "Polls in which most devices did not answer (the collector's outage).",
      telemetry_outage_polls);
  add("medic_findings_total", "Findings made by detectors.", findings);
  add("medic_findings_noted_total", "Findings recorded without an incident (informational or under maintenance).",
      findings_noted);
  add("medic_incidents_opened_total", "Incidents opened.", incidents_opened);
  add("medic_incidents_reopened_total", "Closed incidents reopened because their fault came back.", incidents_reopened);
  add("medic_incidents_resolved_total", "Measurement incidents closed because the measurement works again.",
      incidents_resolved);
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
  add("medic_records_dropped_total", "Findings and incident updates dropped from a full buffer while they could not be recorded.",
      records_dropped);
  add("medic_probe_rounds_total", "Probe rounds finished.", probe_rounds);
  add("medic_probes_sent_total", "STAMP probes sent.", probes_sent);
  add("medic_probes_received_total", "STAMP probes answered in time.", probes_received);
  add("medic_probe_verdicts_total", "Lossy links named by localization, summed over rounds.", probe_verdicts);
  add("medic_probe_outage_rounds_total", "Prober rounds left out of localization as measurement outages.",
      probe_outage_rounds);
  add("medic_probe_measurement_verdicts_total", "Probers and reflectors localization blamed, summed over rounds.",
      probe_measurement_verdicts);
  add("medic_probe_verdicts_left_to_silence_total",
      "Lossy-link verdicts left to a device that did not answer its telemetry, summed over rounds.",
      probe_verdicts_left_to_silence);
  gauge("medic_leader", "1 while this daemon leads (and has reloaded what the database holds).",
        std::to_string(leading.load()));
  gauge("medic_role", "0 starting, 1 leader, 2 degraded (polls and detects, records and acts on nothing), 3 standby.",
        std::to_string(role.load()));
  gauge("medic_db_up", "1 when the database answered the last check.", std::to_string(db_up.load()));
  gauge("medic_pending_records", "Findings and incident updates waiting to be recorded.",
        std::to_string(pending_records.load()));
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.6f", last_cycle_seconds.load());
  gauge("medic_last_cycle_seconds", "How long the last poll cycle took.", secs);
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

Daemon::Daemon(const DaemonConfig& config, const LoadedFiles& files, const Clock& clock)
    : config_(config),
      clock_(clock),
      topology_(files.topology),
      counter_map_(files.counter_map),
      detector_config_(files.detectors) {
  const auto& s = config.settings();
  // The poll loop's own connection; it reconnects by itself when the database returns.
  db_ = std::make_unique<db::Database>(s.db_url, config.db());
  store_ = std::make_unique<db::DbRemediationStore>(*db_, *topology_);
  capacity_topology_ = std::make_unique<fabric::Topology>(remediation::with_derived_groups(*topology_, files.capacity));

  telemetry::CollectorOptions copt;
  copt.timeout_s = s.scrape_timeout_s;
  copt.max_in_flight = static_cast<size_t>(s.scrape_concurrency);
  collector_ = std::make_unique<telemetry::Collector>(copt);
  backoff_ = std::make_unique<telemetry::Backoff>(topology_->devices().size(), config.poll_interval(),
                                                  from_seconds(s.backoff_max_s));
  pipeline_ = std::make_unique<Pipeline>(*topology_, *counter_map_, detector_config_, config.triage());
  capacity_ = std::make_unique<remediation::CapacityModel>(*capacity_topology_, files.capacity.budget());
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
  workflow_ = std::make_unique<remediation::Workflow>(*topology_, *capacity_, *drivers_, *store_, *signals_,
                                                      files.policy, clock_);
  workflow_->set_snapshot_hook([this](int64_t incident, int64_t action, fabric::LinkId link, const std::string& why) {
    take_snapshot(incident, action, link, "action", why);
  });

  for (fabric::DeviceId d = 0; d < topology_->devices().size(); ++d) {
    const auto& dev = topology_->device(d);
    if (!dev.telemetry_url.empty()) targets_.push_back({d, dev.telemetry_url});
  }
  last_scrape_error_.resize(topology_->devices().size());
  for (const auto& d : topology_->devices()) can_probe_ = can_probe_ || (!d.probe_source.empty() && d.reflector_port != 0);
  if (s.probe && !can_probe_) spdlog::info("no device has a probe source and a reflector port: active probing off");
}

Daemon::~Daemon() {
  if (prober_) prober_->stop();
}

bool Daemon::take_lead(int64_t epoch) {
  const auto& s = config_.settings();
  const Time now = clock_.now();
  // Not leading until every piece is reloaded: a half-reset workflow must not tick.
  epoch_ = 0;
  metrics_.leading = 0;
  auto failed = [&](const std::string& what) {
    ++metrics_.db_errors;
    spdlog::error("medicd {}: could not take the lead (epoch {}): {}; tries again next cycle", s.name, epoch, what);
    return false;
  };
  store_->set_fence(s.name, epoch);
  if (auto st = db_->sync_inventory(*topology_); !st.ok()) return failed(st.error());
  // Drain state survives restarts and takeovers: the database is the record.
  auto drains = db_->drain_states();
  if (!drains.ok()) return failed(drains.error());
  db::IncidentFilter open_filter;
  open_filter.open_only = true;
  open_filter.limit = 1000000;
  auto open = db_->incidents(open_filter);
  if (!open.ok()) return failed(open.error());
  auto closed = db_->closed_since(now - config_.triage().reopen_window);
  if (!closed.ok()) return failed(closed.error());

  capacity_->clear_drains();
  for (const auto& row : *drains) {
    const auto link = topology_->find_link(row.link);
    // draining/undraining: an unfinished action; the workflow reconciles it with the switch
    // and counts the link as drained until then.
    if (link && row.drain_state == "drained") capacity_->set_drained(*link, true);
  }
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
  auto& triage = pipeline_->triage();
  triage.reset();
  triage.load_open(known);
  triage.load_closed(recent);
  if (auto st = workflow_->restart(); !st.ok()) return failed("remediation: " + st.error());
  maintenance_loaded_ = {};
  refresh_maintenance(now);
  epoch_ = epoch;
  metrics_.leading = 1;
  if (!ready_logged_) {
    ready_logged_ = true;
    spdlog::info("medicd ready: {} devices polled, {} links, {} capacity groups, {} drained, {} open incidents, "
                 "{} remediation cases",
                 targets_.size(), topology_->links().size(), capacity_topology_->groups().size(), drains->size(),
                 known.size(), workflow_->open_cases());
  } else {
    spdlog::info("medicd {}: leads again (epoch {}): {} drained, {} open incidents, {} remediation cases; {} records "
                 "kept meanwhile to write",
                 s.name, epoch, drains->size(), known.size(), workflow_->open_cases(), pending());
  }
  return true;
}

void Daemon::stand_by() {
  if (epoch_ != 0 || pending() > 0) {
    spdlog::info("medicd {}: another daemon leads; stops polling{}", config_.settings().name,
                 pending() > 0 ? " and drops " + std::to_string(pending()) + " records it kept (the leader records its own)"
                               : "");
  }
  epoch_ = 0;
  metrics_.leading = 0;
  pending_updates_.clear();
  pending_noted_.clear();
  pending_oper_.clear();
  metrics_.pending_records = 0;
  if (prober_) {
    prober_->stop();
    prober_.reset();
  }
}

bool Daemon::can_record() const { return epoch_ != 0 && db_up_ && db_->available(); }

void Daemon::refresh_maintenance(Time now) {
  if (!can_record()) return;  // keep the windows already known
  auto rows = db_->maintenance(now);
  if (!rows.ok()) {
    ++metrics_.db_errors;
    spdlog::error("{}", rows.error());
    return;
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

void Daemon::cycle(const LeadershipState& leadership) {
  const auto cycle_start = std::chrono::steady_clock::now();
  metrics_.role = static_cast<int64_t>(leadership.role);
  metrics_.db_up = leadership.db_up ? 1 : 0;
  db_up_ = leadership.db_up;
  auto finish_cycle = [&] {
    const auto end = std::chrono::steady_clock::now();
    metrics_.last_cycle_seconds = std::chrono::duration<double>(end - cycle_start).count();
    metrics_.last_cycle_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(end.time_since_epoch()).count();
    metrics_.pending_records = static_cast<int64_t>(pending());
  };
  if (leadership.role == Role::standby) {
    stand_by();
    finish_cycle();
    return;
  }
  if (leadership.role == Role::leader && leadership.epoch != epoch_) take_lead(leadership.epoch);
  if (leadership.role != Role::leader && epoch_ != 0) {
    spdlog::warn("medicd {}: not leading ({}); polls and detects, keeps what it finds, acts on nothing",
                 config_.settings().name, to_string(leadership.role));
    epoch_ = 0;
    metrics_.leading = 0;
  }
  if (!prober_ && can_probe_ && config_.settings().probe) {
    probes::SchedulerConfig pc = config_.prober();
    pc.outage_share = detector_config_.probe.outage_share;
    pc.outage_min_sessions = detector_config_.probe.outage_min_sessions;
    prober_ = std::make_unique<probes::ProbeScheduler>(*topology_, pc, clock_);
    if (auto st = prober_->start(); !st.ok()) {
      // Counters still watch the fabric: active probing is off until medicd restarts.
      spdlog::error("prober: {}; active probing is off", st.error());
      prober_.reset();
      can_probe_ = false;
    }
  }

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
      a.asked = false;
      a.error = last_scrape_error_[t.device] + " (backing off)";
      answers.push_back(std::move(a));
    }
  }
  const auto results = collector_->scrape(due, clock_);
  // Most devices failing at once is the collector's outage, not theirs: nobody backs off
  // for it, so that everyone is asked again the moment it ends.
  const size_t failed = static_cast<size_t>(std::count_if(results.begin(), results.end(), [](const auto& r) { return !r.ok; }));
  const bool outage = detectors::telemetry_outage(results.size(), failed, detector_config_.stale);
  if (outage && !in_outage_) spdlog::warn("telemetry outage: {} of {} devices did not answer this poll", failed, results.size());
  if (!outage && in_outage_) spdlog::info("telemetry outage over: devices answer again");
  if (outage) ++metrics_.telemetry_outage_polls;
  in_outage_ = outage;
  for (const auto& r : results) {
    std::string& last_err = last_scrape_error_[r.device];
    const std::string& name = topology_->device(r.device).name;
    if (!outage || r.ok) backoff_->record(r.device, r.ok, r.time);
    DeviceAnswer a;
    a.device = r.device;
    a.time = r.time;
    a.answered = r.ok;
    if (!r.ok) {
      ++metrics_.scrapes_failed;
      if (!outage) {  // an outage is logged once, above
        if (last_err != r.error) spdlog::warn("scrape {} failed: {}", name, r.error);
        last_err = r.error;
      }
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
      metrics_.probe_outage_rounds += r.outages.size();
      metrics_.probe_measurement_verdicts += r.endpoints.size();
    }
  }
  // What was kept while it could not be recorded goes first, in order, and before this
  // poll's triage: its incidents must be known when this poll's findings are sorted.
  if (can_record()) flush(now);
  PollOutcome out = pipeline_->poll(answers, now, maintenance_, rounds);
  metrics_.samples += out.stats.samples;
  metrics_.samples_mapped += out.stats.mapped;
  metrics_.samples_implausible += out.implausible;
  metrics_.payloads_rejected += out.rejected.size();
  metrics_.probe_verdicts_left_to_silence = pipeline_->probe_verdicts_left_to_silence();
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
  metrics_.findings += out.findings.size();

  record_oper(out.link_changes, now);
  if (!out.triage.noted.empty()) {
    metrics_.findings_noted += out.triage.noted.size();
    record_noted(std::move(out.triage.noted));
  }
  for (auto& u : out.triage.updates) {
    if (!record(u, now)) keep(std::move(u));
  }
  if (can_record()) {
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
  finish_cycle();
}

void Daemon::keep(triage::IncidentUpdate u) {
  pending_updates_.push_back(std::move(u));
  while (pending_updates_.size() > config_.settings().pending_limit) {
    pending_updates_.pop_front();
    ++metrics_.records_dropped;
  }
}

void Daemon::record_noted(std::vector<triage::NotedFinding> noted) {
  if (can_record() && pending_noted_.empty()) {
    if (auto st = db_->record_noted(noted, *topology_); st.ok()) return;
    else {
      ++metrics_.db_errors;
      spdlog::error("{}", st.error());
    }
  }
  for (auto& n : noted) pending_noted_.push_back(std::move(n));
  while (pending_noted_.size() > config_.settings().pending_limit) {
    pending_noted_.pop_front();
    ++metrics_.records_dropped;
  }
}

void Daemon::record_oper(const std::vector<LinkStateChange>& changes, Time now) {
  for (const auto& c : changes) pending_oper_[c.link] = {c.up, now};
  if (pending_oper_.empty() || !can_record()) return;
  std::vector<std::pair<std::string, bool>> opers;
  Time at = now;
  for (const auto& [link, state] : pending_oper_) {
    opers.emplace_back(topology_->link(link).name, state.first);
    at = std::min(at, state.second);
  }
  if (auto st = db_->set_link_oper(opers, now); st.ok()) {
    pending_oper_.clear();
  } else {
    ++metrics_.db_errors;
    spdlog::error("{}", st.error());
  }
}

void Daemon::flush(Time now) {
  if (!pending_noted_.empty()) {
    std::vector<triage::NotedFinding> noted(pending_noted_.begin(), pending_noted_.end());
    pending_noted_.clear();
    record_noted(std::move(noted));
  }
  if (pending_updates_.empty()) return;
  const size_t before = pending_updates_.size();
  while (!pending_updates_.empty() && can_record()) {
    triage::IncidentUpdate u = std::move(pending_updates_.front());
    pending_updates_.pop_front();
    // Made while it could not be recorded: which incident it belongs to is decided now.
    pipeline_->triage().resolve_identity(u, now);
    if (!record(u, now)) {
      pending_updates_.push_front(std::move(u));
      break;
    }
  }
  if (pending_updates_.size() < before) {
    spdlog::info("recorded {} incident updates found while they could not be recorded{}", before - pending_updates_.size(),
                 pending_updates_.empty() ? "" : "; " + std::to_string(pending_updates_.size()) + " still wait");
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

bool Daemon::record(triage::IncidentUpdate& u, Time now) {
  if (!can_record()) return false;
  const std::string scope = u.link != fabric::kNone      ? topology_->link(u.link).name
                            : u.device != fabric::kNone   ? topology_->device(u.device).name
                            : u.cls == triage::IncidentClass::prober_fault ? std::string("the prober")
                                                                            : std::string("the telemetry collector");
  // A failure of the database itself keeps the update for later; any other refusal is
  // logged and the update dropped (recording it again would fail the same way).
  auto kept = [&](const std::string& what, const std::string& error) {
    ++metrics_.db_errors;
    spdlog::error("{}: {}{}", what, error, db_->available() ? "" : "; kept to record when the database answers");
    return db_->available();
  };
  if (u.is_new()) {
    auto id = db_->open_incident(u, *topology_, now);
    if (!id.ok()) return kept("could not open incident for " + scope, id.error());
    ++metrics_.incidents_opened;
    pipeline_->triage().bind(u, *id);
    spdlog::info("incident {} opened: {} ({}) on {}: {}{}", *id, triage::to_string(u.cls),
                 detectors::to_string(u.severity), scope, u.summary, u.suspect.empty() ? "" : "; suspect: " + u.suspect);
    if (u.link != fabric::kNone) take_snapshot(*id, 0, u.link, "incident", "incident opened");
    to_workflow(*id, u, now);
    return true;
  }
  if (u.resolved) {
    // A measurement incident whose measurement works again: nobody repairs it, it closes.
    if (u.incident_id == 0) pipeline_->triage().resolve_identity(u, now);
    if (u.incident_id == 0) return true;  // nothing of that scope open: nothing to close
    if (auto st = db_->resolve_incident(u, *topology_, now); !st.ok()) {
      return kept("could not close incident " + std::to_string(u.incident_id), st.error());
    }
    pipeline_->triage().close(u.incident_id, now);
    ++metrics_.incidents_resolved;
    spdlog::info("incident {} closed: {} on {}: {}", u.incident_id, triage::to_string(u.cls), scope, u.summary);
    return true;
  }
  if (u.reopened) {
    if (auto st = db_->reopen_incident(u, *topology_, now); !st.ok()) {
      return kept("could not reopen incident " + std::to_string(u.incident_id), st.error());
    }
    ++metrics_.incidents_reopened;
    pipeline_->triage().bind(u, u.incident_id);
    spdlog::info("incident {} reopened: {} on {}: {}", u.incident_id, triage::to_string(u.cls), scope, u.summary);
    to_workflow(u.incident_id, u, now);
    return true;
  }
  if (auto st = db_->add_findings(u, *topology_); !st.ok()) return kept("incident " + std::to_string(u.incident_id), st.error());
  if (u.escalated()) spdlog::info("incident {} now {}: {}", u.incident_id, detectors::to_string(u.severity), u.summary);
  to_workflow(u.incident_id, u, now);
  return true;
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
