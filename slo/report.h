// The SLO compliance report a reliability lead brings to a weekly review (issue 14): per SLO
// (class x stage [x group]) what was decided, met, missed and pending in a window, the error
// budget, burn rates, stage-time quantiles, every breach and where its time went, the
// capacity drains cost, repeat offenders and a weekly trend. Pure: the rows come in one at a
// time (streamed from the database, never all loaded), time is passed in. All times UTC.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/sketch.h"
#include "common/time.h"
#include "slo/compliance.h"

namespace medic::slo {

// The trailing windows a burn rate is measured over, ending at the window's end: the
// report's three (medicd's /metrics adds 5m and 30m for multi-window alerts).
using BurnWindows = std::vector<std::pair<std::string, int64_t>>;  // name, seconds
inline const BurnWindows kReportBurnWindows = {{"1h", 3600}, {"6h", 6 * 3600}, {"3d", 3 * 86400}};

// What a report is asked for: the CLI's flags and the API's query parameters alike.
struct ReportQuery {
  Window window;
  BurnWindows burn_windows = kReportBurnWindows;
  std::string incident_class;  // "": every class
  std::string by;              // "", "zone", "plane" or "role"
  std::string label;           // how the window was asked for ("7d", "2026-10", "from ... to ...")
};

// Builds a query from named parameters: from + to | window (Nd or Nh, e.g. 7d, 28d, 90d) |
// month (YYYY-MM); class; by. Nothing given: the 7 days ending `now`. Exact errors naming the
// parameter (`flag_prefix` is "--" for the CLI, "" for the API).
Result<ReportQuery> parse_report_query(const std::map<std::string, std::string>& params, Time now,
                                       const std::string& flag_prefix = "");

// One incident as the report reads it: its stage times and groups, and for breaches and
// capacity, where it is.
struct ReportIncident : StageTimes {
  std::string link, device;
  std::string suspect_port;    // the suspect end ("dev:port"): an optic; may be ""
  std::string suspect_device;  // the suspect device, else the incident's device; may be ""
  bool suspect_is_switch = false;
  double speed_gbps = 0;  // its link's speed (0: no link)
};

// Stage times in seconds: exact up to kExact values (nearest-rank quantiles), then in a
// sketch within 1% (bounded memory however many incidents a window holds).
class StageTimeDist {
 public:
  static constexpr size_t kExact = 4096;
  void add(double seconds);
  std::optional<double> quantile(double q) const;
  std::optional<double> max() const;
  size_t count() const { return count_; }
  bool exact() const { return !sketch_; }

 private:
  mutable std::vector<double> exact_;
  mutable bool sorted_ = true;
  std::optional<QuantileSketch> sketch_;
  size_t count_ = 0;
};

struct SloLine {
  std::string incident_class;
  Stage stage = Stage::detect;
  std::string group;     // with --by: the zone, plane or role ("-": the incident has none)
  Duration target{};     // in force at the window's end
  double objective = 0;  // in force at the window's end
  int met = 0, missed = 0, pending = 0;
  double allowed_misses = 0;  // sum over decided stages of (1 - the objective each was judged by)
  Compliance compliance() const;
  std::map<std::string, double> burn;  // "1h", "6h", "3d"
  StageTimeDist seconds;               // finished stages decided in the window
  std::vector<int64_t> breaches;       // incident ids that missed
  std::vector<int> missed_by_bucket;   // misses per burn-down bucket
  // For the trailing windows: met and missed (and the budget they allow).
  struct Tally {
    int met = 0, missed = 0;
    double allowed = 0;
  };
  std::map<std::string, Tally> trailing;
};

// Where a breached stage's time went, by what the incident waited for.
struct TimeShare {
  std::string what;  // detection, triage, approval, capacity, breaker, rate limit, repair, validation, escalated, other
  Duration time{};
};

struct Breach {
  int64_t incident_id = 0;
  std::string incident_class, where, group;
  Stage stage = Stage::detect;
  Time began{};
  std::optional<Time> finished;
  Time decided_at{};
  Duration target{}, elapsed{}, late{};
  std::vector<TimeShare> time_went;
};

// One line of an incident's state history.
struct StateEvent {
  Time at{};
  std::string state, note;
};

// Splits [begin, end) by the state the incident was in (events sorted by time; before the
// first event: detection). Shares of zero length are left out; sorted by time spent.
std::vector<TimeShare> where_time_went(const std::vector<StateEvent>& events, Time begin, Time end);

struct CapacityRow {
  std::string key;  // the zone or plane ("-": none)
  int drains = 0;
  double link_hours = 0, tbps_hours = 0;
};
struct LowestHeadroom {
  std::string group;
  double headroom = 0;  // in-service fraction minus floor
  double fraction = 0, floor = 0;
  Time at{};
  int64_t snapshot_id = 0, incident_id = 0;
};
struct CapacityCost {
  int drains = 0;
  double link_hours = 0, tbps_hours = 0;
  std::vector<CapacityRow> by_zone, by_plane;
  std::optional<LowestHeadroom> lowest;
};

struct Offender {
  std::string kind;  // link, optic, switch, device
  std::string name;
  int count = 0;
  std::vector<int64_t> incidents;  // filled by the caller (db::SloStore) for the listed ones
};

struct Week {
  std::string iso;  // 2026-W45
  Time from{}, to{};  // clipped to the window
  int met = 0, missed = 0;
  double allowed = 0;
  double compliance() const { return met + missed == 0 ? 1.0 : static_cast<double>(met) / (met + missed); }
  // The objective the week's decided stages had on average (1 - allowed / decided).
  double objective() const { return met + missed == 0 ? 0.0 : 1.0 - allowed / (met + missed); }
};

struct Report {
  ReportQuery query;
  Time generated_at{};
  size_t incidents_read = 0;
  std::vector<SloLine> slos;
  std::vector<Breach> breaches;  // by how late, latest first
  CapacityCost capacity;
  std::vector<Offender> offenders;
  size_t offenders_left_off = 0;  // beyond the most-repeated kMaxOffenders
  std::vector<Week> trend;
  Duration bucket{};               // burn-down bucket width
  std::vector<Time> bucket_starts;  // the burn-down buckets

  static constexpr size_t kMaxOffenders = 100;
  static constexpr size_t kMaxBuckets = 120;
};

// ISO 8601 week of a UTC time ("2026-W45") and the Monday 00:00 UTC that starts it.
std::string iso_week(Time t);
Time iso_week_start(Time t);

// Accumulates incidents into a report. Feed every incident that may decide or hold a stage
// pending in scan_window() (more is harmless), then finish().
class ReportBuilder {
 public:
  ReportBuilder(ReportQuery query, std::vector<TargetVersion> targets, Time now);
  // The incidents to feed: any whose stages may be decided in, or pending at the end of,
  // this window (the report's window widened to cover the trailing burn-rate windows).
  Window scan_window() const { return scan_; }
  void add(const ReportIncident& inc);
  // Breaches still need their time_went (from the incidents' histories) and capacity its
  // lowest headroom; offenders come from the database. finish() sorts and fills the rest.
  Report finish();

 private:
  SloLine& line(const std::string& cls, Stage stage, const std::string& group);
  size_t bucket_of(Time t) const;
  const std::vector<TargetVersion>& versions(const ReportIncident& inc, Stage stage);

  Report r_;
  std::vector<TargetVersion> targets_;
  Window scan_{};
  std::map<std::tuple<std::string, int, std::string>, size_t> index_;
  std::map<std::string, CapacityRow> zones_, planes_;
  // Per class: its stages' versions when no scoped target names the class (the usual case),
  // worked out once; and per class and group, the index of each stage's line (-1: none yet).
  struct ClassVersions {
    bool scoped = false;
    std::vector<TargetVersion> stages[4];
  };
  std::unordered_map<std::string, ClassVersions> class_versions_;
  std::vector<TargetVersion> scratch_;
  std::unordered_map<std::string, std::array<int, 4>> line_index_;
  std::string line_key_;
  // Incidents detected in the window per link, optic and switch or device (their names
  // never collide: "a:p--b:q", "a:p", "a"): bounded by the fabric's size, not by the number
  // of incidents.
  struct Tally {
    int count = 0;
    uint8_t kind = 0;  // 0 link, 1 optic, 2 switch, 3 device
  };
  std::unordered_map<std::string, Tally> offenders_;
};

}  // namespace medic::slo
