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


TEST(Utf8, ValidTextHasNoError) {
  EXPECT_FALSE(utf8_error(""));
  EXPECT_FALSE(utf8_error("eth5"));
  EXPECT_FALSE(utf8_error("caf\xc3\xa9"));              // U+00E9
  EXPECT_FALSE(utf8_error("\xe2\x82\xac 5"));            // U+20AC
  EXPECT_FALSE(utf8_error("\xf0\x9f\x98\x80"));          // U+1F600
  EXPECT_FALSE(utf8_error("\xf4\x8f\xbf\xbf"));          // U+10FFFF, the last code point
}

TEST(Utf8, TheFirstBadByteIsNamed) {
  EXPECT_EQ(utf8_error("\xff"), 0u);
  EXPECT_EQ(utf8_error("eth\xff" "5"), 3u);
  EXPECT_EQ(utf8_error("ab\xc3"), 2u);                   // truncated sequence
  EXPECT_EQ(utf8_error("a\xc3(b"), 1u);                  // bad continuation
  EXPECT_EQ(utf8_error("\xc0\xaf"), 0u);                 // overlong '/'
  EXPECT_EQ(utf8_error("\xe0\x80\xaf"), 0u);             // overlong, three bytes
  EXPECT_EQ(utf8_error("x\xed\xa0\x80"), 1u);            // a surrogate, U+D800
  EXPECT_EQ(utf8_error("\xf4\x90\x80\x80"), 0u);         // past U+10FFFF
  EXPECT_EQ(utf8_error("ok\x80"), 2u);                   // a lone continuation byte
}

TEST(Quote, EscapesWhatIsNotPrintableText) {
  EXPECT_EQ(quote("eth5"), "\"eth5\"");
  EXPECT_EQ(quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(quote("a\nb\x7f"), "\"a\\x0ab\\x7f\"");
  EXPECT_EQ(quote("1\xff"), "\"1\\xff\"");                          // not UTF-8: escaped
  EXPECT_EQ(quote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");               // UTF-8 kept
  EXPECT_EQ(quote("\xc3"), "\"\\xc3\"");                            // a cut sequence
  EXPECT_EQ(quote("\xed\xa0\x80"), "\"\\xed\\xa0\\x80\"");          // a surrogate
  // What quote() returns is always valid UTF-8, whatever it was given.
  std::string every;
  for (int b = 0; b < 256; ++b) every += static_cast<char>(b);
  EXPECT_FALSE(utf8_error(quote(every)));
}

TEST(EscapeText, LikeQuoteWithoutTheQuotes) {
  EXPECT_EQ(escape_text("last read: '\"\xff'"), "last read: '\"\\xff'");
  EXPECT_EQ(escape_text("caf\xc3\xa9 a\\b"), "caf\xc3\xa9 a\\b");
  EXPECT_EQ(escape_text(std::string(10, 'x'), 4), "xxxx...");
  EXPECT_FALSE(utf8_error(escape_text("\xc0\xaf\xff\x01")));
}

TEST(Quote, LongTextIsCut) {
  EXPECT_EQ(quote(std::string(100, 'x'), 8), "\"xxxxxxxx\"...");
  EXPECT_EQ(quote("short", 8), "\"short\"");
  EXPECT_EQ(quote(std::string(100, 'x'), 0).size(), 102u);  // 0: no limit
}

}  // namespace
}  // namespace medic
