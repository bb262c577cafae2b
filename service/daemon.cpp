#include "service/daemon.h"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include "common/strings.h"
#include "fabric/loader.h"
#include "remediation/capacity_config.h"
#include "remediation/policy.h"
#include "snapshot/snapshot.h"

namespace medic::service {

using triage::IncidentState;

namespace {
constexpr const char* kTrapHelp =
    "SNMP notifications received on --snmp-trap-listen, by result: link_down and link_up (taken as link events), "
    "other (another notification), unknown_agent (from an address no switch is polled at), bad_credentials (wrong "
    "community, SNMPv3 user, keys or level), malformed, unknown_interface (an ifIndex the agent's last poll did not name), duplicate (the same notification again: "
    "the same sysUpTime), before_poll (sent before the agent's latest poll, which counted it).";

DaemonMetrics::Stage stage(metrics::Registry& r, const char* name) {
  return {r.histogram("medic_poll_stage_seconds",
                      "Where a poll cycle's time went, by stage: scrape (asking every switch, until the last answer "
                      "or its timeout), judge (mapping the last answers, every detector, triage), record (writing "
                      "what was found, the workflow's pass).",
                      metrics::seconds_buckets(), {{"stage", name}}),
          r.gauge("medic_last_cycle_stage_seconds",
                  "Where the last poll cycle's time went, by stage (as medic_poll_stage_seconds).",
                  {{"stage", name}})};
}
}  // namespace

DaemonMetrics::DaemonMetrics(metrics::Registry& r)
    : cycles(r.counter("medic_cycles_total", "Poll cycles run.")),
      scrapes_ok(r.counter("medic_scrapes_ok_total", "Device scrapes answered.")),
      scrapes_failed(r.counter("medic_scrapes_failed_total", "Device scrapes that failed or timed out.")),
      scrapes_skipped(r.counter("medic_scrapes_skipped_total", "Device scrapes skipped while the device is in backoff.")),
      payloads_rejected(r.counter("medic_payloads_rejected_total", "Answers rejected as malformed.")),
      snmp_requests(r.counter("medic_snmp_requests_total", "SNMP GETBULK requests sent to switches' agents.")),
      snmp_agent_restarts(r.counter("medic_snmp_agent_restarts_total",
                                    "SNMP agents seen to restart (sysUpTime went back) between two polls.")),
      snmp_renumbered(r.counter("medic_snmp_renumbered_total",
                                "SNMP agents whose ifIndex numbering changed (interfaces are matched by ifName).")),
      traps_link_down(r.counter("medic_snmp_notifications_total", kTrapHelp, {{"result", "link_down"}})),
      traps_link_up(r.counter("medic_snmp_notifications_total", kTrapHelp, {{"result", "link_up"}})),
      traps_other(r.counter("medic_snmp_notifications_total", kTrapHelp, {{"result", "other"}})),
      traps_unknown_agent(r.counter("medic_snmp_notifications_total", kTrapHelp, {{"result", "unknown_agent"}})),
      traps_bad_credentials(r.counter("medic_snmp_notifications_total", kTrapHelp, {{"result", "bad_credentials"}})),
      traps_malformed(r.counter("medic_snmp_notifications_total", kTrapHelp, {{"result", "malformed"}})),
      traps_unknown_interface(r.counter("medic_snmp_notifications_total", kTrapHelp, {{"result", "unknown_interface"}})),
      traps_duplicate(r.counter("medic_snmp_notifications_total", kTrapHelp, {{"result", "duplicate"}})),
      traps_before_poll(r.counter("medic_snmp_notifications_total", kTrapHelp, {{"result", "before_poll"}})),
      samples(r.counter("medic_samples_total", "Samples parsed (metric lines and OpenConfig leaves).")),
      samples_mapped(r.counter("medic_samples_mapped_total", "Counter samples mapped onto canonical counters.")),
      samples_implausible(r.counter("medic_samples_implausible_total", "Counter values no port can produce, left out.")),
      telemetry_outage_polls(r.counter("medic_telemetry_outage_polls_total",
                                       "Polls in which most devices did not answer (the collector's outage).")),
      findings(r.counter("medic_findings_total", "Findings made by detectors.")),
      findings_noted(r.counter("medic_findings_noted_total",
                               "Findings recorded without an incident (informational or under maintenance).")),
      incidents_opened(r.counter("medic_incidents_opened_total", "Incidents opened.")),
      incidents_reopened(r.counter("medic_incidents_reopened_total", "Closed incidents reopened because their fault came back.")),
      incidents_resolved(r.counter("medic_incidents_resolved_total",
                                   "Measurement incidents closed because the measurement works again.")),
      snapshots_skipped(r.counter("medic_snapshots_skipped_total",
                                  "Snapshots of opened incidents not taken: past --incident-snapshots in one poll "
                                  "cycle (a flood of incidents; drains are always snapshotted).")),
      db_errors(r.counter("medic_db_errors_total", "Database calls that failed.")),
      records_dropped(r.counter("medic_records_dropped_total",
                                "Findings and incident updates dropped from a full buffer while they could not be recorded.")),
      probe_rounds(r.counter("medic_probe_rounds_total", "Probe rounds finished.")),
      probes_sent(r.counter("medic_probes_sent_total", "STAMP probes sent.")),
      probes_received(r.counter("medic_probes_received_total", "STAMP probes answered in time.")),
      probe_verdicts(r.counter("medic_probe_verdicts_total", "Lossy links named by localization, summed over rounds.")),
      probe_outage_rounds(r.counter("medic_probe_outage_rounds_total",
                                    "Prober rounds left out of localization as measurement outages.")),
      probe_measurement_verdicts(r.counter("medic_probe_measurement_verdicts_total",
                                           "Probers and reflectors localization blamed, summed over rounds.")),
      probe_verdicts_left_to_silence(
          r.counter("medic_probe_verdicts_left_to_silence_total",
                    "Lossy-link verdicts left to a device that did not answer its telemetry, summed over rounds.")),
      probe_packets_sent(r.counter("medic_probe_packets_sent_total",
                                   "STAMP probes the prober has sent so far, the round under way included (taken every "
                                   "poll; medic_probes_sent_total counts finished rounds).")),
      probe_rounds_left_to_down_links(
          r.counter("medic_probe_rounds_left_to_down_links_total",
                    "Probe sessions' rounds left out of localization because telemetry saw the carrier of a link "
                    "they may cross change in that round (a flap, or the link going down or coming up; the link "
                    "flap and link down detectors judge the link).")),
      probes_late(r.counter("medic_probes_late_total",
                            "Replies the prober could match to no probe outstanding: late (after their round closed, "
                            "--probe-timeout after its last probe, and already counted lost), repeated, or not STAMP. Many of them with probe loss everywhere: "
                            "the prober's host or a reflector is too slow to answer in time, not the fabric.")),
      leading(r.gauge("medic_leader", "1 while this daemon leads (and has reloaded what the database holds).")),
      role(r.gauge("medic_role", "0 starting, 1 leader, 2 degraded (polls and detects, records and acts on nothing), 3 standby.")),
      db_up(r.gauge("medic_db_up", "1 when the database answered the last check.")),
      pending_records(r.gauge("medic_pending_records", "Findings and incident updates waiting to be recorded.")),
      last_cycle_seconds(r.gauge("medic_last_cycle_seconds", "How long the last poll cycle took.")),
      probe_links_judged(r.gauge("medic_probe_links_judged",
                                 "Links the last probe round judged the latency of (enough round trips in the window).")),
      probe_links_slow(r.gauge("medic_probe_links_slow",
                               "Of those, links whose round trips were over the latency threshold in that round, named "
                               "or not yet (a link is named after several rounds in a row). Many at once, on links of "
                               "every kind: a busy prober or reflector host, not the fabric.")),
      poll_cycle_seconds(r.histogram("medic_poll_cycle_seconds",
                                     "How long one poll cycle took: scrape, detect, record and the workflow's pass.",
                                     metrics::seconds_buckets())),
      stage_scrape(stage(r, "scrape")),
      stage_judge(stage(r, "judge")),
      stage_record(stage(r, "record")) {}

Daemon::Daemon(const DaemonConfig& config, DaemonParts parts, const Clock& clock)
    : config_(config), p_(parts), clock_(clock), metrics_(parts.registry) {
  const auto& s = config.settings();
  p_.workflow.set_snapshot_hook([this](int64_t incident, int64_t action, fabric::LinkId link, const std::string& why) {
    take_snapshot(incident, action, link, "action", why);
  });
  for (fabric::DeviceId d = 0; d < p_.topology.devices().size(); ++d) {
    const auto& dev = p_.topology.device(d);
    if (!dev.telemetry_url.empty()) targets_.push_back({d, dev.telemetry_url});
  }
  last_scrape_error_.resize(p_.topology.devices().size());
  for (const auto& d : p_.topology.devices()) can_probe_ = can_probe_ || (!d.probe_source.empty() && d.reflector_port != 0);
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
  metrics_.leading.set(0);
  auto failed = [&](const std::string& what) {
    ++metrics_.db_errors;
    spdlog::error("medicd {}: could not take the lead (epoch {}): {}; tries again next cycle", s.name, epoch, what);
    return false;
  };
  p_.remediation_store.set_fence(s.name, epoch);
  // A batch whose COMMIT's answer was lost is settled before what the database holds is
  // read back: then triage and the workflow load whatever it recorded.
  if (!settle_doubt(now)) return failed("whether the last batch of incident updates committed is not known yet");
  if (auto st = p_.inventory.sync_inventory(p_.topology); !st.ok()) return failed(st.error());
  // Drain state survives restarts and takeovers: the database is the record.
  auto drains = p_.inventory.drain_states();
  if (!drains.ok()) return failed(drains.error());
  db::IncidentFilter open_filter;
  open_filter.open_only = true;
  open_filter.limit = 1000000;
  auto open = p_.incidents.incidents(open_filter);
  if (!open.ok()) return failed(open.error());
  auto closed = p_.incidents.closed_since(now - config_.triage().reopen_window);
  if (!closed.ok()) return failed(closed.error());

  p_.capacity.clear_drains();
  for (const auto& row : *drains) {
    const auto link = p_.topology.find_link(row.link);
    // draining/undraining: an unfinished action; the workflow reconciles it with the switch
    // and counts the link as drained until then.
    if (link && row.drain_state == "drained") p_.capacity.set_drained(*link, true);
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
    if (const auto l = p_.topology.find_link(row.link)) o.link = *l;
    if (const auto d = p_.topology.find_device(row.device)) o.device = *d;
    known.push_back(o);
  }
  std::vector<triage::ClosedIncident> recent;
  for (const auto& row : *closed) {
    const auto cls = triage::parse_incident_class(row.incident_class);
    if (!cls) continue;
    triage::ClosedIncident c;
    c.id = row.id;
    c.cls = *cls;
    if (const auto l = p_.topology.find_link(row.link)) c.link = *l;
    if (const auto d = p_.topology.find_device(row.device)) c.device = *d;
    c.closed_at = row.closed_at ? *row.closed_at : row.dismissed_at.value_or(now);
    recent.push_back(c);
  }
  p_.pipeline.reload(known, recent);
  recorded_ = {};
  if (auto st = p_.workflow.restart(); !st.ok()) return failed("remediation: " + st.error());
  maintenance_loaded_ = {};
  refresh_maintenance(now);
  epoch_ = epoch;
  metrics_.leading.set(1);
  if (!ready_logged_) {
    ready_logged_ = true;
    spdlog::info("medicd ready: {} devices polled, {} links, {} capacity groups, {} drained, {} open incidents, "
                 "{} remediation cases",
                 targets_.size(), p_.topology.links().size(), p_.capacity_topology.groups().size(), drains->size(),
                 known.size(), p_.workflow.open_cases());
  } else {
    spdlog::info("medicd {}: leads again (epoch {}): {} drained, {} open incidents, {} remediation cases; {} records "
                 "kept meanwhile to write",
                 s.name, epoch, drains->size(), known.size(), p_.workflow.open_cases(), pending());
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
  metrics_.leading.set(0);
  pending_updates_.clear();
  pending_noted_.clear();
  pending_oper_.clear();
  doubtful_.reset();
  recorded_ = {};
  metrics_.pending_records.set(0);
  if (prober_) {
    prober_->stop();
    prober_.reset();
  }
}

bool Daemon::can_record() const { return epoch_ != 0 && db_up_ && p_.db.available(); }

void Daemon::refresh_maintenance(Time now) {
  if (!can_record()) return;  // keep the windows already known
  auto rows = p_.maintenance.maintenance(now);
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
      const auto l = p_.topology.find_link(r.link);
      if (!l) continue;
      m.link = *l;
    } else {
      const auto d = p_.topology.find_device(r.device);
      if (!d) continue;
      m.device = *d;
    }
    maintenance_.push_back(m);
  }
  maintenance_loaded_ = now;
}

void Daemon::cycle(const LeadershipState& leadership) {
  const auto cycle_start = std::chrono::steady_clock::now();
  metrics_.role.set(static_cast<double>(leadership.role));
  role_ = leadership.role;
  metrics_.db_up.set(leadership.db_up ? 1 : 0);
  db_up_ = leadership.db_up;
  double scrape_s = 0, judge_s = 0, record_s = 0;  // this cycle's stages (none: a standby's)
  auto finish_cycle = [&] {
    const auto end = std::chrono::steady_clock::now();
    const double took = std::chrono::duration<double>(end - cycle_start).count();
    metrics_.stage_scrape.last.set(scrape_s);
    metrics_.stage_judge.last.set(judge_s);
    metrics_.stage_record.last.set(record_s);
    metrics_.last_cycle_seconds.set(took);
    metrics_.poll_cycle_seconds.observe(took);
    last_cycle_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(end.time_since_epoch()).count();
    metrics_.pending_records.set(static_cast<double>(pending()));
    if (incident_snapshots_skipped_ > 0) {
      spdlog::warn("{} incidents opened in one poll: snapshots taken of the first {}, {} skipped "
                   "(medic_snapshots_skipped_total; `medic snapshot take` stores the whole fabric)",
                   incident_snapshots_ + incident_snapshots_skipped_, incident_snapshots_, incident_snapshots_skipped_);
    }
    incident_snapshots_ = incident_snapshots_skipped_ = 0;
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
    metrics_.leading.set(0);
  }
  if (!prober_ && can_probe_ && config_.settings().probe) {
    probes::SchedulerConfig pc = config_.prober();
    pc.outage_share = p_.detectors.probe.outage_share;
    pc.outage_min_sessions = p_.detectors.probe.outage_min_sessions;
    // A round is judged once the polls have read past its end (two intervals and a scrape,
    // at most 30 s), so a link that flapped in its last moments is known.
    pc.telemetry_wait_s = std::min(30.0, 2 * config_.settings().poll_interval_s + config_.settings().scrape_timeout_s);
    prober_ = std::make_unique<probes::ProbeScheduler>(p_.topology, pc, clock_);
    probe_packets_seen_ = probes_late_seen_ = probe_left_seen_ = 0;
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
  std::vector<pipeline::DeviceAnswer> answers;
  due.reserve(targets_.size());
  for (const auto& t : targets_) {
    if (p_.backoff.due(t.device, started)) {
      due.push_back(t);
    } else {
      ++metrics_.scrapes_skipped;
      pipeline::DeviceAnswer a;
      a.device = t.device;
      a.time = started;
      a.asked = false;
      a.error = last_scrape_error_[t.device] + " (backing off)";
      answers.push_back(std::move(a));
    }
  }
  // A device's answer as the pipeline takes it (its body, if still in `results`, is not
  // read: each answered device's was handed over to map_ahead below).
  auto answer_of = [](const telemetry::ScrapeResult& r) {
    pipeline::DeviceAnswer a;
    a.device = r.device;
    a.time = r.time;
    a.mono = r.mono;
    a.answered = r.ok;
    if (r.ok) {
      a.format = telemetry::detect_format(r.content_type, r.body);
      a.body = r.body;
    } else {
      a.error = r.error;
    }
    return a;
  };
  // Each answer goes to the map workers the moment it arrives, bytes and all, while the
  // rest are still on their way; poll() below judges them all in order.
  auto hand_over = [&](telemetry::ScrapeResult& r) {
    if (!r.ok) return;
    const pipeline::DeviceAnswer a = answer_of(r);  // its format read from the body, before the body goes
    p_.pipeline.map_ahead(a, std::move(r.body));
  };
  std::vector<telemetry::ScrapeTarget> snmp_due;
  if (p_.snmp != nullptr) {
    const auto over_snmp = std::stable_partition(due.begin(), due.end(),
                                                 [](const auto& t) { return !is_snmp_url(t.url); });
    snmp_due.assign(over_snmp, due.end());
    due.erase(over_snmp, due.end());
  }
  const auto scrape_start = std::chrono::steady_clock::now();
  const Duration read_after = clock_.monotonic();  // this poll's answers were all read after it
  auto results = p_.collector.scrape(due, clock_, hand_over);
  if (!snmp_due.empty()) {
    const telemetry::SnmpCounters before = p_.snmp->counters();
    for (auto& r : p_.snmp->scrape(snmp_due, clock_, hand_over)) results.push_back(std::move(r));
    const telemetry::SnmpCounters& after = p_.snmp->counters();
    metrics_.snmp_requests += static_cast<double>(after.requests - before.requests);
    metrics_.snmp_agent_restarts += static_cast<double>(after.restarts - before.restarts);
    metrics_.snmp_renumbered += static_cast<double>(after.renumbered - before.renumbered);
  }
  const auto scraped = std::chrono::steady_clock::now();
  scrape_s = std::chrono::duration<double>(scraped - scrape_start).count();
  metrics_.stage_scrape.all.observe(scrape_s);
  // Most devices failing at once is the collector's outage, not theirs: nobody backs off
  // for it, so that everyone is asked again the moment it ends.
  const size_t failed = static_cast<size_t>(std::count_if(results.begin(), results.end(), [](const auto& r) { return !r.ok; }));
  const bool outage = detectors::telemetry_outage(results.size(), failed, p_.detectors.stale);
  if (outage && !in_outage_) spdlog::warn("telemetry outage: {} of {} devices did not answer this poll", failed, results.size());
  if (!outage && in_outage_) spdlog::info("telemetry outage over: devices answer again");
  if (outage) ++metrics_.telemetry_outage_polls;
  in_outage_ = outage;
  for (const auto& r : results) {
    std::string& last_err = last_scrape_error_[r.device];
    const std::string& name = p_.topology.device(r.device).name;
    if (!outage || r.ok) p_.backoff.record(r.device, r.ok, r.time);
    if (!r.ok) {
      ++metrics_.scrapes_failed;
      if (!outage) {  // an outage is logged once, above
        if (last_err != r.error) spdlog::warn("scrape {} failed: {}", name, r.error);
        last_err = r.error;
      }
    } else {
      ++metrics_.scrapes_ok;
    }
    answers.push_back(answer_of(r));
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
    const uint64_t packets = prober_->counters().sent.load();
    metrics_.probe_packets_sent += static_cast<double>(packets - std::min(packets, probe_packets_seen_));
    probe_packets_seen_ = packets;
    const uint64_t late = prober_->counters().late_or_foreign.load();
    metrics_.probes_late += static_cast<double>(late - std::min(late, probes_late_seen_));
    probes_late_seen_ = late;
    const uint64_t left = prober_->counters().rounds_left_to_down_links.load();
    metrics_.probe_rounds_left_to_down_links += static_cast<double>(left - std::min(left, probe_left_seen_));
    probe_left_seen_ = left;
  }
  // What was kept while it could not be recorded goes first, in order, and before this
  // poll's triage: its incidents must be known when this poll's findings are sorted.
  const auto flush_start = std::chrono::steady_clock::now();
  if (can_record()) flush(now);
  const auto judge_start = std::chrono::steady_clock::now();
  pipeline::PollOutcome out = p_.pipeline.poll(answers, now, maintenance_, rounds, recorded_);
  const auto judged = std::chrono::steady_clock::now();
  judge_s = std::chrono::duration<double>(judged - judge_start).count();
  metrics_.stage_judge.all.observe(judge_s);
  if (prober_) prober_->note_telemetry(out.links_down, read_after);
  recorded_ = {};
  if (!rounds.empty()) {
    const auto latency = p_.pipeline.probe_latency();
    metrics_.probe_links_judged.set(static_cast<double>(latency.judged));
    metrics_.probe_links_slow.set(static_cast<double>(latency.over));
  }
  metrics_.samples += out.stats.samples;
  metrics_.samples_mapped += out.stats.mapped;
  metrics_.samples_implausible += out.implausible;
  metrics_.payloads_rejected += out.rejected.size();
  {
    // The detector's running total: the counter follows it.
    const uint64_t total = p_.pipeline.probe_verdicts_left_to_silence();
    if (total > metrics_.probe_verdicts_left_to_silence.value()) {
      metrics_.probe_verdicts_left_to_silence += static_cast<double>(total - metrics_.probe_verdicts_left_to_silence.value());
    }
  }
  for (const auto& [dev, err] : out.rejected) {
    std::string& last_err = last_scrape_error_[dev];
    const std::string msg = "malformed answer: " + err;
    if (last_err != msg) spdlog::warn("scrape {}: {}", p_.topology.device(dev).name, msg);
    last_err = msg;
  }
  for (const auto& r : results) {
    if (r.ok && !last_scrape_error_[r.device].empty() &&
        last_scrape_error_[r.device].rfind("malformed", 0) != 0) {
      spdlog::info("scrape {} answering again", p_.topology.device(r.device).name);
      last_scrape_error_[r.device].clear();
    }
  }
  for (const auto& c : out.link_changes) p_.capacity.set_oper_up(c.link, c.up);
  metrics_.findings += out.findings.size();

  record_oper(out.link_changes, now);
  record_triage(out.triage, now);
  if (can_record()) {
    for (const int64_t closed : p_.workflow.tick()) recorded_.closed.emplace_back(closed, clock_.now());
    const double keep_days = config_.settings().snapshot_retention_days;
    if (keep_days > 0 && now - snapshots_pruned_ >= std::chrono::hours(1)) {
      snapshots_pruned_ = now;
      const auto cutoff = now - std::chrono::duration_cast<Duration>(std::chrono::duration<double>(keep_days * 86400));
      if (auto n = p_.snapshots.prune_snapshots(cutoff); n.ok()) {
        if (*n > 0) spdlog::info("pruned {} snapshots older than {} days", *n, keep_days);
      } else {
        ++metrics_.db_errors;
        spdlog::error("{}", n.error());
      }
    }
  }
  // What was kept from earlier polls is recorded before this poll is judged: both count.
  const auto recorded = std::chrono::steady_clock::now();
  record_s = std::chrono::duration<double>((judge_start - flush_start) + (recorded - judged)).count();
  metrics_.stage_record.all.observe(record_s);
  finish_cycle();
}

void Daemon::take_notifications() {
  if (p_.snmp_traps == nullptr) return;
  const std::vector<telemetry::SnmpLinkNotification> got = p_.snmp_traps->read(clock_);
  const telemetry::SnmpTrapCounters& c = p_.snmp_traps->counters();
  auto add = [](metrics::Counter& m, size_t now, size_t& seen) {
    if (now > seen) m += static_cast<double>(now - seen);
    seen = now;
  };
  add(metrics_.traps_link_down, c.link_down, traps_seen_.link_down);
  add(metrics_.traps_link_up, c.link_up, traps_seen_.link_up);
  add(metrics_.traps_other, c.other, traps_seen_.other);
  add(metrics_.traps_unknown_agent, c.unknown_agent, traps_seen_.unknown_agent);
  add(metrics_.traps_bad_credentials, c.bad_credentials, traps_seen_.bad_credentials);
  add(metrics_.traps_malformed, c.malformed, traps_seen_.malformed);
  // Standing by, another daemon watches the fabric: read (so nothing piles up) and drop.
  if (got.empty() || role_ == Role::standby || role_ == Role::starting) return;
  std::vector<pipeline::LinkEvent> events;
  events.reserve(got.size());
  for (const auto& n : got) {
    if (p_.snmp != nullptr) {
      using N = telemetry::SnmpAgentState::Notification;
      const N verdict = p_.snmp->judge_notification(n.device, n.if_index, n.up, n.uptime);
      if (verdict != N::fresh) {
        ++(verdict == N::duplicate ? metrics_.traps_duplicate : metrics_.traps_before_poll);
        continue;
      }
    }
    std::string name = n.if_name;
    if (name.empty() && p_.snmp != nullptr) name = p_.snmp->interface_name(n.device, n.if_index).value_or("");
    const auto port = name.empty() ? std::nullopt : p_.topology.find_port(n.device, name);
    if (!port) {
      ++metrics_.traps_unknown_interface;
      spdlog::debug("SNMP {} from {}: ifIndex {} is no port of the topology (its last poll named it {})",
                    n.up ? "linkUp" : "linkDown", p_.topology.device(n.device).name, n.if_index,
                    name.empty() ? "nothing" : quote(name));
      continue;
    }
    spdlog::info("SNMP {}: {}", n.up ? "linkUp" : "linkDown", p_.topology.endpoint_name(*port));
    events.push_back({*port, n.up, n.time});
  }
  if (events.empty()) return;
  const Time now = clock_.now();
  if (can_record()) flush(now);
  pipeline::EventOutcome out = p_.pipeline.link_events(events, now, maintenance_, recorded_);
  recorded_ = {};
  metrics_.findings += out.findings.size();
  record_triage(out.triage, now);
  metrics_.pending_records.set(static_cast<double>(pending()));
}

void Daemon::record_triage(triage::TriageResult& t, Time now) {
  if (!t.noted.empty()) {
    metrics_.findings_noted += t.noted.size();
    record_noted(std::move(t.noted));
  }
  if (doubtful_) {
    // Which incidents these belong to depends on whether the batch in doubt committed.
    for (auto& u : t.updates) keep(std::move(u));
    return;
  }
  if (record_together(t.updates, now)) return;
  std::vector<int64_t> no_batch;
  for (auto& u : t.updates) {
    if (!record(u, now, no_batch)) keep(std::move(u));
  }
}

bool Daemon::record_together(std::vector<triage::IncidentUpdate>& updates, Time now) {
  if (updates.size() < 2 || !can_record()) return false;
  std::vector<double> loss;
  loss.reserve(updates.size());
  for (const auto& u : updates) loss.push_back(stored_loss(u));
  auto r = p_.incidents.record_updates(updates, loss, p_.topology, now);
  if (!r.ok()) {
    // One at a time instead: each then fails (kept, or dropped with its reason) or not on its own.
    spdlog::debug("{} incident updates recorded one at a time: {}", updates.size(), r.error());
    return false;
  }
  if (r->in_doubt) {
    // Held, and nothing else recorded, until the server says whether they are in
    // (settle_doubt): recorded again they might be twice, dropped they might be lost.
    ++metrics_.db_errors;
    spdlog::warn("{} incident updates wait: the database connection was lost during their COMMIT (transaction {}); "
                 "whether it committed is asked again before anything else is recorded",
                 updates.size(), r->in_doubt->xid);
    doubtful_ = Doubtful{*r->in_doubt, std::move(updates), std::move(r->ids)};
    return true;
  }
  apply_recorded(updates, r->ids, now);
  return true;
}

void Daemon::apply_recorded(std::vector<triage::IncidentUpdate>& updates, const std::vector<int64_t>& ids, Time now) {
  for (size_t i = 0; i < updates.size(); ++i) {
    triage::IncidentUpdate& u = updates[i];
    // What it was (new, added to, reopened, resolved) as record() would see it: an update
    // that follows an earlier one of the batch has that one's incident.
    if (u.follows >= 0 && static_cast<size_t>(u.follows) < i) u.incident_id = ids[static_cast<size_t>(u.follows)];
    const Recording what = recording(u);
    u.incident_id = ids[i];
    u.follows = -1;
    recorded(u, what, now);
  }
}

bool Daemon::settle_doubt(Time now) {
  if (!doubtful_) return true;
  const auto outcome = p_.incidents.commit_outcome(doubtful_->commit);
  if (!outcome.ok()) {
    spdlog::debug("{}: {} incident updates still wait", outcome.error(), doubtful_->updates.size());
    return false;
  }
  Doubtful d = std::move(*doubtful_);
  doubtful_.reset();
  switch (*outcome) {
    case db::CommitOutcome::committed:
      spdlog::info("transaction {} committed after all: {} incident updates recorded", d.commit.xid, d.updates.size());
      apply_recorded(d.updates, d.ids, now);
      break;
    case db::CommitOutcome::aborted:
      // Recorded again, first, with the identity triage then knows.
      spdlog::info("transaction {} did not commit: its {} incident updates are recorded again", d.commit.xid,
                   d.updates.size());
      for (auto it = d.updates.rbegin(); it != d.updates.rend(); ++it) pending_updates_.push_front(std::move(*it));
      break;
    case db::CommitOutcome::unknown:
      ++metrics_.db_errors;
      metrics_.records_dropped += static_cast<double>(d.updates.size());
      spdlog::error("whether transaction {} committed is no longer known to the database: its {} incident updates "
                    "are dropped rather than perhaps recorded twice", d.commit.xid, d.updates.size());
      break;
  }
  return true;
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
    if (auto st = p_.incidents.record_noted(noted, p_.topology); st.ok()) return;
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

void Daemon::record_oper(const std::vector<pipeline::LinkStateChange>& changes, Time now) {
  for (const auto& c : changes) pending_oper_[c.link] = {c.up, now};
  if (pending_oper_.empty() || !can_record()) return;
  std::vector<std::pair<std::string, bool>> opers;
  Time at = now;
  for (const auto& [link, state] : pending_oper_) {
    opers.emplace_back(p_.topology.link(link).name, state.first);
    at = std::min(at, state.second);
  }
  if (auto st = p_.inventory.set_link_oper(opers, now); st.ok()) {
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
  if (!settle_doubt(now) || pending_updates_.empty()) return;
  // Made while they could not be recorded: which incident each belongs to is decided now,
  // by triage, from what it knows (with what recording gave back since the last poll).
  std::vector<triage::IncidentUpdate> kept(std::make_move_iterator(pending_updates_.begin()),
                                           std::make_move_iterator(pending_updates_.end()));
  pending_updates_.clear();
  kept = p_.pipeline.resolve_kept(std::move(kept), now, recorded_);
  recorded_ = {};
  if (record_together(kept, now)) {
    if (!doubtful_) spdlog::info("recorded {} incident updates found while they could not be recorded", kept.size());
    return;
  }
  std::vector<int64_t> ids(kept.size(), 0);
  size_t done = 0;
  while (done < kept.size() && record(kept[done], now, ids)) {
    ids[done] = kept[done].incident_id;
    ++done;
  }
  // What could not be recorded waits again, in order; its identity is decided again then.
  for (size_t i = done; i < kept.size(); ++i) {
    triage::IncidentUpdate& u = kept[i];
    if (u.follows >= 0 && static_cast<size_t>(u.follows) < done) u.incident_id = ids[static_cast<size_t>(u.follows)];
    u.follows = -1;
    pending_updates_.push_back(std::move(u));
  }
  if (done > 0) {
    spdlog::info("recorded {} incident updates found while they could not be recorded{}", done,
                 pending_updates_.empty() ? "" : "; " + std::to_string(pending_updates_.size()) + " still wait");
  }
}

void Daemon::take_snapshot(int64_t incident, int64_t action, fabric::LinkId link, const std::string& scope,
                           const std::string& why) {
  snapshot::FabricState state{p_.capacity_topology, p_.capacity,
                              [this](fabric::PortId p) -> const telemetry::PortSample& { return p_.pipeline.latest(p); },
                              [this](fabric::PortId p) { return p_.pipeline.port_oper(p); }, {}, clock_.now()};
  // The open incidents as triage and the workflow know them (no query): a link incident's
  // state is the workflow's, any other is triaged. Only those that touch the link's two
  // devices (what the snapshot keeps), chosen by id: with thousands open, naming every one
  // for every snapshot made a flood of incidents quadratic.
  const fabric::Topology& t = p_.topology;
  auto end_device = [&](fabric::LinkId l, bool a) { return t.port(a ? t.link(l).a : t.link(l).b).device; };
  auto ours = [&](fabric::DeviceId d) { return d != fabric::kNone && (d == end_device(link, true) || d == end_device(link, false)); };
  for (const triage::OpenIncident& o : p_.pipeline.triage().open_incidents()) {
    const bool touches =
        ours(o.device) || (o.link != fabric::kNone && (ours(end_device(o.link, true)) || ours(end_device(o.link, false))));
    if (!touches) continue;
    snapshot::IncidentReading r;
    r.id = o.id;
    r.incident_class = std::string(triage::to_string(o.cls));
    const auto st = p_.workflow.state_of(o.id);
    r.state = std::string(triage::to_string(st ? *st : triage::IncidentState::triaged));
    r.severity = std::string(detectors::to_string(o.severity));
    if (o.link != fabric::kNone) r.link = p_.topology.link(o.link).name;
    if (o.device != fabric::kNone) r.device = p_.topology.device(o.device).name;
    state.open_incidents.push_back(std::move(r));
  }
  snapshot::Snapshot snap = snapshot::capture_link(state, link, scope, why);
  snap.incident_id = incident;
  snap.action_id = action;
  p_.snapshot_writer.submit(std::move(snap));  // stored off the poll loop
}

Daemon::Recording Daemon::recording(const triage::IncidentUpdate& u) {
  if (u.resolved) return u.incident_id == 0 ? Recording::nothing : Recording::resolved;
  if (u.is_new()) return Recording::opened;
  return u.reopened ? Recording::reopened : Recording::added;
}

std::string Daemon::scope_of(const triage::IncidentUpdate& u) const {
  return u.link != fabric::kNone                        ? p_.topology.link(u.link).name
         : u.device != fabric::kNone                    ? p_.topology.device(u.device).name
         : u.cls == triage::IncidentClass::prober_fault ? std::string("the prober")
                                                         : std::string("the telemetry collector");
}

// The loss estimate the incident's row keeps, for the repair queue's order (0: none).
double Daemon::stored_loss(const triage::IncidentUpdate& u) {
  if (u.resolved || u.link == fabric::kNone || !remediation::drainable(u.cls)) return 0;
  return std::max(0.0, remediation::loss_estimate(u));
}

bool Daemon::record(triage::IncidentUpdate& u, Time now, std::vector<int64_t>& ids) {
  if (!can_record()) return false;
  // Its incident is the one an earlier update of the batch opened.
  if (u.follows >= 0 && static_cast<size_t>(u.follows) < ids.size()) u.incident_id = ids[static_cast<size_t>(u.follows)];
  // A failure of the database itself keeps the update for later; any other refusal is
  // logged and the update dropped (recording it again would fail the same way).
  auto kept = [&](const std::string& what, const std::string& error) {
    ++metrics_.db_errors;
    spdlog::error("{}: {}{}", what, error, p_.db.available() ? "" : "; kept to record when the database answers");
    return p_.db.available();
  };
  const Recording what = recording(u);
  const double loss = stored_loss(u);
  switch (what) {
    case Recording::nothing: return true;  // nothing of that scope open: nothing to close
    case Recording::resolved:
      // A measurement incident whose measurement works again: nobody repairs it, it closes.
      if (auto st = p_.incidents.resolve_incident(u, p_.topology, now); !st.ok()) {
        return kept("could not close incident " + std::to_string(u.incident_id), st.error());
      }
      break;
    case Recording::opened: {
      auto id = p_.incidents.open_incident(u, p_.topology, now, loss);
      if (!id.ok()) return kept("could not open incident for " + scope_of(u), id.error());
      u.incident_id = *id;
      break;
    }
    case Recording::reopened:
      if (auto st = p_.incidents.reopen_incident(u, p_.topology, now, loss); !st.ok()) {
        return kept("could not reopen incident " + std::to_string(u.incident_id), st.error());
      }
      break;
    case Recording::added:
      if (auto st = p_.incidents.add_findings(u, p_.topology, loss); !st.ok()) {
        return kept("incident " + std::to_string(u.incident_id), st.error());
      }
      break;
  }
  recorded(u, what, now);
  return true;
}

void Daemon::recorded(triage::IncidentUpdate& u, Recording what, Time now) {
  switch (what) {
    case Recording::nothing: return;
    case Recording::resolved:
      recorded_.closed.emplace_back(u.incident_id, now);
      ++metrics_.incidents_resolved;
      spdlog::info("incident {} closed: {} on {}: {}", u.incident_id, triage::to_string(u.cls), scope_of(u), u.summary);
      return;
    case Recording::opened:
      ++metrics_.incidents_opened;
      recorded_.add_opened(u, u.incident_id);
      spdlog::info("incident {} opened: {} ({}) on {}: {}{}", u.incident_id, triage::to_string(u.cls),
                   detectors::to_string(u.severity), scope_of(u), u.summary,
                   u.suspect.empty() ? "" : "; suspect: " + u.suspect);
      if (u.link != fabric::kNone) {
        if (incident_snapshots_ < config_.settings().incident_snapshots) {
          ++incident_snapshots_;
          take_snapshot(u.incident_id, 0, u.link, "incident", "incident opened");
        } else {
          ++incident_snapshots_skipped_;
          ++metrics_.snapshots_skipped;
        }
      }
      break;
    case Recording::reopened:
      ++metrics_.incidents_reopened;
      recorded_.add_opened(u, u.incident_id);
      spdlog::info("incident {} reopened: {} on {}: {}", u.incident_id, triage::to_string(u.cls), scope_of(u), u.summary);
      break;
    case Recording::added:
      if (u.escalated()) spdlog::info("incident {} now {}: {}", u.incident_id, detectors::to_string(u.severity), u.summary);
      break;
  }
  to_workflow(u.incident_id, u, now);
}

void Daemon::to_workflow(int64_t id, const triage::IncidentUpdate& u, Time now) {
  p_.workflow.on_update(id, u.link, u.cls, u.severity, remediation::loss_estimate(u), now, u.started_at);
}

}  // namespace medic::service
