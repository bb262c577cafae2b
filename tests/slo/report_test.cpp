// The SLO report's pure parts: the window a query asks for (and its exact errors), counts,
// budgets and burn rates over trailing windows, stage-time quantiles (exact, then within 1%),
// where a breach's time went, ISO weeks, the trend and burn-down, capacity cost, and the
// formats (JSON keys, CSV rows, Markdown, an HTML file with three SVG charts and no inline
// style or script).
#include "slo/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "slo/render.h"
#include "tests/slo/slo_times.h"

namespace medic::slo {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

Time utc(const char* iso) { return *parse_iso8601(iso); }

TargetVersion target(const std::string& cls, Stage st, double target_s, double objective, double from_s = 0) {
  return {cls, st, "", "", from_seconds(target_s), objective, t(from_s)};
}

// Detected `detect_s` after it started at `start`.
ReportIncident detected(int64_t id, double start, std::optional<double> detect_s, const std::string& cls = "link_flap") {
  ReportIncident i;
  i.id = id;
  i.incident_class = cls;
  i.started_at = t(start);
  if (detect_s) i.detected_at = t(start + *detect_s);
  return i;
}

ReportQuery window(double from, double to) {
  ReportQuery q;
  q.window = {t(from), t(to)};
  q.label = "test";
  return q;
}

const SloLine& only(const Report& r, Stage st = Stage::detect) {
  for (const auto& l : r.slos) {
    if (l.stage == st) return l;
  }
  throw std::runtime_error("no line");
}

TEST(ReportQuery, EveryWayOfNamingAWindow) {
  const Time now = utc("2026-11-26T10:00:00Z");
  const auto def = parse_report_query({}, now);
  ASSERT_TRUE(def.ok()) << def.error();
  EXPECT_EQ(def->window.to, now);
  EXPECT_EQ(def->window.to - def->window.from, std::chrono::hours(24 * 7));
  const auto w = parse_report_query({{"window", "28d"}}, now);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->window.to - w->window.from, std::chrono::hours(24 * 28));
  EXPECT_EQ(parse_report_query({{"window", "36h"}}, now)->window.from, now - std::chrono::hours(36));
  const auto ft = parse_report_query({{"from", "2026-11-01"}, {"to", "2026-11-08T00:00:00Z"}, {"class", "optics"}, {"by", "plane"}}, now);
  ASSERT_TRUE(ft.ok()) << ft.error();
  EXPECT_EQ(ft->window.from, utc("2026-11-01T00:00:00Z"));
  EXPECT_EQ(ft->window.to, utc("2026-11-08T00:00:00Z"));
  EXPECT_EQ(ft->incident_class, "optics");
  EXPECT_EQ(ft->by, "plane");
  // A month is whole UTC days: October 2026 (Europe's clocks change on the 25th; UTC's do
  // not) is exactly 31 x 24 hours, and December runs into the next year.
  const auto oct = parse_report_query({{"month", "2026-10"}}, now);
  ASSERT_TRUE(oct.ok());
  EXPECT_EQ(oct->window.from, utc("2026-10-01T00:00:00Z"));
  EXPECT_EQ(oct->window.to, utc("2026-11-01T00:00:00Z"));
  EXPECT_EQ(oct->window.to - oct->window.from, std::chrono::hours(31 * 24));
  EXPECT_EQ(parse_report_query({{"month", "2026-12"}}, now)->window.to, utc("2027-01-01T00:00:00Z"));
  EXPECT_EQ(parse_report_query({{"month", "2028-02"}}, now)->window.to, utc("2028-03-01T00:00:00Z"));
}

TEST(ReportQuery, BadParametersSayWhichAndWhy) {
  const Time now = utc("2026-11-26T10:00:00Z");
  auto err = [&](std::map<std::string, std::string> p, const std::string& prefix = "") {
    const auto q = parse_report_query(p, now, prefix);
    EXPECT_FALSE(q.ok());
    return q.ok() ? std::string() : q.error();
  };
  EXPECT_THAT(err({{"window", "7w"}}), HasSubstr("window: not a window: \"7w\""));
  EXPECT_THAT(err({{"window", "0d"}}), HasSubstr("not a window"));
  EXPECT_THAT(err({{"window", "-7d"}}), HasSubstr("not a window"));
  EXPECT_THAT(err({{"window", "99999d"}}), HasSubstr("not a window"));
  EXPECT_THAT(err({{"window", "999999999999999999d"}}), HasSubstr("not a window"));
  EXPECT_THAT(err({{"from", "-8999999999999s"}, {"to", "now"}}), HasSubstr("spans more than 3660 days"));
  EXPECT_THAT(err({{"from", "1"}, {"to", "8999999999999"}}, "--"), HasSubstr("--from to --to spans more than 3660 days"));
  EXPECT_TRUE(parse_report_query({{"from", "2020-01-01"}, {"to", "2026-01-01"}}, now).ok()) << "six years is fine";
  EXPECT_THAT(err({{"month", "2026-13"}}, "--"), HasSubstr("--month: not a month: \"2026-13\""));
  EXPECT_THAT(err({{"month", "26-10"}}), HasSubstr("not a month"));
  EXPECT_THAT(err({{"from", "2026-11-01"}}, "--"), HasSubstr("--from and --to go together"));
  EXPECT_THAT(err({{"from", "2026-11-08"}, {"to", "2026-11-01"}}), HasSubstr("from must be before to"));
  EXPECT_THAT(err({{"from", "2026-11-08"}, {"to", "2026-11-08"}}), HasSubstr("from must be before to"));
  EXPECT_THAT(err({{"from", "yesterday"}, {"to", "now"}}), HasSubstr("from: not a time: \"yesterday\""));
  EXPECT_THAT(err({{"window", "7d"}, {"month", "2026-10"}}), HasSubstr("not several"));
  EXPECT_THAT(err({{"by", "rack"}}), HasSubstr("\"rack\" is not one of zone, plane, role"));
  EXPECT_THAT(err({{"class", ""}}), HasSubstr("class: empty"));
  EXPECT_THAT(err({{"hours", "24"}}), HasSubstr("unknown report parameter \"hours\""));
}

TEST(ReportBuilder, CountsBudgetsQuantilesAndBreaches) {
  // Detect within 60 s, 75% of the time; the window is [0, 1000).
  ReportBuilder b(window(0, 1000), {target("link_flap", Stage::detect, 60, 0.75)}, t(1000));
  b.add(detected(1, 10, 20));    // met
  b.add(detected(2, 20, 90));    // missed at 80 (its deadline)
  b.add(detected(3, 30, 60));    // met exactly at the target
  b.add(detected(4, 40, std::nullopt));  // never detected: missed at 100
  b.add(detected(5, 50, 45));    // met
  b.add(detected(6, 990, std::nullopt));  // started 10 s before the end: pending
  b.add(detected(7, 60, 500, "optics"));  // no target for the class: nothing
  const Report r = b.finish();
  ASSERT_EQ(r.slos.size(), 1u);
  const SloLine& l = r.slos[0];
  EXPECT_EQ(l.met, 3);
  EXPECT_EQ(l.missed, 2);
  EXPECT_EQ(l.pending, 1);
  EXPECT_DOUBLE_EQ(l.compliance().compliance, 0.6);
  EXPECT_NEAR(l.allowed_misses, 1.25, 1e-9);
  EXPECT_NEAR(*budget_remaining(l), 1 - 2 / 1.25, 1e-9);
  EXPECT_THAT(l.breaches, ElementsAre(2, 4));
  // Finished stages only: 20, 45, 60, 90 s (nearest rank).
  EXPECT_EQ(l.seconds.quantile(0.5), 45);
  EXPECT_EQ(l.seconds.quantile(0.9), 90);
  EXPECT_EQ(l.seconds.max(), 90);
  EXPECT_TRUE(l.seconds.exact());
  // The breach of the unfinished one runs until the window's end.
  ASSERT_EQ(r.breaches.size(), 2u);
  EXPECT_EQ(r.breaches[0].incident_id, 4);
  EXPECT_EQ(r.breaches[0].late, from_seconds(1000 - 100));
  EXPECT_FALSE(r.breaches[0].finished);
  EXPECT_EQ(r.breaches[1].incident_id, 2);
  EXPECT_EQ(r.breaches[1].late, from_seconds(30));
}

TEST(ReportBuilder, TheObjectiveIsMetAtExactlyItsShare) {
  auto run = [](int misses) {
    ReportBuilder b(window(0, 100000), {target("c", Stage::detect, 60, 0.99)}, t(100000));
    for (int i = 0; i < 99; ++i) b.add(detected(i, i, 10, "c"));
    for (int i = 0; i < misses; ++i) b.add(detected(100 + i, 200 + i, 1000, "c"));
    return b.finish();
  };
  const Report one = run(1);
  EXPECT_NEAR(*budget_remaining(one.slos[0]), 0.0, 1e-9) << "1 miss of 100 at 99%: the budget exactly spent";
  EXPECT_THAT(report_markdown(one), Not(HasSubstr("**below**")));
  const Report two = run(2);
  EXPECT_LT(*budget_remaining(two.slos[0]), 0.0);
  EXPECT_THAT(report_markdown(two), HasSubstr("**below**"));
}

TEST(ReportBuilder, BurnRatesOverTheTrailingWindowsEndingAtTheWindowsEnd) {
  const double end = 10 * 86400;
  ReportBuilder b(window(0, end), {target("link_flap", Stage::detect, 60, 0.99)}, t(end));
  // Long ago (day 1): 10 misses. In the last hour: 1 met, 1 missed.
  for (int i = 0; i < 10; ++i) b.add(detected(i, 86400 + i * 100, 500));
  b.add(detected(20, end - 1800, 30));
  b.add(detected(21, end - 1800, 600));
  const Report r = b.finish();
  const SloLine& l = r.slos[0];
  EXPECT_EQ(l.missed, 11);
  // Last hour: half missed, against 1% allowed: 50.
  EXPECT_NEAR(l.burn.at("1h"), 50, 1e-9);
  EXPECT_NEAR(l.burn.at("6h"), 50, 1e-9);
  EXPECT_NEAR(l.burn.at("3d"), 50, 1e-9);
  // Nothing decided in a trailing window burns nothing.
  ReportBuilder quiet(window(0, end), {target("link_flap", Stage::detect, 60, 0.99)}, t(end));
  quiet.add(detected(1, 100, 500));
  EXPECT_EQ(quiet.finish().slos[0].burn.at("1h"), 0);
}

TEST(ReportBuilder, ATargetChangedMidWindowJudgesEachStageByItsOwn) {
  // 60 s until 500, then 10 s at 99.9%.
  ReportBuilder b(window(0, 1000),
                  {target("link_flap", Stage::detect, 60, 0.99), target("link_flap", Stage::detect, 10, 0.999, 500)}, t(1000));
  b.add(detected(1, 100, 30));  // decided at 130 under 60 s: met
  b.add(detected(2, 600, 30));  // due at 610 under 10 s: missed
  const Report r = b.finish();
  const SloLine& l = r.slos[0];
  EXPECT_EQ(l.met, 1);
  EXPECT_EQ(l.missed, 1);
  EXPECT_EQ(l.target, from_seconds(10)) << "the line shows the target in force at the window's end";
  EXPECT_NEAR(l.allowed_misses, 0.01 + 0.001, 1e-12) << "each decided stage allows what its own objective allows";
}

TEST(ReportBuilder, AClosedOrDismissedIncidentDecidesNothingAfterwards) {
  ReportBuilder b(window(0, 10000), {target("link_flap", Stage::mitigate, 120, 0.99)}, t(10000));
  ReportIncident closed = detected(1, 0, 10);
  closed.closed_at = t(50);  // closed (the flap stopped) before its mitigate deadline at 130
  b.add(closed);
  ReportIncident late = detected(2, 0, 10);
  late.closed_at = t(500);  // closed after the deadline: the miss at 130 stands
  b.add(late);
  const Report r = b.finish();
  EXPECT_EQ(only(r, Stage::mitigate).missed, 1);
  EXPECT_THAT(only(r, Stage::mitigate).breaches, ElementsAre(2));
  EXPECT_EQ(only(r, Stage::mitigate).pending, 0);
}

TEST(ReportBuilder, EmptyWindowsHaveEveryTargetsLineAndNothingDecided) {
  ReportBuilder b(window(0, 86400), {target("link_flap", Stage::detect, 60, 0.99), target("optics", Stage::mitigate, 600, 0.95)},
                  t(86400));
  const Report r = b.finish();
  ASSERT_EQ(r.slos.size(), 2u);
  for (const auto& l : r.slos) {
    EXPECT_EQ(l.met + l.missed + l.pending, 0);
    EXPECT_EQ(l.compliance().compliance, 1.0);
    EXPECT_EQ(budget_remaining(l), 1.0);
    EXPECT_FALSE(l.seconds.quantile(0.5));
  }
  const std::string html = report_html(r);
  EXPECT_THAT(html, HasSubstr("no stage finished in the window"));
  EXPECT_THAT(html, HasSubstr("nothing decided in the window"));
  const nlohmann::json j = report_json(r);
  EXPECT_TRUE(j["slos"][0]["compliance"].is_null());
  EXPECT_TRUE(j["slos"][0]["seconds"]["p50"].is_null());
}

TEST(ReportBuilder, ByGroupSplitsLinesAndCapacityIsClippedToTheWindow) {
  ReportQuery q = window(0, 7200);
  q.by = "zone";
  ReportBuilder b(q, {target("link_flap", Stage::detect, 60, 0.99)}, t(7200));
  ReportIncident a = detected(1, 0, 10);
  a.groups = {{"zone", "zone1"}, {"plane", "plane2"}};
  a.link = "rtsw0001:eth5--ctsw001:eth1";
  a.speed_gbps = 400;
  a.mitigated_at = t(-3600);  // drained an hour before the window: only its part inside counts
  a.undrained_at = t(3600);
  b.add(a);
  ReportIncident h = detected(2, 0, 100, "link_flap");  // no zone (a host): "-"
  b.add(h);
  const Report r = b.finish();
  ASSERT_EQ(r.slos.size(), 2u);
  EXPECT_EQ(r.slos[0].group, "-");
  EXPECT_EQ(r.slos[1].group, "zone1");
  EXPECT_EQ(r.slos[1].met, 1);
  EXPECT_EQ(r.slos[0].missed, 1);
  EXPECT_EQ(r.capacity.drains, 1);
  EXPECT_NEAR(r.capacity.link_hours, 1.0, 1e-9);
  EXPECT_NEAR(r.capacity.tbps_hours, 0.4, 1e-9);
  ASSERT_EQ(r.capacity.by_zone.size(), 1u);
  EXPECT_EQ(r.capacity.by_zone[0].key, "zone1");
  ASSERT_EQ(r.capacity.by_plane.size(), 1u);
  EXPECT_EQ(r.capacity.by_plane[0].key, "plane2");
}

TEST(StageTimeDist, ExactUpToItsLimitThenWithinOnePercent) {
  StageTimeDist d;
  for (size_t i = 1; i <= StageTimeDist::kExact; ++i) d.add(static_cast<double>(i));
  EXPECT_TRUE(d.exact());
  EXPECT_EQ(d.quantile(0.5), 2048);
  EXPECT_EQ(d.max(), 4096);
  for (size_t i = StageTimeDist::kExact + 1; i <= 100000; ++i) d.add(static_cast<double>(i));
  EXPECT_FALSE(d.exact());
  EXPECT_EQ(d.count(), 100000u);
  EXPECT_NEAR(*d.quantile(0.5), 50000, 500);
  EXPECT_NEAR(*d.quantile(0.99), 99000, 990);
  EXPECT_EQ(d.max(), 100000);
}

TEST(WhereTimeWent, SplitsAStageByWhatTheIncidentWaitedFor) {
  const std::vector<StateEvent> ev = {
      {t(100), "triaged", ""},
      {t(110), "pending_approval", "link_flap needs approval"},
      {t(200), "corroborated", "counters and active probes agree"},  // not a state
      {t(300), "blocked", "capacity: tor_uplinks of rtsw0001 would fall below 75%"},
      {t(400), "pending_approval", "circuit breaker open: 9 incidents opened in the last 600 s (limit 8)"},
      {t(450), "blocked", "rate limit: 3 drains in the fabric in the last 60 s (limit 3)"},
      {t(470), "mitigated", ""},
  };
  const auto went = where_time_went(ev, t(90), t(470));
  std::map<std::string, double> by;
  for (const auto& x : went) by[x.what] = medic::seconds(x.time);
  EXPECT_EQ(by, (std::map<std::string, double>{{"detection", 10}, {"triage", 10}, {"approval", 190}, {"capacity", 100},
                                                {"breaker", 50}, {"rate limit", 20}}));
  EXPECT_EQ(went.front().what, "approval") << "the longest first";
  // Only the part inside [begin, end) counts.
  const auto part = where_time_went(ev, t(150), t(350));
  ASSERT_EQ(part.size(), 2u);
  EXPECT_EQ(part[0].what, "approval");
  EXPECT_EQ(part[0].time, from_seconds(150));
  EXPECT_EQ(part[1].what, "capacity");
  EXPECT_TRUE(where_time_went({}, t(0), t(0)).empty());
}

TEST(IsoWeek, WeeksStartOnMondayAndBelongToTheYearOfTheirThursday) {
  EXPECT_EQ(iso_week(utc("2026-11-26T10:00:00Z")), "2026-W48");
  EXPECT_EQ(iso_week_start(utc("2026-11-26T10:00:00Z")), utc("2026-11-23T00:00:00Z"));
  EXPECT_EQ(iso_week(utc("2026-12-31T23:59:59Z")), "2026-W53");
  EXPECT_EQ(iso_week(utc("2027-01-03T12:00:00Z")), "2026-W53");
  EXPECT_EQ(iso_week(utc("2027-01-04T00:00:00Z")), "2027-W01");
  EXPECT_EQ(iso_week(utc("2024-12-30T00:00:00Z")), "2025-W01");
  EXPECT_EQ(iso_week(utc("1970-01-01T00:00:00Z")), "1970-W01");
}

TEST(ReportBuilder, TheTrendHasEveryIsoWeekOfTheWindowClippedToIt) {
  ReportQuery q;
  q.window = {utc("2026-10-01T00:00:00Z"), utc("2026-11-01T00:00:00Z")};
  ReportBuilder b(q, {target("link_flap", Stage::detect, 60, 0.99)}, q.window.to);
  ReportIncident i;
  i.id = 1;
  i.incident_class = "link_flap";
  i.started_at = utc("2026-10-25T01:30:00Z");  // the night Europe's clocks go back
  i.detected_at = utc("2026-10-25T01:30:30Z");
  b.add(i);
  const Report r = b.finish();
  std::vector<std::string> weeks;
  for (const auto& w : r.trend) weeks.push_back(w.iso);
  EXPECT_THAT(weeks, ElementsAre("2026-W40", "2026-W41", "2026-W42", "2026-W43", "2026-W44"));
  EXPECT_EQ(r.trend.front().from, q.window.from);
  EXPECT_EQ(r.trend.back().to, q.window.to);
  EXPECT_EQ(r.trend[3].met, 1) << "Sunday 25 October is in W43";
  EXPECT_EQ(r.bucket_starts.size(), 31u) << "one burn-down bucket per UTC day";
  EXPECT_EQ(r.slos[0].seconds.max(), 30);
}

TEST(ReportFormats, CsvMarkdownAndASelfContainedHtmlFile) {
  ReportBuilder b(window(0, 86400), {target("link_flap", Stage::detect, 60, 0.99), target("optics", Stage::detect, 300, 0.95)},
                  t(86400));
  ReportIncident i = detected(7, 100, 200);
  i.link = "rtsw<1>:eth5--ctsw001:eth1";  // markup in a name is escaped
  b.add(i);
  b.add(detected(8, 200, 20));
  const Report r = b.finish();
  const std::string csv = report_csv(r);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3) << csv;  // header and one row per SLO
  EXPECT_THAT(csv, HasSubstr("link_flap,detect,,60,0.99,2,1,1,0,0.5,"));
  const std::string md = report_markdown(r);
  EXPECT_THAT(md, HasSubstr("| link_flap detect | 1m00s | 99.00% | 2 | 1 | 1 | 0 | 50.00% **below**"));
  EXPECT_THAT(md, HasSubstr("| #7 | link_flap | rtsw<1>:eth5--ctsw001:eth1 | detect |"));
  const std::string html = report_html(r);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  const std::regex svg("<svg ");
  EXPECT_EQ(std::distance(std::sregex_iterator(html.begin(), html.end(), svg), std::sregex_iterator()), 3);
  EXPECT_THAT(html, HasSubstr("rtsw&lt;1&gt;:eth5"));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr(" style=\""))) << "no inline style attribute: the page's CSP would refuse it";
  EXPECT_THAT(html, Not(HasSubstr("http://www.w3.org/1999"))) << "nothing but the SVG namespace names a URL";
  EXPECT_THAT(html, HasSubstr("@page { size: A4"));
  EXPECT_THAT(report_html_body(r), Not(HasSubstr("<style>")));
}

}  // namespace
}  // namespace medic::slo
