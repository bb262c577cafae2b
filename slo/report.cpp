#include "slo/report.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "common/strings.h"

namespace medic::slo {

namespace {

constexpr int64_t kDayUs = 86'400'000'000;
constexpr int64_t kMaxDays = 3660;  // the longest window a report covers (ten years)
using std::chrono::sys_days;

sys_days day_of(Time t) {
  const int64_t us = t.time_since_epoch().count();
  const int64_t d = us >= 0 ? us / kDayUs : -((-us + kDayUs - 1) / kDayUs);
  return sys_days(std::chrono::days(d));
}

Time time_of(sys_days d) { return Time(Duration(static_cast<int64_t>(d.time_since_epoch().count()) * kDayUs)); }

// "7d" or "36h" as a positive duration of at most kMaxDays.
std::optional<Duration> parse_span(const std::string& s) {
  if (s.size() < 2) return std::nullopt;
  const char unit = s.back();
  if (unit != 'd' && unit != 'h') return std::nullopt;
  int64_t n = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size() - 1, n);
  if (ec != std::errc() || p != s.data() + s.size() - 1 || n <= 0 || n > kMaxDays * 24) return std::nullopt;
  const int64_t hours = unit == 'd' ? n * 24 : n;
  if (hours > kMaxDays * 24) return std::nullopt;
  return Duration(std::chrono::hours(hours));
}

}  // namespace

Result<ReportQuery> parse_report_query(const std::map<std::string, std::string>& params, Time now,
                                       const std::string& flag_prefix) {
  const auto name = [&](const char* n) { return flag_prefix + n; };
  for (const auto& [k, v] : params) {
    if (k != "from" && k != "to" && k != "window" && k != "month" && k != "class" && k != "by") {
      return Error::invalid("unknown report parameter " + quote(name(k.c_str())) +
                            " (from, to, window, month, class, by)");
    }
  }
  const auto get = [&](const char* k) -> std::optional<std::string> {
    const auto it = params.find(k);
    return it == params.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  ReportQuery q;
  const auto from = get("from"), to = get("to"), window = get("window"), month = get("month");
  const int ways = (from || to ? 1 : 0) + (window ? 1 : 0) + (month ? 1 : 0);
  if (ways > 1) {
    return Error::invalid("give one of " + name("from") + "/" + name("to") + ", " + name("window") + " or " +
                          name("month") + ", not several");
  }
  if (from || to) {
    if (!from || !to) return Error::invalid(name("from") + " and " + name("to") + " go together");
    const auto f = parse_time_arg(*from, now), t = parse_time_arg(*to, now);
    if (!f) return Error::invalid(name("from") + ": not a time: " + quote(*from) + " (now, -7d, 2026-11-01, RFC 3339, unix seconds)");
    if (!t) return Error::invalid(name("to") + ": not a time: " + quote(*to) + " (now, -7d, 2026-11-01, RFC 3339, unix seconds)");
    if (!(*f < *t)) return Error::invalid(name("from") + " must be before " + name("to") + " (the window is [from, to))");
    if (*t - *f > Duration(kMaxDays * kDayUs)) {
      return Error::invalid(name("from") + " to " + name("to") + " spans more than " + std::to_string(kMaxDays) +
                            " days, the longest window a report covers");
    }
    q.window = {*f, *t};
    q.label = format_iso8601(*f) + " to " + format_iso8601(*t);
  } else if (month) {
    int y = 0;
    unsigned m = 0;
    const std::string& s = *month;
    const bool shaped = s.size() == 7 && s[4] == '-' &&
                        std::from_chars(s.data(), s.data() + 4, y).ptr == s.data() + 4 &&
                        std::from_chars(s.data() + 5, s.data() + 7, m).ptr == s.data() + 7;
    if (!shaped || y < 1970 || y > 9999 || m < 1 || m > 12) {
      return Error::invalid(name("month") + ": not a month: " + quote(s) + " (YYYY-MM, e.g. 2026-10)");
    }
    const std::chrono::year_month first{std::chrono::year(y), std::chrono::month(m)};
    q.window = {time_of(sys_days(first / 1)), time_of(sys_days((first + std::chrono::months(1)) / 1))};
    q.label = s;
  } else {
    const std::string w = window.value_or("7d");
    const auto span = parse_span(w);
    if (!span) return Error::invalid(name("window") + ": not a window: " + quote(w) + " (7d, 28d, 90d, or N d / N h)");
    q.window = {now - *span, now};
    q.label = w + " ending " + format_iso8601(now);
  }
  if (const auto c = get("class")) {
    if (c->empty()) return Error::invalid(name("class") + ": empty");
    q.incident_class = *c;
  }
  if (const auto b = get("by")) {
    if (*b != "zone" && *b != "plane" && *b != "role") {
      return Error::invalid(name("by") + ": " + quote(*b) + " is not one of zone, plane, role");
    }
    q.by = *b;
  }
  return q;
}

void StageTimeDist::add(double s) {
  ++count_;
  if (!sketch_ && exact_.size() < kExact) {
    exact_.push_back(s);
    sorted_ = false;
    return;
  }
  if (!sketch_) {
    sketch_.emplace(0.01);
    for (const double v : exact_) sketch_->add(v);
    exact_.clear();
    exact_.shrink_to_fit();
  }
  sketch_->add(s);
}

std::optional<double> StageTimeDist::quantile(double q) const {
  if (sketch_) return sketch_->quantile(q);
  if (exact_.empty()) return std::nullopt;
  if (!sorted_) {
    std::sort(exact_.begin(), exact_.end());
    sorted_ = true;
  }
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(exact_.size())));
  return exact_[std::min(exact_.size() - 1, rank == 0 ? 0 : rank - 1)];
}

std::optional<double> StageTimeDist::max() const {
  if (sketch_) return sketch_->count() ? std::optional<double>(sketch_->max()) : std::nullopt;
  if (exact_.empty()) return std::nullopt;
  return *std::max_element(exact_.begin(), exact_.end());
}

Compliance SloLine::compliance() const {
  const int decided = met + missed;
  // The objective the decided stages had on average: exactly this line's when the target
  // did not change in the window.
  const double objective_avg = decided == 0 ? objective : 1.0 - allowed_misses / decided;
  return slo::compliance(met, missed, pending, objective_avg);
}

std::vector<TimeShare> where_time_went(const std::vector<StateEvent>& events, Time begin, Time end) {
  std::map<std::string, Duration> by;
  auto bucket = [](const StateEvent* e) -> std::string {
    if (e == nullptr) return "detection";
    const std::string& s = e->state;
    if (s == "detected" || s == "triaged") return "triage";
    if (s == "pending_approval") {
      return e->note.rfind("circuit breaker", 0) == 0 || e->note.rfind("blast radius", 0) == 0 ? "breaker" : "approval";
    }
    if (s == "blocked") return e->note.rfind("rate limit", 0) == 0 ? "rate limit" : "capacity";
    if (s == "mitigated" || s == "repair_requested") return "repair";
    if (s == "repaired" || s == "validating" || s == "validated") return "validation";
    if (s == "escalated") return "escalated";
    return "other";
  };
  // States only: annotations such as 'corroborated' do not change what it waits for.
  std::vector<const StateEvent*> states;
  for (const auto& e : events) {
    if (e.state != "corroborated") states.push_back(&e);
  }
  const StateEvent* current = nullptr;
  Time from = begin;
  auto spend = [&](Time until) {
    const Time a = std::max(from, begin), b = std::min(until, end);
    if (b > a) by[bucket(current)] += b - a;
  };
  for (const StateEvent* e : states) {
    spend(e->at);
    current = e;
    from = e->at;
  }
  spend(end);
  std::vector<TimeShare> out;
  for (auto& [what, d] : by) out.push_back({what, d});
  std::stable_sort(out.begin(), out.end(), [](const TimeShare& a, const TimeShare& b) { return a.time > b.time; });
  return out;
}

Time iso_week_start(Time t) {
  const sys_days d = day_of(t);
  const std::chrono::weekday wd{d};
  return time_of(d - (wd - std::chrono::Monday));
}

std::string iso_week(Time t) {
  // The ISO year is the year of the week's Thursday; week 1 holds the year's first Thursday.
  const sys_days thursday = day_of(iso_week_start(t)) + std::chrono::days(3);
  const std::chrono::year_month_day ymd{thursday};
  const sys_days jan1 = sys_days(ymd.year() / std::chrono::January / 1);
  const int week = static_cast<int>((thursday - jan1).count() / 7) + 1;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d-W%02d", static_cast<int>(ymd.year()), week);
  return buf;
}

ReportBuilder::ReportBuilder(ReportQuery query, std::vector<TargetVersion> targets, Time now)
    : targets_(std::move(targets)) {
  r_.query = std::move(query);
  r_.generated_at = now;
  const Window& w = r_.query.window;
  Time scan_from = w.from;
  for (const auto& [name, secs] : r_.query.burn_windows) scan_from = std::min(scan_from, w.to - from_seconds(static_cast<double>(secs)));
  scan_ = {scan_from, w.to};
  // Burn-down buckets: days, or wider so that there are at most kMaxBuckets.
  const int64_t days = std::max<int64_t>(1, (w.to - w.from + Duration(kDayUs - 1)).count() / kDayUs);
  const int64_t per = (days + static_cast<int64_t>(Report::kMaxBuckets) - 1) / static_cast<int64_t>(Report::kMaxBuckets);
  r_.bucket = Duration(per * kDayUs);
  for (Time t = w.from; t < w.to; t += r_.bucket) r_.bucket_starts.push_back(t);
  // Weeks: every ISO week the window touches, clipped to it.
  for (Time s = iso_week_start(w.from); s < w.to; s += Duration(7 * kDayUs)) {
    Week wk;
    wk.iso = iso_week(s);
    wk.from = std::max(s, w.from);
    wk.to = std::min(s + Duration(7 * kDayUs), w.to);
    r_.trend.push_back(std::move(wk));
  }
  // Without --by, one line per class and stage any target covers (an SLO nothing happened
  // to is part of the review too).
  if (r_.query.by.empty()) {
    for (const auto& v : targets_) {
      if (!r_.query.incident_class.empty() && v.incident_class != r_.query.incident_class) continue;
      line(v.incident_class, v.stage, "");
    }
  }
}

size_t ReportBuilder::bucket_of(Time t) const {
  const auto i = static_cast<size_t>((t - r_.query.window.from).count() / r_.bucket.count());
  return std::min(i, r_.bucket_starts.size() - 1);
}

SloLine& ReportBuilder::line(const std::string& cls, Stage stage, const std::string& group) {
  const auto key = std::make_tuple(cls, static_cast<int>(stage), group);
  if (const auto it = index_.find(key); it != index_.end()) return r_.slos[it->second];
  SloLine l;
  l.incident_class = cls;
  l.stage = stage;
  l.group = group;
  // The target in force at the window's end (the group's own when it has one).
  StageTimes probe;
  probe.incident_class = cls;
  if (!r_.query.by.empty()) probe.groups[r_.query.by] = group;
  const auto vs = versions_for(targets_, probe, stage);
  if (const TargetVersion* v = in_force(vs, r_.query.window.to - Duration(1))) {
    l.target = v->target;
    l.objective = v->objective;
  }
  l.missed_by_bucket.assign(r_.bucket_starts.size(), 0);
  for (const auto& [name, secs] : r_.query.burn_windows) l.trailing[name];
  index_.emplace(key, r_.slos.size());
  r_.slos.push_back(std::move(l));
  return r_.slos.back();
}

const std::vector<TargetVersion>& ReportBuilder::versions(const ReportIncident& inc, Stage stage) {
  auto it = class_versions_.find(inc.incident_class);
  if (it == class_versions_.end()) {
    ClassVersions cv;
    for (const auto& v : targets_) cv.scoped = cv.scoped || (v.incident_class == inc.incident_class && !v.scope_kind.empty());
    if (!cv.scoped) {
      for (const Stage st : kStages) cv.stages[static_cast<int>(st)] = versions_for(targets_, inc, st);
    }
    it = class_versions_.emplace(inc.incident_class, std::move(cv)).first;
  }
  if (!it->second.scoped) return it->second.stages[static_cast<int>(stage)];
  scratch_ = versions_for(targets_, inc, stage);  // scoped: they depend on the incident's groups
  return scratch_;
}

void ReportBuilder::add(const ReportIncident& inc) {
  if (!r_.query.incident_class.empty() && inc.incident_class != r_.query.incident_class) return;
  ++r_.incidents_read;
  const Window& w = r_.query.window;
  std::string group;
  if (!r_.query.by.empty()) {
    const auto g = inc.groups.find(r_.query.by);
    group = g == inc.groups.end() || g->second.empty() ? "-" : g->second;
  }
  if (inc.detected_at && w.contains(*inc.detected_at)) {
    if (offenders_.empty()) offenders_.reserve(1 << 16);
    auto count = [&](uint8_t kind, const std::string& name) {
      if (name.empty()) return;
      auto [it, fresh] = offenders_.try_emplace(name);
      it->second.count += 1;
      if (fresh) it->second.kind = kind;
    };
    count(0, inc.link);
    count(1, inc.suspect_port);
    count(inc.suspect_is_switch ? 2 : 3, inc.suspect_device);
  }
  line_key_.assign(inc.incident_class);
  line_key_ += '\n';
  line_key_ += group;
  auto lines = line_index_.find(line_key_);
  if (lines == line_index_.end()) lines = line_index_.emplace(line_key_, std::array<int, 4>{-1, -1, -1, -1}).first;
  auto line_of = [&](Stage stage) -> SloLine& {
    int& k = lines->second[static_cast<int>(stage)];
    if (k < 0) {
      SloLine& l = line(inc.incident_class, stage, group);
      k = static_cast<int>(&l - r_.slos.data());
    }
    return r_.slos[static_cast<size_t>(k)];
  };
  const int64_t week_us = 7 * kDayUs;
  const Time first_week = iso_week_start(w.from);
  const std::optional<Time> ended = inc.ended_at();
  for (const Stage stage : kStages) {
    const auto& vs = versions(inc, stage);
    if (vs.empty()) continue;
    const StageOutcome o = judge_in_window(inc, stage, vs, w);
    if (o.decision == Decision::met || o.decision == Decision::missed || o.decision == Decision::pending) {
      SloLine& l = line_of(stage);
      if (o.decision == Decision::pending) {
        ++l.pending;
      } else {
        const bool met = o.decision == Decision::met;
        (met ? l.met : l.missed) += 1;
        l.allowed_misses += 1.0 - o.objective;
        const auto [begin, finish] = stage_bounds(inc, stage);
        if (finish) l.seconds.add(seconds(*finish - *begin));
        const int64_t wk = (iso_week_start(*o.decided_at) - first_week).count() / week_us;
        if (wk >= 0 && static_cast<size_t>(wk) < r_.trend.size()) {
          Week& week = r_.trend[static_cast<size_t>(wk)];
          (met ? week.met : week.missed) += 1;
          week.allowed += 1.0 - o.objective;
        }
        if (!met) {
          ++l.missed_by_bucket[bucket_of(*o.decided_at)];
          l.breaches.push_back(inc.id);
          Breach b;
          b.incident_id = inc.id;
          b.incident_class = inc.incident_class;
          b.where = !inc.link.empty() ? inc.link : inc.device;
          b.group = group;
          b.stage = stage;
          b.began = *begin;
          b.finished = finish;
          b.decided_at = *o.decided_at;
          b.target = o.target;
          b.elapsed = o.elapsed;
          b.late = o.late;
          r_.breaches.push_back(std::move(b));
        }
      }
    }
    // The trailing windows of the burn rates. A stage is decided no later than it finished
    // and than its incident ended: one over before a trailing window decides nothing in it.
    const auto [sbegin, sfinish] = stage_bounds(inc, stage);
    for (const auto& [name, secs] : r_.query.burn_windows) {
      const Window tw{w.to - from_seconds(static_cast<double>(secs)), w.to};
      if (!sbegin || (sfinish && *sfinish < tw.from) || (ended && *ended < tw.from)) continue;
      const StageOutcome t = judge_in_window(inc, stage, vs, tw);
      if (t.decision != Decision::met && t.decision != Decision::missed) continue;
      SloLine::Tally& tally = line_of(stage).trailing[name];
      (t.decision == Decision::met ? tally.met : tally.missed) += 1;
      tally.allowed += 1.0 - t.objective;
    }
  }
  // Capacity: the link out of service from its drain until its undrain (or, with none, until
  // the incident ended or the window's end), clipped to the window.
  if (!inc.link.empty() && inc.mitigated_at) {
    Time until = inc.undrained_at ? *inc.undrained_at : inc.ended_at().value_or(w.to);
    const Time a = std::max(*inc.mitigated_at, w.from), b = std::min(until, w.to);
    if (b > a) {
      const double hours = seconds(b - a) / 3600.0;
      const double tbps_hours = hours * inc.speed_gbps / 1000.0;
      r_.capacity.drains += 1;
      r_.capacity.link_hours += hours;
      r_.capacity.tbps_hours += tbps_hours;
      auto add_to = [&](std::map<std::string, CapacityRow>& m, const char* kind) {
        const auto g = inc.groups.find(kind);
        const std::string key = g == inc.groups.end() || g->second.empty() ? "-" : g->second;
        CapacityRow& row = m[key];
        row.key = key;
        row.drains += 1;
        row.link_hours += hours;
        row.tbps_hours += tbps_hours;
      };
      add_to(zones_, "zone");
      add_to(planes_, "plane");
    }
  }
}

Report ReportBuilder::finish() {
  for (SloLine& l : r_.slos) {
    for (const auto& [name, tally] : l.trailing) {
      const int decided = tally.met + tally.missed;
      l.burn[name] = decided == 0 ? 0.0 : burn_rate(tally.met, tally.missed, 1.0 - tally.allowed / decided);
    }
    std::sort(l.breaches.begin(), l.breaches.end());
  }
  std::stable_sort(r_.slos.begin(), r_.slos.end(), [](const SloLine& a, const SloLine& b) {
    return std::tie(a.incident_class, a.stage, a.group) < std::tie(b.incident_class, b.stage, b.group);
  });
  std::stable_sort(r_.breaches.begin(), r_.breaches.end(), [](const Breach& a, const Breach& b) {
    return a.late != b.late ? a.late > b.late : a.incident_id < b.incident_id;
  });
  // Repeat offenders: two or more incidents, the most repeated first.
  static const char* const kKinds[] = {"link", "optic", "switch", "device"};
  std::vector<Offender> rep;
  for (const auto& [name, t] : offenders_) {
    if (t.count >= 2) rep.push_back(Offender{kKinds[t.kind], name, t.count, {}});
  }
  offenders_ = {};
  std::sort(rep.begin(), rep.end(), [](const Offender& a, const Offender& b) {
    return std::tie(b.count, a.kind, a.name) < std::tie(a.count, b.kind, b.name);
  });
  if (rep.size() > Report::kMaxOffenders) {
    r_.offenders_left_off = rep.size() - Report::kMaxOffenders;
    rep.resize(Report::kMaxOffenders);
  }
  r_.offenders = std::move(rep);
  for (auto& [k, row] : zones_) r_.capacity.by_zone.push_back(row);
  for (auto& [k, row] : planes_) r_.capacity.by_plane.push_back(row);
  return std::move(r_);
}

}  // namespace medic::slo
