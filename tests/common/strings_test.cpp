#include "common/strings.h"

#include <gtest/gtest.h>

namespace medic {
namespace {

using V = std::vector<std::string>;

TEST(Split, KeepsEmptyParts) {
  EXPECT_EQ(split("a,b,c", ','), (V{"a", "b", "c"}));
  EXPECT_EQ(split("a,b,,c", ','), (V{"a", "b", "", "c"}));
  EXPECT_EQ(split("", ','), (V{""}));
  EXPECT_EQ(split(",", ','), (V{"", ""}));
  EXPECT_EQ(split("a,", ','), (V{"a", ""}));
  EXPECT_EQ(split(",a", ','), (V{"", "a"}));
  EXPECT_EQ(split("abc", ','), (V{"abc"}));
  EXPECT_EQ(split("rtsw0001:eth5", ':'), (V{"rtsw0001", "eth5"}));
}

TEST(Trim, StripsAsciiWhitespaceAtBothEnds) {
  EXPECT_EQ(trim(" \t x y \r\n"), "x y");
  EXPECT_EQ(trim("   "), "");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim("abc"), "abc");
  EXPECT_EQ(trim("\nabc"), "abc");
  EXPECT_EQ(trim("abc\t"), "abc");
  EXPECT_EQ(trim("a \t b"), "a \t b");
}

TEST(Join, WithSeparator) {
  EXPECT_EQ(join({}, ", "), "");
  EXPECT_EQ(join({"a"}, ", "), "a");
  EXPECT_EQ(join({"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(join({"", ""}, "-"), "-");
  EXPECT_EQ(join({"x", "y"}, ""), "xy");
  EXPECT_EQ(join(split("a,b,,c", ','), ","), "a,b,,c");
}

TEST(FormatPercent, OneDecimal) {
  EXPECT_EQ(format_percent(0.625), "62.5%");
  EXPECT_EQ(format_percent(0.75), "75.0%");
  EXPECT_EQ(format_percent(0.5), "50.0%");
  EXPECT_EQ(format_percent(1.0), "100.0%");
  EXPECT_EQ(format_percent(0.0), "0.0%");
  EXPECT_EQ(format_percent(2.0 / 3.0), "66.7%");
  EXPECT_EQ(format_percent(0.0004), "0.0%");
  EXPECT_EQ(format_percent(1.5), "150.0%");
}

TEST(Quote, EscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(quote("name"), "\"name\"");
  EXPECT_EQ(quote(""), "\"\"");
  EXPECT_EQ(quote("a\"b"), "\"a\\\"b\"");
  EXPECT_EQ(quote("a\\b"), "\"a\\\\b\"");
  EXPECT_EQ(quote("a\nb\tc"), "\"a\\x0ab\\x09c\"");
  EXPECT_EQ(quote(std::string_view("a\0b", 3)), "\"a\\x00b\"");
  EXPECT_EQ(quote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // UTF-8 passes through
}

}  // namespace
}  // namespace medic

namespace medic {
namespace {

TEST(ParseHostPort, AcceptsAddressesAndPorts) {
  const auto a = parse_host_port("127.0.0.1:9400");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->first, "127.0.0.1");
  EXPECT_EQ(a->second, 9400);
  const auto b = parse_host_port("[::1]:0");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->first, "::1");
  EXPECT_EQ(b->second, 0);
}

TEST(ParseHostPort, RejectsBadPorts) {
  for (const char* bad : {"127.0.0.1", "127.0.0.1:", ":80", "127.0.0.1:abc", "127.0.0.1:65536", "h:123456", "h:-1"}) {
    EXPECT_FALSE(parse_host_port(bad)) << bad;
  }
}

}  // namespace
}  // namespace medic
