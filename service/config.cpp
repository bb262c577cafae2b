#include "service/config.h"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "common/files.h"
#include "common/strings.h"
#include "common/url.h"
#include "fabric/loader.h"

namespace medic::service {

SettingError::SettingError(std::string flag, std::string value, std::string reason)
    : std::invalid_argument(value.empty() ? flag + " " + reason : flag + " " + value + ": " + reason),
      flag_(std::move(flag)),
      value_(std::move(value)),
      reason_(std::move(reason)) {}

namespace {

[[noreturn]] void refuse(const std::string& flag, const std::string& reason) { throw SettingError(flag, "", reason); }

// An http:// or https:// URL without its trailing slashes. A base URL (an Alertmanager's,
// medicd's own) has paths appended to it, so it takes no query or fragment.
// A URL as an error may show it: a password in it (user:password@) as ***.
std::string shown_url(const std::string& url) {
  if (url.empty()) return "\"\"";
  return escape_text(hide_url_passwords(url, "/?#", true), 200);
}

std::string http_url(const std::string& flag, const std::string& url, bool base) {
  const std::string shown = shown_url(url);
  const std::string lower = ascii_lower(url);
  const size_t scheme = lower.rfind("http://", 0) == 0 ? 7 : lower.rfind("https://", 0) == 0 ? 8 : 0;
  if (scheme == 0) throw SettingError(flag, shown, "expected an http:// or https:// URL");
  for (const char c : url) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
      throw SettingError(flag, shown, "a URL holds no spaces or control characters");
    }
  }
  const size_t host_end = std::min(url.find_first_of("/?#", scheme), url.size());
  if (host_end == scheme) throw SettingError(flag, shown, "no host");
  if (base && url.find_first_of("?#") != std::string::npos) {
    throw SettingError(flag, shown, "a base URL takes no query or fragment");
  }
  std::string out = url;
  while (out.size() > host_end && out.back() == '/') out.pop_back();
  return out;
}

void http_urls(const std::string& flag, std::vector<std::string>& urls, bool base) {
  for (size_t i = 0; i < urls.size(); ++i) {
    urls[i] = http_url(flag, urls[i], base);
    for (size_t j = 0; j < i; ++j) {
      if (urls[j] == urls[i]) throw SettingError(flag, shown_url(urls[i]), "given twice");
    }
  }
}

}  // namespace

DaemonConfig::DaemonConfig(DaemonSettings s) : s_(std::move(s)) {
  if (s_.topology_path.empty()) refuse("--topology", "is required");
  if (s_.db_url.empty()) throw std::invalid_argument("no database: pass --db URL or set MEDIC_DB_URL");
  if (s_.counter_map_path.empty()) s_.counter_map_path = data_dir() + "/counter_map.json";
  if (s_.detectors_path.empty()) s_.detectors_path = data_dir() + "/detectors.json";
  if (s_.capacity_path.empty()) s_.capacity_path = data_dir() + "/capacity.json";
  if (s_.policy_path.empty()) s_.policy_path = data_dir() + "/remediation.json";
  if (!(s_.snapshot_retention_days >= 0 && s_.snapshot_retention_days <= 3650)) {
    refuse("--snapshot-retention", "must be within [0, 3650] days");
  }
  if (s_.incident_snapshots < 0 || s_.incident_snapshots > 100000) refuse("--incident-snapshots", "must be within [0, 100000]");
  if (!(s_.poll_interval_s >= 0.05 && s_.poll_interval_s <= 3600)) refuse("--poll-interval", "must be within [0.05, 3600] seconds");
  if (!(s_.scrape_timeout_s >= 0.05 && s_.scrape_timeout_s <= 600)) refuse("--scrape-timeout", "must be within [0.05, 600] seconds");
  if (s_.scrape_concurrency < 1 || s_.scrape_concurrency > 4096) refuse("--scrape-concurrency", "must be within [1, 4096]");
  if (s_.map_workers < -1 || s_.map_workers > 64) refuse("--map-workers", "must be within [0, 64], or -1 for half the cores");
  if (s_.device_fault_links < 2 || s_.device_fault_links > 100000) refuse("--device-fault-links", "must be within [2, 100000]");
  if (!(s_.reopen_window_s >= 0 && s_.reopen_window_s <= 90 * 86400)) refuse("--reopen-window", "must be within [0, 7776000] seconds");
  if (!(s_.backoff_max_s >= s_.poll_interval_s && s_.backoff_max_s <= 3600)) refuse("--backoff-max", "must be within [poll interval, 3600] seconds");
  if (s_.run_for_s < 0) refuse("--run-for", "must not be negative");
  if (!s_.http_listen.empty() && !parse_host_port(s_.http_listen)) {
    throw SettingError("--http", s_.http_listen, "expected ADDR:PORT, e.g. 127.0.0.1:9400");
  }
  triage().validate();
  if (!(s_.probe_rate > 0 && s_.probe_rate <= 10'000'000)) refuse("--probe-rate", "must be within (0, 10000000] probes per second");
  if (!(s_.probe_round_s >= 0.1 && s_.probe_round_s <= 3600)) refuse("--probe-round", "must be within [0.1, 3600] seconds");
  if (s_.probe_per_round < 1 || s_.probe_per_round > 10000) refuse("--probe-per-round", "must be within [1, 10000]");
  if (!(s_.probe_timeout_s >= 0.01 && s_.probe_timeout_s <= 60)) refuse("--probe-timeout", "must be within [0.01, 60] seconds");
  prober().validate();
  if (!(s_.slo_refresh_s == 0 || (s_.slo_refresh_s >= 1 && s_.slo_refresh_s <= 86400))) {
    refuse("--slo-refresh", "must be 0 (off) or within [1, 86400] seconds");
  }
  if (!(s_.slo_window_days >= 1 && s_.slo_window_days <= 366)) refuse("--slo-window", "must be within [1, 366] days");
  if (!(s_.db_timeout_s >= 0.1 && s_.db_timeout_s <= 600)) refuse("--db-timeout", "must be within [0.1, 600] seconds");
  if (!(s_.db_connect_timeout_s >= 2 && s_.db_connect_timeout_s <= 600)) refuse("--db-connect-timeout", "must be within [2, 600] seconds");
  if (s_.pending_limit < 1 || s_.pending_limit > 10'000'000) refuse("--pending-limit", "must be within [1, 10000000]");
  if (s_.switch_workers < 1 || s_.switch_workers > 256) refuse("--switch-workers", "must be within [1, 256]");
  http_urls("--alertmanager", s_.alertmanager_urls, true);
  http_urls("--webhook", s_.webhook_urls, false);
  if (!s_.webhook_urls.empty() && s_.webhook_secret.empty()) {
    throw std::invalid_argument("--webhook needs a secret: pass --webhook-secret-file FILE or set MEDIC_WEBHOOK_SECRET");
  }
  if (!s_.external_url.empty()) {
    s_.external_url = http_url("--external-url", s_.external_url, true);
  } else if (!s_.http_listen.empty()) {
    s_.external_url = "http://" + s_.http_listen;
  }
  if (!(s_.alert_repeat_s >= 10 && s_.alert_repeat_s <= 3600)) refuse("--alert-repeat", "must be within [10, 3600] seconds");
  if (!(s_.notify_retry_max_s >= 1 && s_.notify_retry_max_s <= 3600)) {
    refuse("--notify-retry-max", "must be within [1, 3600] seconds");
  }
  if (!(s_.notify_timeout_s >= 0.1 && s_.notify_timeout_s <= 60)) refuse("--notify-timeout", "must be within [0.1, 60] seconds");
}

db::DbOptions DaemonConfig::db() const {
  db::DbOptions o;
  o.call_timeout_s = s_.db_timeout_s;
  o.connect_timeout_s = s_.db_connect_timeout_s;
  return o;
}

namespace {

// The credentials switches polled over SNMP need: none when no switch is; an exact error
// when some are and there are none (or they are wrong).
std::optional<telemetry::SnmpCredentials> snmp_credentials(const fabric::Topology& topo, const DaemonSettings& s) {
  size_t over_snmp = 0;
  for (const auto& d : topo.devices()) over_snmp += is_snmp_url(d.telemetry_url) ? 1 : 0;
  if (over_snmp == 0) return std::nullopt;
  auto c = s.snmp_credentials_path.empty() ? telemetry::SnmpCredentials::from_env()
                                           : telemetry::SnmpCredentials::load_file(s.snmp_credentials_path);
  if (!c.ok()) {
    if (c.kind() == ErrorKind::not_found && s.snmp_credentials_path.empty()) {
      throw std::invalid_argument(s.topology_path + ": " + std::to_string(over_snmp) +
                                  " switch(es) are polled over SNMP (snmp://), but there are no SNMP credentials: "
                                  "--snmp-credentials FILE, or MEDIC_SNMP_COMMUNITY / MEDIC_SNMP_USER");
    }
    throw std::invalid_argument(c.error());
  }
  return *c;
}

}  // namespace

LoadedFiles LoadedFiles::load(const DaemonSettings& s) {
  LoadedFiles f;
  f.topology = std::make_shared<const fabric::Topology>(fabric::load_topology_file(s.topology_path));
  f.counter_map = std::make_shared<const telemetry::CounterMap>(telemetry::CounterMap::load_file(s.counter_map_path));
  f.detectors = detectors::DetectorConfig::load_file(s.detectors_path);
  if (s.probe) {
    // The latency check needs a window that can hold the round trips it asks for.
    probes::SchedulerConfig pc;
    pc.per_round = s.probe_per_round;
    const size_t kept = pc.window_rtts();
    if (static_cast<size_t>(f.detectors.probe.latency_min_rtts) > kept) {
      throw std::invalid_argument(s.detectors_path + ": $.probe.latency_min_rtts: " +
                                  std::to_string(f.detectors.probe.latency_min_rtts) +
                                  " round trips, but the prober keeps " + std::to_string(kept) + " a link (" +
                                  std::to_string(pc.window_rounds) + " rounds of --probe-per-round " +
                                  std::to_string(s.probe_per_round) +
                                  "): no link's latency would ever be judged; lower it or raise --probe-per-round");
    }
  }
  f.capacity = remediation::CapacityConfig::load_file(s.capacity_path);
  f.policy = remediation::RemediationPolicy::load_file(s.policy_path);
  f.snmp = snmp_credentials(*f.topology, s);
  if (!s.snmp_trap_listen.empty()) {
    if (!parse_host_port(s.snmp_trap_listen)) {
      throw std::invalid_argument("--snmp-trap-listen " + quote(s.snmp_trap_listen) + ": expected ADDR:PORT");
    }
  }
  return f;
}

probes::SchedulerConfig DaemonConfig::prober() const {
  probes::SchedulerConfig c;
  c.max_rate = s_.probe_rate;
  c.round_s = s_.probe_round_s;
  c.per_round = s_.probe_per_round;
  c.timeout_s = s_.probe_timeout_s;
  c.paths_known = !s_.probe_paths_unknown;
  return c;
}

size_t DaemonConfig::map_workers() const {
  if (s_.map_workers >= 0) return static_cast<size_t>(s_.map_workers);
  return std::clamp<size_t>(std::thread::hardware_concurrency() / 2, 1, 8);
}

triage::TriageConfig DaemonConfig::triage() const {
  triage::TriageConfig t;
  t.device_fault_links = s_.device_fault_links;
  t.reopen_window = from_seconds(s_.reopen_window_s);
  return t;
}

}  // namespace medic::service
