// Every detector's thresholds in one immutable object, read from data/detectors.json (or
// the operator's own file) and validated in full: a bad value stops start-up with the file,
// the JSON path and the problem.
#pragma once

#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

#include "common/time.h"

namespace medic::detectors {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Link-event damping as switch operating systems do it: every flap adds a penalty, the
// penalty halves every half-life, the link is suppressed (acted on) once the penalty reaches
// `suppress` and may return to service only after it has decayed below `reuse`.
struct FlapConfig {
  double penalty_per_flap = 1000;
  Duration half_life = std::chrono::seconds(60);
  double suppress = 2500;
  double reuse = 800;
  double max_penalty = 8000;                    // ceiling: bounds how long suppression lasts
  Duration down_hold = std::chrono::seconds(30);  // down this long: link_down, not a flap
  // A flap an SNMP linkDown notification reported counts at once, but only until the polls
  // of this long after it have had the chance to confirm it; unconfirmed, it is taken back.
  Duration trap_confirm = std::chrono::seconds(30);

  void validate() const;  // throws ConfigError
};

// Thresholds of one reading: below warn_low is a warning, below alarm_low an alarm, and
// likewise above the high ones. Absent thresholds are +/- infinity.
struct Band {
  double alarm_low = -std::numeric_limits<double>::infinity();
  double warn_low = -std::numeric_limits<double>::infinity();
  double warn_high = std::numeric_limits<double>::infinity();
  double alarm_high = std::numeric_limits<double>::infinity();
};

struct OpticType {
  std::string name;
  Band rx_power_dbm;
  Band tx_power_dbm;
  Band temperature_c;
  Band laser_bias_ma;
  double max_link_loss_db = 3.0;  // one end's transmit minus the other end's receive
};

struct OpticsConfig {
  std::map<std::string, OpticType, std::less<>> types;
  std::string default_type;           // for links whose topology names no optic
  double hysteresis_db = 0.5;         // a level clears only this far back inside its band
  double drift_db = 2.0;              // recent receive power this far below its baseline
  Duration drift_baseline = std::chrono::hours(6);   // time constant of the baseline
  Duration drift_recent = std::chrono::minutes(5);   // time constant of the recent level
  Duration drift_min_history = std::chrono::minutes(30);

  const OpticType* type_for(std::string_view optic) const;
};

// Corruption as a loss rate over frames received, in the bands of datacenter corruption
// studies: >= 1e-8 is corrupting; 1e-5, 1e-4 and 1e-3 mark the worse bands.
struct CorruptionConfig {
  Duration window = std::chrono::seconds(60);
  double corrupting = 1e-8;  // warning from here
  double critical = 1e-5;    // critical (drain) from here
  double min_errors = 3;     // fewer errors in the window are noise, whatever the rate
  double discard_rate = 1e-6;           // discards per packet worth reporting
  double congestion_utilization = 0.6;  // discards at this load or with load are congestion
};

// Forward error correction: the pre-FEC bit error rate against the code's limit (KP4
// RS(544,514) corrects up to a pre-FEC BER of about 2.4e-4); any uncorrectable codeword
// means frames were lost.
struct FecConfig {
  Duration window = std::chrono::seconds(60);
  double warning_ber = 1e-5;
  double limit_ber = 2.4e-4;
};

// Pause frames: a host port that keeps pausing its ToR is a slow receiver (host memory or
// PCIe pressure), never a bad link; switches pausing each other for long is a PFC storm.
struct PfcConfig {
  double pause_rate = 500;  // pause frames per second that count as pausing
  Duration sustain = std::chrono::seconds(30);
};

// Active probes: localized loss and latency far above the fabric's own.
struct ProbeConfig {
  double critical_loss = 0.01;   // a link losing this share of probes is critical (drained)
  double min_confidence = 0.5;   // localization verdicts below this are not reported
  double latency_factor = 4.0;   // a link's fastest RTT this many times the fabric's median of them ...
  Duration latency_floor = std::chrono::microseconds(500);  // ... and at least this much above it
  // A link's latency (its fastest round trip) is judged only on at least this many round
  // trips in the window: a busy reflector or prober host holds a share of answers (fabsim at
  // zone32k, about 70% of them), and the fastest of a few is late by chance on many links; of
  // 40, at 70% late, on 6e-7 of them.
  int latency_min_rtts = 40;
  int clear_rounds = 3;          // rounds without a verdict before a link may be reported again
  // Rounds in a row a reflector must be named, or a link's fastest round trip be over the
  // latency threshold, before it is reported: one round's few lost probes (a busy host, a lossy link
  // under most of its sessions) are not a reflector fault, one slow round not a slow link.
  int confirm_rounds = 3;
  // A probe round in which at least this share of one prober's sessions (and at least
  // outage_min_sessions) lost probes is the measurement's outage (probes::SchedulerConfig).
  double outage_share = 0.5;
  int outage_min_sessions = 4;
};

struct StaleConfig {
  Duration after = std::chrono::seconds(30);  // no answer for this long: telemetry_stale
  // A poll in which at least this share of the devices asked (and at least
  // outage_min_devices of them) did not answer is the collector's outage, not theirs:
  // no device is judged stale for it, and one telemetry_outage finding is made once it
  // lasts `after`.
  double outage_share = 0.5;
  int outage_min_devices = 3;
};

// Whether one poll's answers are a telemetry outage (see StaleConfig).
bool telemetry_outage(size_t asked, size_t failed, const StaleConfig& c);

struct DetectorConfig {
  FlapConfig flap;
  OpticsConfig optics;
  CorruptionConfig corruption;
  FecConfig fec;
  PfcConfig pfc;
  StaleConfig stale;
  ProbeConfig probe;

  // Throws ConfigError "FILE: $.path: problem".
  static DetectorConfig load_file(const std::string& path);
  static DetectorConfig parse(std::string_view text, const std::string& source);
  void validate(const std::string& source = "config") const;
};

}  // namespace medic::detectors
