#include "slo/render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "common/strings.h"

namespace medic::slo {

using nlohmann::json;

namespace {

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string num(double v, int decimals = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string pct(double share) { return std::isfinite(share) ? num(100 * share, 2) + "%" : "-"; }

std::string dur(std::optional<double> s) { return s ? format_duration(from_seconds(*s)) : "-"; }

std::string slo_name(const SloLine& l) {
  return l.incident_class + " " + std::string(to_string(l.stage)) + (l.group.empty() ? "" : " [" + l.group + "]");
}

std::string budget_text(const SloLine& l) {
  const auto rem = budget_remaining(l);
  return rem ? pct(*rem) : "none allowed";
}

std::string time_went_text(const Breach& b) {
  std::string s;
  for (const auto& t : b.time_went) {
    if (!s.empty()) s += ", ";
    s += t.what + " " + format_duration(t.time);
  }
  return s.empty() ? "-" : s;
}

// Remaining share of the budget after each burn-down bucket.
std::vector<double> burn_down(const SloLine& l) {
  std::vector<double> out;
  int missed = 0;
  for (const int m : l.missed_by_bucket) {
    missed += m;
    out.push_back(l.allowed_misses > 0 ? 1.0 - missed / l.allowed_misses : (missed > 0 ? -1.0 : 1.0));
  }
  return out;
}

// ---- SVG charts ---------------------------------------------------------------------

constexpr int kW = 680;  // drawing width in SVG units (fits 180 mm of A4 when scaled)

std::string svg_open(int h, const std::string& title) {
  return "<svg class=\"chart\" viewBox=\"0 0 " + std::to_string(kW) + " " + std::to_string(h) +
         "\" role=\"img\" aria-label=\"" + esc(title) + "\" xmlns=\"http://www.w3.org/2000/svg\"><title>" + esc(title) +
         "</title>";
}

std::string text(double x, double y, const std::string& s, const std::string& cls = "", const char* anchor = "start") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" + anchor + "\"" +
         (cls.empty() ? "" : " class=\"" + cls + "\"") + ">" + esc(s) + "</text>";
}

std::string line(double x1, double y1, double x2, double y2, const std::string& cls) {
  return "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) + "\" class=\"" +
         cls + "\"/>";
}

// Compliance per ISO week (bars) against the objective those weeks' stages had (ticks).
std::string chart_weekly(const Report& r) {
  const int h = 220, left = 48, right = 12, top = 14, bottom = 40;
  const double pw = kW - left - right, ph = h - top - bottom;
  // The scale starts low enough to show the lowest bar and objective.
  double lo = 0.9;
  for (const Week& w : r.trend) {
    if (w.met + w.missed == 0) continue;
    lo = std::min({lo, w.compliance(), w.objective()});
  }
  lo = std::max(0.0, std::floor(lo * 10 - 1e-9) / 10);
  auto y = [&](double v) { return top + ph * (1 - (v - lo) / (1 - lo)); };
  std::string s = svg_open(h, "Compliance per ISO week against the objective");
  for (int i = 0; i <= 4; ++i) {
    const double v = lo + (1 - lo) * i / 4;
    s += line(left, y(v), kW - right, y(v), "grid");
    s += text(left - 4, y(v) + 4, num(100 * v, 0) + "%", "axis", "end");
  }
  const size_t n = std::max<size_t>(1, r.trend.size());
  const double slot = pw / static_cast<double>(n), bw = std::min(48.0, slot * 0.6);
  for (size_t i = 0; i < r.trend.size(); ++i) {
    const Week& w = r.trend[i];
    const double cx = left + slot * (static_cast<double>(i) + 0.5);
    if (w.met + w.missed == 0) {
      s += text(cx, y(lo) - 6, "none decided", "axis muted", "middle");
    } else {
      const double c = w.compliance(), o = w.objective();
      s += "<rect x=\"" + num(cx - bw / 2) + "\" y=\"" + num(y(c)) + "\" width=\"" + num(bw) + "\" height=\"" +
           num(std::max(0.5, y(lo) - y(c))) + "\" class=\"" + (c + 1e-12 >= o ? "bar ok" : "bar bad") + "\"><title>" +
           esc(w.iso + ": " + pct(c) + " of " + std::to_string(w.met + w.missed) + " (objective " + pct(o) + ")") +
           "</title></rect>";
      s += line(cx - bw / 2 - 4, y(o), cx + bw / 2 + 4, y(o), "objective");
      s += text(cx, y(c) - 4, pct(c), "value", "middle");
    }
    s += text(cx, h - bottom + 16, w.iso, "axis", "middle");
    s += text(cx, h - bottom + 30, std::to_string(w.met + w.missed) + " decided", "axis muted", "middle");
  }
  return s + "</svg>";
}

// Stage times per SLO on a log scale: p50-p90 box, whisker to p99, dot at the maximum, and
// the target as a red tick.
std::string chart_stage_times(const Report& r) {
  std::vector<const SloLine*> rows;
  for (const auto& l : r.slos) {
    if (l.seconds.count() > 0) rows.push_back(&l);
  }
  const int row_h = 22, top = 10, bottom = 30, left = 210, right = 16;
  const int h = top + bottom + row_h * static_cast<int>(std::max<size_t>(1, rows.size()));
  double lo = 1e18, hi = 0;
  for (const SloLine* l : rows) {
    lo = std::min({lo, *l->seconds.quantile(0.5), seconds(l->target)});
    hi = std::max({hi, *l->seconds.max(), seconds(l->target)});
  }
  std::string s = svg_open(h, "Stage times against their targets (log scale)");
  if (rows.empty()) return s + text(kW / 2.0, top + 14, "no stage finished in the window", "axis muted", "middle") + "</svg>";
  lo = std::max(0.001, lo / 2);
  hi = std::max(hi * 2, lo * 10);
  const double pw = kW - left - right;
  auto x = [&](double v) { return left + pw * (std::log10(std::max(v, lo)) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)); };
  const std::pair<double, const char*> ticks[] = {{1, "1s"},       {10, "10s"},     {60, "1m"},     {600, "10m"},
                                                  {3600, "1h"},    {21600, "6h"},   {86400, "1d"},  {604800, "7d"},
                                                  {2592000, "30d"}, {0.01, "10ms"}, {0.1, "100ms"}};
  for (const auto& [v, label] : ticks) {
    if (v < lo || v > hi) continue;
    s += line(x(v), top, x(v), h - bottom, "grid");
    s += text(x(v), h - bottom + 14, label, "axis", "middle");
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const SloLine& l = *rows[i];
    const double cy = top + row_h * (static_cast<double>(i) + 0.5);
    const double p50 = *l.seconds.quantile(0.5), p90 = *l.seconds.quantile(0.9), p99 = *l.seconds.quantile(0.99),
                 mx = *l.seconds.max(), tg = seconds(l.target);
    s += text(left - 6, cy + 4, slo_name(l), "label", "end");
    s += line(x(p90), cy, x(p99), cy, "whisker");
    s += "<rect x=\"" + num(x(p50)) + "\" y=\"" + num(cy - 6) + "\" width=\"" + num(std::max(1.5, x(p90) - x(p50))) +
         "\" height=\"12\" class=\"" + (p90 <= tg ? "box ok" : "box bad") + "\"><title>" +
         esc(slo_name(l) + ": p50 " + dur(p50) + ", p90 " + dur(p90) + ", p99 " + dur(p99) + ", max " + dur(mx) +
             ", target " + dur(tg)) +
         "</title></rect>";
    s += "<circle cx=\"" + num(x(mx)) + "\" cy=\"" + num(cy) + "\" r=\"3\" class=\"max\"/>";
    s += line(x(tg), cy - 9, x(tg), cy + 9, "target");
  }
  s += text(left, h - 4, "box: p50 to p90; line: to p99; dot: max; red tick: target", "axis muted");
  return s + "</svg>";
}

// The error budget left across the window, per SLO that had a budget (the eight lowest).
std::string chart_burn_down(const Report& r) {
  std::vector<std::pair<const SloLine*, std::vector<double>>> series;
  for (const auto& l : r.slos) {
    if (l.met + l.missed > 0) series.emplace_back(&l, burn_down(l));
  }
  std::stable_sort(series.begin(), series.end(), [](const auto& a, const auto& b) { return a.second.back() < b.second.back(); });
  if (series.size() > 8) series.resize(8);
  const int legend = 16 * static_cast<int>((series.size() + 1) / 2);
  const int h = 220 + legend, left = 48, right = 12, top = 14, bottom = 36 + legend;
  const double pw = kW - left - right, ph = h - top - bottom;
  double lo = 0;
  for (const auto& [l, v] : series) lo = std::min(lo, *std::min_element(v.begin(), v.end()));
  lo = std::max(-2.0, std::floor(lo * 2) / 2);
  auto y = [&](double v) { return top + ph * (1 - (std::max(v, lo) - lo) / (1 - lo)); };
  const size_t n = r.bucket_starts.size();
  auto x = [&](size_t i) { return left + pw * (static_cast<double>(i) + 1) / static_cast<double>(n); };
  std::string s = svg_open(h, "Error budget remaining across the window");
  for (double v = lo; v <= 1.0 + 1e-9; v += 0.5) {
    s += line(left, y(v), kW - right, y(v), v == 0 ? "zero" : "grid");
    s += text(left - 4, y(v) + 4, num(100 * v, 0) + "%", "axis", "end");
  }
  s += text(left, h - bottom + 14, format_iso8601(r.query.window.from).substr(0, 10), "axis");
  s += text(kW - right, h - bottom + 14, format_iso8601(r.query.window.to).substr(0, 10), "axis", "end");
  if (series.empty()) s += text(kW / 2.0, top + ph / 2, "nothing decided in the window", "axis muted", "middle");
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& [l, v] = series[k];
    std::string pts = num(left) + "," + num(y(1));
    for (size_t i = 0; i < v.size(); ++i) pts += " " + num(x(i)) + "," + num(y(v[i]));
    const std::string cls = "series s" + std::to_string(k);
    s += "<polyline points=\"" + pts + "\" class=\"" + cls + "\"><title>" + esc(slo_name(*l) + ": " + budget_text(*l) + " left") +
         "</title></polyline>";
    const double lx = left + (k % 2) * (pw / 2), ly = h - legend + 4 + 16 * static_cast<double>(k / 2);
    s += line(lx, ly - 4, lx + 18, ly - 4, cls);
    s += text(lx + 24, ly, slo_name(*l) + ": " + budget_text(*l) + " left", "axis");
  }
  return s + "</svg>";
}

}  // namespace

std::optional<double> budget_consumed(const SloLine& l) {
  if (l.allowed_misses > 1e-12) return l.missed / l.allowed_misses;
  if (l.missed == 0) return 0.0;
  return std::nullopt;
}

std::optional<double> budget_remaining(const SloLine& l) {
  const auto c = budget_consumed(l);
  return c ? std::optional<double>(1.0 - *c) : std::nullopt;
}

json report_json(const Report& r) {
  json slos = json::array();
  for (const auto& l : r.slos) {
    const Compliance c = l.compliance();
    json burn = json::object();
    for (const auto& [name, v] : l.burn) burn[name] = std::isfinite(v) ? json(v) : json(nullptr);
    json j = {{"class", l.incident_class},
              {"stage", std::string(to_string(l.stage))},
              {"target_seconds", seconds(l.target)},
              {"objective", l.objective},
              {"decided", c.decided},
              {"met", l.met},
              {"missed", l.missed},
              {"pending", l.pending},
              {"compliance", c.decided ? json(c.compliance) : json(nullptr)},
              {"objective_met", c.decided ? json(l.missed <= l.allowed_misses + 1e-9) : json(nullptr)},
              {"error_budget",
               {{"allowed_misses", l.allowed_misses}, {"consumed", opt(budget_consumed(l))}, {"remaining", opt(budget_remaining(l))}}},
              {"burn_rate", burn},
              {"seconds",
               {{"p50", opt(l.seconds.quantile(0.5))},
                {"p90", opt(l.seconds.quantile(0.9))},
                {"p99", opt(l.seconds.quantile(0.99))},
                {"max", opt(l.seconds.max())},
                {"exact", l.seconds.exact()}}},
              {"breaches", l.breaches},
              {"budget_remaining_by_bucket", burn_down(l)}};
    if (!r.query.by.empty()) j["group"] = l.group;
    slos.push_back(std::move(j));
  }
  json breaches = json::array();
  for (const auto& b : r.breaches) {
    json went = json::array();
    for (const auto& t : b.time_went) went.push_back({{"what", t.what}, {"seconds", seconds(t.time)}});
    json j = {{"incident", b.incident_id},
              {"class", b.incident_class},
              {"where", b.where},
              {"stage", std::string(to_string(b.stage))},
              {"began", format_iso8601(b.began)},
              {"finished", b.finished ? json(format_iso8601(*b.finished)) : json(nullptr)},
              {"decided_at", format_iso8601(b.decided_at)},
              {"target_seconds", seconds(b.target)},
              {"elapsed_seconds", seconds(b.elapsed)},
              {"late_seconds", seconds(b.late)},
              {"time_went", went}};
    if (!r.query.by.empty()) j["group"] = b.group;
    breaches.push_back(std::move(j));
  }
  auto rows = [](const std::vector<CapacityRow>& v, const char* key) {
    json a = json::array();
    for (const auto& x : v) {
      a.push_back({{key, x.key}, {"drains", x.drains}, {"link_hours", x.link_hours}, {"tbps_hours", x.tbps_hours}});
    }
    return a;
  };
  json lowest = nullptr;
  if (const auto& lh = r.capacity.lowest) {
    lowest = {{"group", lh->group},      {"headroom", lh->headroom},     {"fraction", lh->fraction},
              {"floor", lh->floor},      {"at", format_iso8601(lh->at)}, {"snapshot", lh->snapshot_id},
              {"incident", lh->incident_id ? json(lh->incident_id) : json(nullptr)}};
  }
  json offenders = json::array();
  for (const auto& o : r.offenders) offenders.push_back({{"kind", o.kind}, {"name", o.name}, {"incidents", o.incidents}});
  json trend = json::array();
  for (const auto& w : r.trend) {
    const int d = w.met + w.missed;
    trend.push_back({{"week", w.iso},
                     {"from", format_iso8601(w.from)},
                     {"to", format_iso8601(w.to)},
                     {"decided", d},
                     {"met", w.met},
                     {"missed", w.missed},
                     {"compliance", d ? json(w.compliance()) : json(nullptr)},
                     {"objective", d ? json(w.objective()) : json(nullptr)}});
  }
  json starts = json::array();
  for (const Time t : r.bucket_starts) starts.push_back(format_iso8601(t));
  return {{"window", {{"from", format_iso8601(r.query.window.from)}, {"to", format_iso8601(r.query.window.to)}, {"label", r.query.label}}},
          {"class", r.query.incident_class.empty() ? json(nullptr) : json(r.query.incident_class)},
          {"by", r.query.by.empty() ? json(nullptr) : json(r.query.by)},
          {"generated_at", format_iso8601(r.generated_at)},
          {"incidents_read", r.incidents_read},
          {"slos", slos},
          {"breaches", breaches},
          {"capacity",
           {{"drains", r.capacity.drains},
            {"link_hours", r.capacity.link_hours},
            {"tbps_hours", r.capacity.tbps_hours},
            {"by_zone", rows(r.capacity.by_zone, "zone")},
            {"by_plane", rows(r.capacity.by_plane, "plane")},
            {"lowest_headroom", lowest}}},
          {"repeat_offenders", offenders},
          {"repeat_offenders_left_off", r.offenders_left_off},
          {"trend", trend},
          {"burn_down", {{"bucket_seconds", seconds(r.bucket)}, {"starts", starts}}}};
}

std::string report_csv(const Report& r) {
  std::ostringstream o;
  o << "class,stage,group,target_seconds,objective,decided,met,missed,pending,compliance,allowed_misses,"
       "budget_consumed,budget_remaining,burn_rate_1h,burn_rate_6h,burn_rate_3d,p50_seconds,p90_seconds,"
       "p99_seconds,max_seconds\n";
  auto cell = [](const std::optional<double>& v) { return v && std::isfinite(*v) ? format_number(*v) : std::string(); };
  auto field = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (const char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  for (const auto& l : r.slos) {
    const Compliance c = l.compliance();
    o << field(l.incident_class) << ',' << to_string(l.stage) << ',' << field(l.group) << ','
      << format_number(seconds(l.target)) << ',' << format_number(l.objective) << ',' << c.decided << ',' << l.met << ','
      << l.missed << ',' << l.pending << ',' << (c.decided ? format_number(c.compliance) : "") << ','
      << format_number(l.allowed_misses) << ',' << cell(budget_consumed(l)) << ',' << cell(budget_remaining(l)) << ','
      << cell(l.burn.at("1h")) << ',' << cell(l.burn.at("6h")) << ',' << cell(l.burn.at("3d")) << ','
      << cell(l.seconds.quantile(0.5)) << ',' << cell(l.seconds.quantile(0.9)) << ',' << cell(l.seconds.quantile(0.99))
      << ',' << cell(l.seconds.max()) << '\n';
  }
  return o.str();
}

namespace {

constexpr size_t kListedBreaches = 200;

std::string md_cell(const std::string& s) {
  std::string out;
  for (const char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

std::string report_markdown(const Report& r) {
  std::ostringstream o;
  o << "# SLO compliance: " << md_cell(r.query.label) << "\n\n";
  o << "Window [" << format_iso8601(r.query.window.from) << ", " << format_iso8601(r.query.window.to) << ") UTC"
    << (r.query.incident_class.empty() ? "" : ", class " + r.query.incident_class)
    << (r.query.by.empty() ? "" : ", by " + r.query.by) << "; generated " << format_iso8601(r.generated_at) << " from "
    << r.incidents_read << " incidents.\n\n";
  o << "## SLOs\n\n| SLO | Target | Objective | Decided | Met | Missed | Pending | Compliance | Budget left | Burn 1h / 6h / 3d | p50 | p90 | p99 | Max |\n"
       "|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|\n";
  for (const auto& l : r.slos) {
    const Compliance c = l.compliance();
    const bool breached = c.decided && l.missed > l.allowed_misses + 1e-9;
    o << "| " << md_cell(slo_name(l)) << " | " << format_duration(l.target) << " | " << pct(l.objective) << " | "
      << c.decided << " | " << l.met << " | " << l.missed << " | " << l.pending << " | "
      << (c.decided ? pct(c.compliance) + (breached ? " **below**" : "") : "-") << " | " << budget_text(l) << " | "
      << num(l.burn.at("1h"), 2) << " / " << num(l.burn.at("6h"), 2) << " / " << num(l.burn.at("3d"), 2) << " | "
      << dur(l.seconds.quantile(0.5)) << " | " << dur(l.seconds.quantile(0.9)) << " | " << dur(l.seconds.quantile(0.99))
      << " | " << dur(l.seconds.max()) << " |\n";
  }
  o << "\n## Breaches (" << r.breaches.size() << ")\n\n";
  if (r.breaches.empty()) {
    o << "None.\n";
  } else {
    o << "| Incident | Class | Where | Stage | Late | Took | Where the time went |\n|---:|---|---|---|---:|---:|---|\n";
    for (size_t i = 0; i < r.breaches.size() && i < kListedBreaches; ++i) {
      const Breach& b = r.breaches[i];
      o << "| #" << b.incident_id << " | " << md_cell(b.incident_class) << " | " << md_cell(b.where) << " | "
        << to_string(b.stage) << " | " << format_duration(b.late) << " | " << format_duration(b.elapsed)
        << (b.finished ? "" : " (unfinished)") << " | " << md_cell(time_went_text(b)) << " |\n";
    }
    if (r.breaches.size() > kListedBreaches) o << "\n" << r.breaches.size() - kListedBreaches << " more in the JSON report.\n";
  }
  o << "\n## Capacity cost\n\n" << r.capacity.drains << " drains: " << num(r.capacity.link_hours, 1)
    << " link-hours, " << num(r.capacity.tbps_hours, 2) << " Tb/s-hours out of service.\n\n";
  auto cap_table = [&](const std::vector<CapacityRow>& rows, const char* what) {
    if (rows.empty()) return;
    o << "| " << what << " | Drains | Link-hours | Tb/s-hours |\n|---|---:|---:|---:|\n";
    for (const auto& x : rows) {
      o << "| " << md_cell(x.key) << " | " << x.drains << " | " << num(x.link_hours, 1) << " | " << num(x.tbps_hours, 2) << " |\n";
    }
    o << "\n";
  };
  cap_table(r.capacity.by_zone, "Zone");
  cap_table(r.capacity.by_plane, "Plane");
  if (const auto& lh = r.capacity.lowest) {
    o << "Lowest headroom: " << md_cell(lh->group) << " at " << pct(lh->fraction) << " in service against a floor of "
      << pct(lh->floor) << " (headroom " << pct(lh->headroom) << "), " << format_iso8601(lh->at) << ", snapshot #"
      << lh->snapshot_id << ".\n";
  } else {
    o << "No capacity snapshot in the window.\n";
  }
  o << "\n## Repeat offenders\n\n";
  if (r.offenders.empty()) {
    o << "None: no link, optic or switch had two or more incidents.\n";
  } else {
    o << "| Kind | Name | Incidents |\n|---|---|---|\n";
    for (const auto& x : r.offenders) {
      std::string ids;
      for (const auto id : x.incidents) ids += (ids.empty() ? "#" : ", #") + std::to_string(id);
      o << "| " << x.kind << " | " << md_cell(x.name) << " | " << ids << " |\n";
    }
    if (r.offenders_left_off) o << "\n" << r.offenders_left_off << " more in the JSON report.\n";
  }
  o << "\n## Trend\n\n| Week | Decided | Met | Missed | Compliance | Objective |\n|---|---:|---:|---:|---:|---:|\n";
  for (const auto& w : r.trend) {
    const int d = w.met + w.missed;
    o << "| " << w.iso << " | " << d << " | " << w.met << " | " << w.missed << " | " << (d ? pct(w.compliance()) : "-")
      << " | " << (d ? pct(w.objective()) : "-") << " |\n";
  }
  return o.str();
}

const std::string& report_css() {
  static const std::string css = R"css(
.slo-report { font: 10pt/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2330; max-width: 190mm; margin: 0 auto; }
.slo-report h1 { font-size: 16pt; margin: 0 0 2mm; }
.slo-report h2 { font-size: 12pt; margin: 6mm 0 2mm; border-bottom: 1px solid #ccd; }
.slo-report .meta { color: #556; margin: 0 0 4mm; }
.slo-report table { border-collapse: collapse; width: 100%; font-size: 8.5pt; }
.slo-report th, .slo-report td { border-bottom: 1px solid #e2e4ea; padding: 1mm 1.5mm; text-align: left; vertical-align: top; }
.slo-report td.n, .slo-report th.n { text-align: right; font-variant-numeric: tabular-nums; }
.slo-report tr.breached td { background: #fdecec; }
.slo-report .bad { color: #b42318; font-weight: 600; }
.slo-report .good { color: #1a7f37; }
.slo-report figure { margin: 3mm 0; break-inside: avoid; }
.slo-report figcaption { font-size: 8.5pt; color: #556; }
.slo-report svg.chart { width: 100%; height: auto; display: block; }
.slo-report svg .grid { stroke: #e2e4ea; stroke-width: 1; }
.slo-report svg .zero { stroke: #556; stroke-width: 1; }
.slo-report svg .axis { font-size: 10px; fill: #556; }
.slo-report svg .muted { fill: #99a; }
.slo-report svg .label { font-size: 10px; fill: #1d2330; }
.slo-report svg .value { font-size: 10px; fill: #1d2330; }
.slo-report svg .bar.ok, .slo-report svg .box.ok { fill: #5b8def; }
.slo-report svg .bar.bad, .slo-report svg .box.bad { fill: #e5484d; }
.slo-report svg .objective, .slo-report svg .target { stroke: #b42318; stroke-width: 2; }
.slo-report svg .whisker { stroke: #556; stroke-width: 1.5; }
.slo-report svg .max { fill: #1d2330; }
.slo-report svg .series { fill: none; stroke-width: 2; }
.slo-report svg .s0 { stroke: #e5484d; } .slo-report svg .s1 { stroke: #5b8def; } .slo-report svg .s2 { stroke: #30a46c; }
.slo-report svg .s3 { stroke: #f76b15; } .slo-report svg .s4 { stroke: #8e4ec6; } .slo-report svg .s5 { stroke: #12a594; }
.slo-report svg .s6 { stroke: #d6409f; } .slo-report svg .s7 { stroke: #978365; }
@media print { @page { size: A4; margin: 12mm; } .slo-report { max-width: none; } .slo-report h2 { break-after: avoid; } .slo-report tr { break-inside: avoid; } }
)css";
  return css;
}

std::string report_html_body(const Report& r) {
  std::ostringstream o;
  o << "<article class=\"slo-report\">";
  o << "<h1>SLO compliance: " << esc(r.query.label) << "</h1>";
  o << "<p class=\"meta\">Window [" << esc(format_iso8601(r.query.window.from)) << ", "
    << esc(format_iso8601(r.query.window.to)) << ") UTC"
    << (r.query.incident_class.empty() ? "" : ", class " + esc(r.query.incident_class))
    << (r.query.by.empty() ? "" : ", by " + esc(r.query.by)) << "; generated " << esc(format_iso8601(r.generated_at))
    << " from " << r.incidents_read << " incidents. A stage counts in the window in which it was decided: when it "
    << "finished, or when its deadline passed unfinished.</p>";
  o << "<h2>SLOs</h2><table><thead><tr><th>SLO</th><th class=\"n\">Target</th><th class=\"n\">Objective</th>"
       "<th class=\"n\">Decided</th><th class=\"n\">Met</th><th class=\"n\">Missed</th><th class=\"n\">Pending</th>"
       "<th class=\"n\">Compliance</th><th class=\"n\">Budget left</th><th class=\"n\">Burn 1h</th><th class=\"n\">6h</th>"
       "<th class=\"n\">3d</th>"
       "<th class=\"n\">p50</th><th class=\"n\">p90</th><th class=\"n\">p99</th><th class=\"n\">Max</th></tr></thead><tbody>";
  for (const auto& l : r.slos) {
    const Compliance c = l.compliance();
    const bool breached = c.decided && l.missed > l.allowed_misses + 1e-9;
    o << "<tr" << (breached ? " class=\"breached\"" : "") << "><td>" << esc(slo_name(l)) << "</td><td class=\"n\">"
      << esc(format_duration(l.target)) << "</td><td class=\"n\">" << pct(l.objective) << "</td><td class=\"n\">"
      << c.decided << "</td><td class=\"n\">" << l.met << "</td><td class=\"n\">" << l.missed << "</td><td class=\"n\">"
      << l.pending << "</td><td class=\"n" << (breached ? " bad" : c.decided ? " good" : "") << "\">"
      << (c.decided ? pct(c.compliance) : "-") << "</td><td class=\"n\">" << esc(budget_text(l)) << "</td><td class=\"n\">"
      << num(l.burn.at("1h"), 2) << "</td><td class=\"n\">" << num(l.burn.at("6h"), 2) << "</td><td class=\"n\">"
      << num(l.burn.at("3d"), 2) << "</td><td class=\"n\">" << esc(dur(l.seconds.quantile(0.5))) << "</td><td class=\"n\">"
      << esc(dur(l.seconds.quantile(0.9))) << "</td><td class=\"n\">" << esc(dur(l.seconds.quantile(0.99)))
      << "</td><td class=\"n\">" << esc(dur(l.seconds.max())) << "</td></tr>";
  }
  o << "</tbody></table>";
  o << "<figure>" << chart_weekly(r) << "<figcaption>Compliance per ISO week (bars) against the objective of the "
    << "stages decided that week (red ticks).</figcaption></figure>";
  o << "<figure>" << chart_stage_times(r) << "<figcaption>How long each stage took against its target.</figcaption></figure>";
  o << "<figure>" << chart_burn_down(r) << "<figcaption>Error budget left across the window (0%: spent; below: "
    << "overspent).</figcaption></figure>";
  o << "<h2>Breaches (" << r.breaches.size() << ")</h2>";
  if (r.breaches.empty()) {
    o << "<p>None.</p>";
  } else {
    o << "<table><thead><tr><th class=\"n\">Incident</th><th>Class</th><th>Where</th><th>Stage</th><th class=\"n\">Late</th>"
         "<th class=\"n\">Took</th><th>Where the time went</th></tr></thead><tbody>";
    for (size_t i = 0; i < r.breaches.size() && i < kListedBreaches; ++i) {
      const Breach& b = r.breaches[i];
      o << "<tr><td class=\"n\">#" << b.incident_id << "</td><td>" << esc(b.incident_class) << "</td><td>" << esc(b.where)
        << "</td><td>" << to_string(b.stage) << "</td><td class=\"n\">" << esc(format_duration(b.late))
        << "</td><td class=\"n\">" << esc(format_duration(b.elapsed)) << (b.finished ? "" : " (unfinished)")
        << "</td><td>" << esc(time_went_text(b)) << "</td></tr>";
    }
    o << "</tbody></table>";
    if (r.breaches.size() > kListedBreaches) {
      o << "<p>" << r.breaches.size() - kListedBreaches << " more in the JSON report.</p>";
    }
  }
  o << "<h2>Capacity cost</h2><p>" << r.capacity.drains << " drains: " << num(r.capacity.link_hours, 1)
    << " link-hours, " << num(r.capacity.tbps_hours, 2) << " Tb/s-hours out of service.";
  if (const auto& lh = r.capacity.lowest) {
    o << " Lowest headroom: " << esc(lh->group) << " at " << pct(lh->fraction) << " in service against a floor of "
      << pct(lh->floor) << " (headroom " << pct(lh->headroom) << "), " << esc(format_iso8601(lh->at)) << ", snapshot #"
      << lh->snapshot_id << ".";
  }
  o << "</p>";
  auto cap_table = [&](const std::vector<CapacityRow>& rows, const char* what) {
    if (rows.empty()) return;
    o << "<table><thead><tr><th>" << what << "</th><th class=\"n\">Drains</th><th class=\"n\">Link-hours</th>"
      << "<th class=\"n\">Tb/s-hours</th></tr></thead><tbody>";
    for (const auto& x : rows) {
      o << "<tr><td>" << esc(x.key) << "</td><td class=\"n\">" << x.drains << "</td><td class=\"n\">"
        << num(x.link_hours, 1) << "</td><td class=\"n\">" << num(x.tbps_hours, 2) << "</td></tr>";
    }
    o << "</tbody></table>";
  };
  cap_table(r.capacity.by_zone, "Zone");
  cap_table(r.capacity.by_plane, "Plane");
  o << "<h2>Repeat offenders</h2>";
  if (r.offenders.empty()) {
    o << "<p>None: no link, optic or switch had two or more incidents.</p>";
  } else {
    o << "<table><thead><tr><th>Kind</th><th>Name</th><th>Incidents</th></tr></thead><tbody>";
    for (const auto& x : r.offenders) {
      std::string ids;
      for (const auto id : x.incidents) ids += (ids.empty() ? "#" : ", #") + std::to_string(id);
      o << "<tr><td>" << x.kind << "</td><td>" << esc(x.name) << "</td><td>" << ids << "</td></tr>";
    }
    o << "</tbody></table>";
    if (r.offenders_left_off) o << "<p>" << r.offenders_left_off << " more in the JSON report.</p>";
  }
  o << "<h2>Trend</h2><table><thead><tr><th>Week</th><th class=\"n\">Decided</th><th class=\"n\">Met</th>"
       "<th class=\"n\">Missed</th><th class=\"n\">Compliance</th><th class=\"n\">Objective</th></tr></thead><tbody>";
  for (const auto& w : r.trend) {
    const int d = w.met + w.missed;
    o << "<tr><td>" << w.iso << "</td><td class=\"n\">" << d << "</td><td class=\"n\">" << w.met << "</td><td class=\"n\">"
      << w.missed << "</td><td class=\"n\">" << (d ? pct(w.compliance()) : "-") << "</td><td class=\"n\">"
      << (d ? pct(w.objective()) : "-") << "</td></tr>";
  }
  o << "</tbody></table></article>";
  return o.str();
}

std::string report_html(const Report& r) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
         "content=\"width=device-width, initial-scale=1\"><title>SLO compliance: " +
         esc(r.query.label) + "</title><style>" + report_css() + "</style></head><body>" + report_html_body(r) +
         "</body></html>\n";
}

}  // namespace medic::slo
