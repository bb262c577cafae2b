#include "telemetry/prometheus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <random>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "common/strings.h"

namespace medic::telemetry {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

// A sample copied out of the parser's views (which only live during on_sample).
struct Owned {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
  bool has_timestamp = false;
  int64_t timestamp_ms = 0;
  MetricType type = MetricType::untyped;
  bool name_repeats = false;
};

class Collect final : public PromSink {
 public:
  void on_sample(const PromSample& s) override {
    Owned o;
    o.name = std::string(s.name);
    for (const auto& l : s.labels) o.labels.emplace_back(std::string(l.name), std::string(l.value));
    o.value = s.value;
    o.has_timestamp = s.has_timestamp;
    o.timestamp_ms = s.timestamp_ms;
    o.type = s.type;
    o.name_repeats = s.name_repeats;
    samples.push_back(std::move(o));
  }
  std::vector<Owned> samples;
};

struct Parsed {
  Status status;
  std::vector<Owned> samples;
  PromStats stats;
};

Parsed parse(std::string_view text) {
  PromParser p;
  Collect c;
  PromStats st;
  Status status = p.parse(text, c, &st);
  return {std::move(status), std::move(c.samples), st};
}

// The error of a payload that must fail.
std::string error_of(std::string_view text) {
  const Parsed r = parse(text);
  EXPECT_FALSE(r.status.ok()) << "accepted:\n" << text;
  return r.status.ok() ? "" : r.status.error();
}

// ---------------------------------------------------------------------------------------
// Samples

// A line that starts with the previous sample's name is taken as that name only when no
// more of a name follows; otherwise it is read whole, as any other.
TEST(PromParser, ANameThatStartsWithThePreviousOneIsReadWhole) {
  const Parsed r = parse(
      "# TYPE foo counter\nfoo{a=\"1\"} 1\nfoo_bar{a=\"1\"} 2\nfoo 3\nfoo{a=\"2\"} 4\nfoo\t5\n# TYPE baz gauge\n"
      "baz 6\nfoo:x 7\nfoo:x 8\n");
  ASSERT_TRUE(r.status.ok()) << r.status.error();
  std::vector<std::string> got;
  for (const Owned& o : r.samples) {
    got.push_back(o.name + " " + std::to_string(static_cast<int>(o.type)) + (o.name_repeats ? " again" : "") + " " +
                  std::to_string(static_cast<int>(o.value)));
  }
  const auto counter = std::to_string(static_cast<int>(MetricType::counter));
  const auto gauge = std::to_string(static_cast<int>(MetricType::gauge));
  const auto untyped = std::to_string(static_cast<int>(MetricType::untyped));
  EXPECT_THAT(got, ElementsAre("foo " + counter + " 1", "foo_bar " + untyped + " 2", "foo " + counter + " 3",
                               "foo " + counter + " again 4", "foo " + counter + " again 5", "baz " + gauge + " 6",
                               "foo:x " + untyped + " 7", "foo:x " + untyped + " again 8"));
  // A repeated name fails as it would have the first time.
  EXPECT_EQ(error_of("foo 1\nfoo\n"), "line 2: missing value for foo");
  EXPECT_EQ(error_of("foo 1\nfoo{a=\"1\" 2\n"), error_of("foo{a=\"1\" 2\n").replace(5, 1, "2"));
  EXPECT_EQ(error_of("foo 1\nfoo-1 2\n"), "line 2: unexpected \"-\" after foo");
}

TEST(PromParser, SampleWithoutLabels) {
  const Parsed r = parse("up 1\n");
  ASSERT_TRUE(r.status.ok()) << r.status.error();
  ASSERT_EQ(r.samples.size(), 1u);
  EXPECT_EQ(r.samples[0].name, "up");
  EXPECT_TRUE(r.samples[0].labels.empty());
  EXPECT_EQ(r.samples[0].value, 1.0);
  EXPECT_FALSE(r.samples[0].has_timestamp);
  EXPECT_EQ(r.samples[0].type, MetricType::untyped);
  EXPECT_EQ(r.stats.samples, 1u);
  EXPECT_EQ(r.stats.lines, 1u);
}

TEST(PromParser, SampleWithLabels) {
  const Parsed r = parse("node_network_receive_bytes_total{device=\"eth0\",job=\"node\"} 1.5e+09\n");
  ASSERT_TRUE(r.status.ok()) << r.status.error();
  ASSERT_EQ(r.samples.size(), 1u);
  EXPECT_EQ(r.samples[0].name, "node_network_receive_bytes_total");
  EXPECT_THAT(r.samples[0].labels, ElementsAre(Pair("device", "eth0"), Pair("job", "node")));
  EXPECT_EQ(r.samples[0].value, 1.5e9);
}

TEST(PromParser, LabelLookup) {
  struct Check final : PromSink {
    void on_sample(const PromSample& s) override {
      ASSERT_NE(s.label("b"), nullptr);
      EXPECT_EQ(*s.label("b"), "two");
      EXPECT_EQ(s.label("c"), nullptr);
      ++seen;
    }
    int seen = 0;
  } sink;
  PromParser p;
  ASSERT_TRUE(p.parse("m{a=\"one\",b=\"two\"} 3\n", sink).ok());
  EXPECT_EQ(sink.seen, 1);
}

TEST(PromParser, EmptyLabelSetAndEmptyValue) {
  const Parsed r = parse("a{} 1\nb{x=\"\"} 2\n");
  ASSERT_TRUE(r.status.ok()) << r.status.error();
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_TRUE(r.samples[0].labels.empty());
  EXPECT_THAT(r.samples[1].labels, ElementsAre(Pair("x", "")));
}

TEST(PromParser, LabelEscapes) {
  const Parsed r = parse(R"(m{path="C:\\dir",quote="say \"hi\"",nl="a\nb",plain="x"} 1)" "\n");
  ASSERT_TRUE(r.status.ok()) << r.status.error();
  ASSERT_EQ(r.samples.size(), 1u);
  EXPECT_THAT(r.samples[0].labels, ElementsAre(Pair("path", "C:\\dir"), Pair("quote", "say \"hi\""),
                                               Pair("nl", "a\nb"), Pair("plain", "x")));
}

TEST(PromParser, EscapesOnConsecutiveLinesDoNotLeak) {
  // The unescape buffers are reused from line to line.
  const Parsed r = parse("m{a=\"x\\\\y\",b=\"q\\\"\"} 1\nm{a=\"plain\",b=\"z\\n\"} 2\nm{a=\"p\",b=\"q\"} 3\n");
  ASSERT_TRUE(r.status.ok()) << r.status.error();
  ASSERT_EQ(r.samples.size(), 3u);
  EXPECT_THAT(r.samples[0].labels, ElementsAre(Pair("a", "x\\y"), Pair("b", "q\"")));
  EXPECT_THAT(r.samples[1].labels, ElementsAre(Pair("a", "plain"), Pair("b", "z\n")));
  EXPECT_THAT(r.samples[2].labels, ElementsAre(Pair("a", "p"), Pair("b", "q")));
}

TEST(PromParser, LabelValueMayContainBracesCommasAndSpaces) {
  const Parsed r = parse("m{a=\"x, y} z=\\\"w\\\"\"} 1\n");
  ASSERT_TRUE(r.status.ok()) << r.status.error();
  EXPECT_THAT(r.samples[0].labels, ElementsAre(Pair("a", "x, y} z=\"w\"")));
}

TEST(PromParser, TrailingCommaInLabelSet) {
  const Parsed r = parse("m{a=\"1\",b=\"2\",} 7\n");
  ASSERT_TRUE(r.status.ok()) << r.status.error();
  EXPECT_THAT(r.samples[0].labels, ElementsAre(Pair("a", "1"), Pair("b", "2")));
  EXPECT_EQ(r.samples[0].value, 7.0);
}

TEST(PromParser, BlanksInsideTheLabelSet) {
  const Parsed r = parse("m { a = \"1\" , b=\"2\" } 7\n");
  ASSERT_TRUE(r.status.ok()) << r.status.error();
  EXPECT_THAT(r.samples[0].labels, ElementsAre(Pair("a", "1"), Pair("b", "2")));
}

TEST(PromParser, OptionalTimestamp) {
  const Parsed r = parse("a 1 1700000000123\nb{x=\"y\"} 2\t-5\nc 3\n");
  ASSERT_TRUE(r.status.ok()) << r.status.error();
  ASSERT_EQ(r.samples.size(), 3u);
  EXPECT_TRUE(r.samples[0].has_timestamp);
  EXPECT_EQ(r.samples[0].timestamp_ms, 1700000000123);
  EXPECT_TRUE(r.samples[1].has_timestamp);
  EXPECT_EQ(r.samples[1].timestamp_ms, -5);
  EXPECT_FALSE(r.samples[2].has_timestamp);
}

TEST(PromParser, SpecialValues) {
  const Parsed r = parse("a NaN\nb +Inf\nc -Inf\nd -0.5\ne 1e-3\nf 0x1\n");
  // "0x1" is not a valid value: the payload fails on line 6.
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.error(), "line 6: invalid value \"0x1\" for f");

  const Parsed ok = parse("a NaN\nb +Inf\nc -Inf\nd -0.5\ne 1e-3\n");
  ASSERT_TRUE(ok.status.ok()) << ok.status.error();
  ASSERT_EQ(ok.samples.size(), 5u);
  EXPECT_TRUE(std::isnan(ok.samples[0].value));
  EXPECT_EQ(ok.samples[1].value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(ok.samples[2].value, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(ok.samples[3].value, -0.5);
  EXPECT_EQ(ok.samples[4].value, 1e-3);
}

TEST(PromParser, HelpTypeCommentsAndBlankLines) {
  const Parsed r = parse(
      "# HELP node_network_up Value is 1 if operstate is 'up', 0 otherwise.\n"
      "# TYPE node_network_up gauge\n"
      "\n"
      "# just a comment, TYPE-like words do not matter here\n"
      "#TYPE tight counter\n"
      "   \t\n"
      "node_network_up{device=\"eth0\"} 1\n"
      "tight 4\n"
      "  # indented comment\n"
      "untyped_one 2\n");
  ASSERT_TRUE(r.status.ok()) << r.status.error();
  ASSERT_EQ(r.samples.size(), 3u);
  EXPECT_EQ(r.samples[0].type, MetricType::gauge);
  EXPECT_EQ(r.samples[1].type, MetricType::counter);
  EXPECT_EQ(r.samples[2].type, MetricType::untyped);
  EXPECT_EQ(r.stats.samples, 3u);
  EXPECT_EQ(r.stats.lines, 8u);  // blank lines are not counted
}

TEST(PromParser, HelpMayFollowSamplesAndBeRepeated) {
  const Parsed r = parse("a 1\n# HELP a first\n# HELP a second\n");
  ASSERT_TRUE(r.status.ok()) << r.status.error();
  EXPECT_EQ(r.samples.size(), 1u);
}

TEST(PromParser, AllTypesAreKnown) {
  const Parsed r = parse(
      "# TYPE c counter\n# TYPE g gauge\n# TYPE u untyped\n# TYPE h histogram\n# TYPE s summary\n"
      "c 1\ng 2\nu 3\n");
  ASSERT_TRUE(r.status.ok()) << r.status.error();
  ASSERT_EQ(r.samples.size(), 3u);
  EXPECT_EQ(r.samples[0].type, MetricType::counter);
  EXPECT_EQ(r.samples[1].type, MetricType::gauge);
  EXPECT_EQ(r.samples[2].type, MetricType::untyped);
}

TEST(PromParser, CrLfLineEndings) {
  const Parsed r = parse("# TYPE a counter\r\na{x=\"1\"} 5 1000\r\nb 6\r\n\r\nc 7\r\n");
  ASSERT_TRUE(r.status.ok()) << r.status.error();
  ASSERT_EQ(r.samples.size(), 3u);
  EXPECT_EQ(r.samples[0].type, MetricType::counter);
  EXPECT_EQ(r.samples[0].timestamp_ms, 1000);
  EXPECT_EQ(r.samples[1].value, 6.0);
  EXPECT_EQ(r.samples[2].value, 7.0);
}

// An answer cut short inside its last line (the connection closed early, no length to
// tell) is rejected whole: "c 12" of "c 12345" would read as a counter going back and the
// next whole answer as a burst (tests/e2e/hostile_telemetry_test.cpp).
TEST(PromParserErrors, PayloadCutShortInsideItsLastLine) {
  EXPECT_EQ(error_of("a 1\nc 12"), "line 2: no line feed at the end of the payload (cut short?)");
  EXPECT_EQ(error_of("a 1\nb{x=\"y"), "line 2: no line feed at the end of the payload (cut short?)");
  EXPECT_EQ(error_of("a 1\n# HELP a th"), "line 2: no line feed at the end of the payload (cut short?)");
  EXPECT_TRUE(parse("a 1\nc 12\n").status.ok());
  EXPECT_TRUE(parse("").status.ok());
}

TEST(PromParser, CrLfErrorsCountLinesTheSame) {
  EXPECT_EQ(error_of("a 1\r\n\r\nb oops\r\n"), "line 3: invalid value \"oops\" for b");
}

TEST(PromParser, HistogramFamily) {
  const Parsed r = parse(
      "# HELP rpc_seconds RPC latency.\n"
      "# TYPE rpc_seconds histogram\n"
      "rpc_seconds_bucket{le=\"0.1\"} 3\n"
      "rpc_seconds_bucket{le=\"+Inf\"} 5\n"
      "rpc_seconds_sum 0.7\n"
      "rpc_seconds_count 5\n"
      "other 1\n");
  ASSERT_TRUE(r.status.ok()) << r.status.error();
  ASSERT_EQ(r.samples.size(), 5u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r.samples[i].type, MetricType::histogram) << r.samples[i].name;
  EXPECT_EQ(r.samples[4].type, MetricType::untyped);
  EXPECT_EQ(r.samples[0].name, "rpc_seconds_bucket");  // names are kept as written
  EXPECT_THAT(r.samples[1].labels, ElementsAre(Pair("le", "+Inf")));
  EXPECT_EQ(r.stats.samples, 5u);
  EXPECT_EQ(r.stats.skipped_histogram_summary, 4u);
}

TEST(PromParser, SummaryFamily) {
  const Parsed r = parse(
      "# TYPE gc summary\n"
      "gc{quantile=\"0.5\"} 0.01\n"
      "gc{quantile=\"0.99\"} 0.2\n"
      "gc_sum 3\n"
      "gc_count 40\n"
      "gc_bucket 1\n");  // summaries have no buckets: not part of the family
  ASSERT_TRUE(r.status.ok()) << r.status.error();
  ASSERT_EQ(r.samples.size(), 5u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r.samples[i].type, MetricType::summary) << r.samples[i].name;
  EXPECT_EQ(r.samples[4].type, MetricType::untyped);
  EXPECT_EQ(r.stats.skipped_histogram_summary, 4u);
}

TEST(PromParser, SuffixOfACounterIsNotAFamilyMember) {
  const Parsed r = parse("# TYPE x counter\nx_count 1\nx_sum 2\n");
  ASSERT_TRUE(r.status.ok()) << r.status.error();
  EXPECT_EQ(r.samples[0].type, MetricType::untyped);
  EXPECT_EQ(r.samples[1].type, MetricType::untyped);
  EXPECT_EQ(r.stats.skipped_histogram_summary, 0u);
}

TEST(PromParser, ParserIsReusableAcrossPayloads) {
  PromParser p;
  Collect c;
  ASSERT_TRUE(p.parse("# TYPE a counter\na 1\n", c).ok());
  // A new payload starts with no types: a TYPE line for "a" is fine again.
  ASSERT_TRUE(p.parse("# TYPE a gauge\na 2\n", c).ok());
  ASSERT_EQ(c.samples.size(), 2u);
  EXPECT_EQ(c.samples[0].type, MetricType::counter);
  EXPECT_EQ(c.samples[1].type, MetricType::gauge);
}

TEST(PromParser, EmptyPayloadIsValid) {
  const Parsed r = parse("");
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(r.samples.empty());
  EXPECT_EQ(r.stats.lines, 0u);
}

TEST(PromParser, StatsAreOptional) {
  PromParser p;
  Collect c;
  EXPECT_TRUE(p.parse("a 1\n", c, nullptr).ok());
  EXPECT_EQ(c.samples.size(), 1u);
}

// ---------------------------------------------------------------------------------------
// Malformed lines: "line N: what", and the sink sees nothing after the bad line.

TEST(PromParserErrors, UnterminatedLabelValue) {
  EXPECT_EQ(error_of("a 1\nm{x=\"abc} 1\n"), "line 2: unterminated value of label x");
  // A payload ending inside a value (a backslash last) is refused as cut short: the last
  // line of the text format ends in a line feed.
  EXPECT_EQ(error_of("m{x=\"abc\\"), "line 1: no line feed at the end of the payload (cut short?)");
}

TEST(PromParserErrors, UnterminatedLabelSet) {
  EXPECT_EQ(error_of("m{x=\"1\",\n"), "line 1: unterminated label set of m");
  EXPECT_EQ(error_of("m{x=\"1\","), "line 1: no line feed at the end of the payload (cut short?)");
  EXPECT_EQ(error_of("\n\nm{x=\"1\" 5\n"), "line 3: expected ',' or '}' after the value of label x");
}

TEST(PromParserErrors, BadEscape) {
  EXPECT_EQ(error_of("a 1\nb 2\nm{x=\"a\\tb\"} 1\n"), "line 3: invalid escape \\t in value of label x");
}

// Found by fuzzing (tests/fuzz/corpus/prometheus/regression-raw-byte-in-escape-error): the
// byte after the backslash was quoted raw, so a payload's non-UTF-8 byte reached the logs.
TEST(PromParserErrors, BadEscapeOfAnyByteIsQuotedEscaped) {
  const std::string e = error_of("m{x=\"a\\\xe7\x9d\xa3\"} 1\n");
  EXPECT_EQ(e, "line 1: invalid escape \\\\xe7 in value of label x");
  EXPECT_FALSE(utf8_error(e).has_value());
  EXPECT_EQ(error_of("m{x=\"\\\x01\"} 1\n"), "line 1: invalid escape \\\\x01 in value of label x");
}

TEST(PromParserErrors, MissingValue) {
  EXPECT_EQ(error_of("a 1\nb\n"), "line 2: missing value for b");
  EXPECT_EQ(error_of("m{x=\"1\"}\n"), "line 1: missing value for m");
  EXPECT_EQ(error_of("m{x=\"1\"}   \n"), "line 1: invalid value \"\" for m");
}

TEST(PromParserErrors, BadValue) {
  EXPECT_EQ(error_of("a one\n"), "line 1: invalid value \"one\" for a");
  EXPECT_EQ(error_of("a 1\n\na 1.2.3\n"), "line 3: invalid value \"1.2.3\" for a");
  EXPECT_EQ(error_of("a 1e\n"), "line 1: invalid value \"1e\" for a");
  EXPECT_EQ(error_of("a --1\n"), "line 1: invalid value \"--1\" for a");
}

TEST(PromParserErrors, ValueGluedToTheLabelSet) {
  EXPECT_EQ(error_of("m{x=\"1\"}5\n"), "line 1: unexpected \"5\" after m");
}

TEST(PromParserErrors, BadTimestamp) {
  EXPECT_EQ(error_of("a 1 12.5\n"), "line 1: invalid timestamp \"12.5\" for a");
  EXPECT_EQ(error_of("a 1\na 1 soon\n"), "line 2: invalid timestamp \"soon\" for a");
  EXPECT_EQ(error_of("a 1 99999999999999999999\n"), "line 1: invalid timestamp \"99999999999999999999\" for a");
}

TEST(PromParserErrors, TextAfterTimestamp) {
  EXPECT_EQ(error_of("a 1\na 1 1000 extra\n"), "line 2: unexpected text after the timestamp of a");
}

TEST(PromParserErrors, DuplicateLabel) {
  EXPECT_EQ(error_of("m{x=\"1\",y=\"2\",x=\"3\"} 1\n"), "line 1: duplicate label x in m");
}

TEST(PromParserErrors, SecondTypeLine) {
  EXPECT_EQ(error_of("# TYPE a counter\n# TYPE a counter\na 1\n"), "line 2: second TYPE line for metric a");
}

TEST(PromParserErrors, TypeAfterSamples) {
  EXPECT_EQ(error_of("a 1\n# TYPE a counter\n"), "line 2: TYPE line for a after its samples");
}

TEST(PromParserErrors, TypeAfterSamplesOfItsHistogramFamily) {
  EXPECT_EQ(error_of("# TYPE h histogram\nh_bucket{le=\"1\"} 1\n# TYPE h gauge\n"),
            "line 3: second TYPE line for metric h");
}

TEST(PromParserErrors, UnknownType) {
  EXPECT_EQ(error_of("# TYPE a countr\n"), "line 1: unknown metric type \"countr\" for a");
  EXPECT_EQ(error_of("# TYPE a\n"), "line 1: unknown metric type \"\" for a");
}

TEST(PromParserErrors, HelpOrTypeWithoutName) {
  EXPECT_EQ(error_of("# TYPE\n"), "line 1: TYPE line without a valid metric name");
  EXPECT_EQ(error_of("# HELP 9lives x\n"), "line 1: HELP line without a valid metric name");
  EXPECT_EQ(error_of("# TYPE a-b counter\n"), "line 1: invalid character \"-\" in metric name");
}

TEST(PromParserErrors, InvalidMetricNameStart) {
  EXPECT_EQ(error_of("a 1\n9a 1\n"), "line 2: invalid metric name start \"9\"");
  EXPECT_EQ(error_of("{x=\"1\"} 1\n"), "line 1: invalid metric name start \"{\"");
  EXPECT_EQ(error_of("-a 1\n"), "line 1: invalid metric name start \"-\"");
}

TEST(PromParserErrors, InvalidLabelName) {
  EXPECT_EQ(error_of("m{1x=\"1\"} 1\n"), "line 1: invalid label name start \"1\" in m");
  EXPECT_EQ(error_of("m{x:y=\"1\"} 1\n"), "line 1: expected '=' after label x in m");
  EXPECT_EQ(error_of("m{x=1} 1\n"), "line 1: expected '\"' to open the value of label x");
}

TEST(PromParserErrors, StopsAtTheFirstBadLine) {
  PromParser p;
  Collect c;
  PromStats st;
  st.samples = 99;
  const Status s = p.parse("a 1\nb 2\nc x\nd 4\n", c, &st);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), "line 3: invalid value \"x\" for c");
  ASSERT_EQ(c.samples.size(), 2u);  // a and b were delivered, d never
  EXPECT_EQ(c.samples[1].name, "b");
  EXPECT_EQ(st.samples, 99u);  // stats are only written on success
}

TEST(PromParserErrors, LineNumbersCountCommentsAndBlankLines) {
  EXPECT_EQ(error_of("# HELP a x\n# TYPE a gauge\n\n# hi\na 1\n\n\na\n"), "line 8: missing value for a");
}

// ---------------------------------------------------------------------------------------
// parse_prom_float

TEST(PromFloat, AcceptsDecimalsAndExponents) {
  double v = -1;
  EXPECT_TRUE(parse_prom_float("0", v));
  EXPECT_EQ(v, 0.0);
  EXPECT_TRUE(parse_prom_float("42", v));
  EXPECT_EQ(v, 42.0);
  EXPECT_TRUE(parse_prom_float("-3.25", v));
  EXPECT_EQ(v, -3.25);
  EXPECT_TRUE(parse_prom_float("+3.25", v));
  EXPECT_EQ(v, 3.25);
  EXPECT_TRUE(parse_prom_float("1.5e3", v));
  EXPECT_EQ(v, 1500.0);
  EXPECT_TRUE(parse_prom_float("1E-2", v));
  EXPECT_EQ(v, 0.01);
  EXPECT_TRUE(parse_prom_float(".5", v));
  EXPECT_EQ(v, 0.5);
  EXPECT_TRUE(parse_prom_float("5.", v));
  EXPECT_EQ(v, 5.0);
  EXPECT_TRUE(parse_prom_float("18446744073709551615", v));
  EXPECT_EQ(v, 18446744073709551616.0);
}

// Short decimals take a shortcut past from_chars (digits over a power of ten); every one
// must come out the very double from_chars reads, bit for bit, signs and zeros included.
TEST(PromFloat, ShortDecimalsReadBitForBitAsFromCharsDoes) {
  std::mt19937_64 rng(16);
  size_t compared = 0;
  for (int n = 0; n < 300000; ++n) {
    const int digits = 1 + static_cast<int>(rng() % 17);
    std::string text;
    for (int d = 0; d < digits; ++d) text += static_cast<char>('0' + rng() % 10);
    if (rng() % 3 != 0) text.insert(rng() % (text.size() + 1), ".");
    double want = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), want);
    ASSERT_TRUE(ec == std::errc() && ptr == text.data() + text.size()) << text;
    const bool negative = rng() % 2 == 0;
    double got = 7;
    ASSERT_TRUE(parse_prom_float((negative ? "-" : "") + text, got)) << text;
    if (negative) want = -want;
    EXPECT_EQ(std::bit_cast<uint64_t>(got), std::bit_cast<uint64_t>(want)) << (negative ? "-" : "") << text;
    ++compared;
  }
  EXPECT_EQ(compared, 300000u);
  double v = 1;
  EXPECT_TRUE(parse_prom_float("-0", v));
  EXPECT_TRUE(std::signbit(v));
  EXPECT_TRUE(parse_prom_float("0.1", v));
  EXPECT_EQ(v, 0.1);
  EXPECT_TRUE(parse_prom_float("999999999999999", v));  // 15 digits: the shortcut's last
  EXPECT_EQ(v, 999999999999999.0);
  EXPECT_TRUE(parse_prom_float("9007199254740993", v));  // 16 digits: from_chars rounds it
  EXPECT_EQ(v, 9007199254740992.0);
}

TEST(PromFloat, AcceptsInfAndNanInAnyCase) {
  double v = 0;
  const double inf = std::numeric_limits<double>::infinity();
  for (const char* s : {"+Inf", "Inf", "inf", "INF", "+inf", "Infinity", "+infinity"}) {
    v = 0;
    EXPECT_TRUE(parse_prom_float(s, v)) << s;
    EXPECT_EQ(v, inf) << s;
  }
  for (const char* s : {"-Inf", "-inf", "-Infinity"}) {
    v = 0;
    EXPECT_TRUE(parse_prom_float(s, v)) << s;
    EXPECT_EQ(v, -inf) << s;
  }
  for (const char* s : {"NaN", "nan", "NAN"}) {
    v = 0;
    EXPECT_TRUE(parse_prom_float(s, v)) << s;
    EXPECT_TRUE(std::isnan(v)) << s;
  }
}

TEST(PromFloat, RejectsGarbage) {
  double v = 7;
  for (const char* s : {"", "+", "-", "++1", "+-1", "-+1", "1,5", "1 ", " 1", "0x10", "1e", "e5", "abc",
                        "Inf1", "in", "NaNa", "1.2.3", "--Inf"}) {
    EXPECT_FALSE(parse_prom_float(s, v)) << '"' << s << '"';
  }
  EXPECT_EQ(v, 7.0);  // untouched on failure
}

TEST(PromFloat, OverflowBecomesInfinity) {
  double v = 0;
  EXPECT_TRUE(parse_prom_float("1e400", v));
  EXPECT_EQ(v, std::numeric_limits<double>::infinity());
  EXPECT_TRUE(parse_prom_float("-1e400", v));
  EXPECT_EQ(v, -std::numeric_limits<double>::infinity());
}

TEST(PromFloat, OutOfRangeWithTrailingGarbageIsRejected) {
  double v = 7;
  EXPECT_FALSE(parse_prom_float("1e400abc", v));
  EXPECT_FALSE(parse_prom_float("1e-400x", v));
  EXPECT_FALSE(parse_prom_float("-1e400 ", v));
  EXPECT_EQ(v, 7.0);
}

TEST(PromFloat, UnderflowBecomesZeroNotInfinity) {
  double v = 1;
  EXPECT_TRUE(parse_prom_float("1e-400", v));
  EXPECT_EQ(v, 0.0);
  v = 1;
  EXPECT_TRUE(parse_prom_float("-1e-400", v));
  EXPECT_EQ(v, 0.0);
  EXPECT_TRUE(std::signbit(v));
}

TEST(PromFloat, SubnormalsAreKept) {
  double v = 0;
  EXPECT_TRUE(parse_prom_float("4e-320", v));
  EXPECT_GT(v, 0.0);
  EXPECT_LT(v, 1e-300);
}


// ---------------------------------------------------------------------------------------
// Hostile payloads: bounded work, exact refusals, nothing raw in a message.

TEST(PromParser, LabelsPerSampleAreBounded) {
  // 128 labels is fine; one more is refused with the line and the limit. A line of 100,000
  // labels (which took 12 s when duplicates were checked against every earlier label) is
  // refused at the 129th.
  auto line = [](size_t n) {
    std::string l = "m{";
    for (size_t i = 0; i < n; ++i) l += (i ? ",l" : "l") + std::to_string(i) + "=\"v\"";
    return l + "} 1\n";
  };
  EXPECT_TRUE(parse(line(128)).status.ok());
  EXPECT_EQ(error_of("up 1\n" + line(129)), "line 2: more than 128 labels on one sample of m");
  EXPECT_EQ(error_of(line(100000)), "line 1: more than 128 labels on one sample of m");
  // The bound is the caller's to set.
  PromParser strict(PromLimits{2});
  Collect c;
  const Status st = strict.parse("m{a=\"1\",b=\"2\",c=\"3\"} 1\n", c);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error(), "line 1: more than 2 labels on one sample of m");
}

TEST(PromParser, DuplicatesInLargeLabelSetsAreFound) {
  std::string l = "m{";
  for (int i = 0; i < 40; ++i) l += (i ? ",l" : "l") + std::to_string(i) + "=\"v\"";
  EXPECT_TRUE(parse(l + "} 1\n").status.ok());
  EXPECT_EQ(error_of(l + ",l7=\"again\"} 1\n"), "line 1: duplicate label l7 in m");
  EXPECT_EQ(error_of("m{a=\"1\",b=\"2\",a=\"3\"} 1\n"), "line 1: duplicate label a in m");
}

TEST(PromParser, LabelValuesMustBeUtf8) {
  EXPECT_TRUE(parse("m{device=\"caf\xc3\xa9\"} 1\n").status.ok());
  EXPECT_EQ(error_of("m{device=\"eth\xff" "5\"} 1\n"),
            "line 1: invalid UTF-8 at byte 14 of the line, in the value of label device of m");
  EXPECT_EQ(error_of("up 1\nm{a=\"x\",b=\"\xc0\xaf\"} 1\n"),
            "line 2: invalid UTF-8 at byte 12 of the line, in the value of label b of m");
}

TEST(PromParser, WhatAMessageQuotesIsEscapedAndCut) {
  EXPECT_EQ(error_of("up 1\xff\n"), "line 1: invalid value \"1\\xff\" for up");
  const std::string e = error_of("up " + std::string(1000, '9') + "x\n");
  EXPECT_LT(e.size(), 120u) << e;
  EXPECT_NE(e.find("\"..."), std::string::npos) << e;
}

}  // namespace
}  // namespace medic::telemetry
