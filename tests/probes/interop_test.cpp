// Interoperability: an independent implementation, Wireshark's TWAMP-Test dissector (run
// as tshark), captures a real `medic probe` session against the real medic-reflector on
// the loopback interface and decodes every packet field by field. Capturing on lo needs
// root (CI runs as root); without it, or without tshark (scripts/setup installs it), the
// test fails and says why.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/testing.h"

namespace medic {
namespace {

std::string find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (const char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// tshark's absolute time with TZ=UTC: "Nov 21, 2026 18:51:57.809910999 UTC" -> nanoseconds
// since the Unix epoch; nullopt when it does not read.
std::optional<long long> parse_absolute_time(const std::string& s) {
  char mon[4] = {0}, frac[16] = {0}, zone[8] = {0};
  int day = 0, year = 0, h = 0, m = 0, sec = 0;
  if (std::sscanf(s.c_str(), "%3s %d, %d %d:%d:%d.%15[0-9] %7s", mon, &day, &year, &h, &m, &sec, frac, zone) != 8) {
    return std::nullopt;
  }
  if (std::string(zone) != "UTC") return std::nullopt;
  static const std::map<std::string, int> months = {{"Jan", 0}, {"Feb", 1}, {"Mar", 2}, {"Apr", 3},
                                                    {"May", 4}, {"Jun", 5}, {"Jul", 6}, {"Aug", 7},
                                                    {"Sep", 8}, {"Oct", 9}, {"Nov", 10}, {"Dec", 11}};
  const auto it = months.find(mon);
  if (it == months.end()) return std::nullopt;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = it->second;
  tm.tm_mday = day;
  tm.tm_hour = h;
  tm.tm_min = m;
  tm.tm_sec = sec;
  std::string ns = frac;
  ns.resize(9, '0');
  return static_cast<long long>(timegm(&tm)) * 1000000000LL + std::stoll(ns);
}

// The fields asked of tshark, in order.
const std::vector<std::string> kFields = {
    "frame.len",                           // 0
    "udp.srcport",                         // 1
    "udp.dstport",                         // 2
    "udp.length",                          // 3
    "twamp.test.seq_number",               // 4
    "twamp.test.timestamp",                // 5
    "twamp.test.error_estimate",           // 6
    "twamp.test.mbz1",                     // 7  (where RFC 8972 puts the SSID)
    "twamp.test.receive_timestamp",        // 8
    "twamp.test.sender_seq_number",        // 9
    "twamp.test.sender_timestamp",         // 10
    "twamp.test.sender_error_estimate",    // 11
    "twamp.test.sender_ttl",               // 12
    "twamp.test.error_estimate.multiplier",  // 13 (own Error Estimate, then the sender's)
    "twamp.test.error_estimate.scale",     // 14
    "twamp.test.error_estimate.s",         // 15
};
enum Field {
  kFrameLen, kSrcPort, kDstPort, kUdpLen, kSeq, kTimestamp, kErrorEstimate, kMbz1, kReceiveTimestamp,
  kSenderSeq, kSenderTimestamp, kSenderErrorEstimate, kSenderTtl, kMultiplier, kScale, kSBit
};

int default_ttl() {
  std::ifstream in("/proc/sys/net/ipv4/ip_default_ttl");
  int ttl = 64;
  in >> ttl;
  return ttl;
}

TEST(Interop, WiresharkDecodesOurStampPacketsFieldByField) {
  if (::geteuid() != 0) {
    FAIL() << "this test captures on the loopback interface with tshark and needs root (CI runs as root); "
              "run it as root";
  }
  const std::string tshark = find_in_path("tshark");
  if (tshark.empty()) FAIL() << "tshark is not installed (scripts/setup installs it: apt-get install tshark)";
  // tshark prints absolute times in local time and month names in the locale: fix both.
  ::setenv("TZ", "UTC", 1);
  ::setenv("LC_ALL", "C", 1);

  // The reflector first, on a port of its own choosing, which it prints.
  testing::Process reflector(MEDIC_REFLECTOR_BIN, {"--listen", "127.0.0.1:0"});
  std::string port;
  ASSERT_TRUE(testing::eventually(
      [&] {
        const std::string out = reflector.output();
        const std::string mark = "medic-reflector on 127.0.0.1:";
        const size_t at = out.find(mark);
        if (at == std::string::npos) return false;
        size_t end = at + mark.size();
        while (end < out.size() && std::isdigit(static_cast<unsigned char>(out[end]))) ++end;
        port = out.substr(at + mark.size(), end - at - mark.size());
        return !port.empty();
      },
      std::chrono::seconds(10)))
      << reflector.output();

  // tshark: that port only, decoded as TWAMP-Test, stopping after 10 packets (or 60 s).
  std::vector<std::string> args = {"-l", "-n", "-i", "lo", "-f", "udp port " + port, "-d",
                                   "udp.port==" + port + ",twamp.test", "-c", "10", "-a", "duration:60",
                                   "-T", "fields", "-E", "separator=/t"};
  for (const auto& f : kFields) {
    args.push_back("-e");
    args.push_back(f);
  }
  testing::Process capture(tshark, args);
  // "Capturing on 'Loopback: lo'" comes before dumpcap has the interface open (packets sent
  // right after it can be missed); "Capture started." comes once dumpcap reports its file,
  // after the capture is live.
  ASSERT_TRUE(testing::eventually(
      [&] {
        const std::string out = capture.output();
        return out.find("Capturing on") != std::string::npos && out.find("Capture started") != std::string::npos;
      },
      std::chrono::seconds(30)))
      << "tshark did not start capturing:\n"
      << capture.output();

  const auto [status, probe_out] = testing::run_command(
      MEDIC_CLI_BIN, {"probe", "127.0.0.1:" + port, "--count", "5", "--ssid", "7"}, std::chrono::seconds(30));
  ASSERT_EQ(status, 0) << probe_out;
  EXPECT_NE(probe_out.find("5 sent, 5 received, 0 lost"), std::string::npos) << probe_out;

  const auto tshark_status = capture.wait(std::chrono::seconds(70));
  ASSERT_TRUE(tshark_status.has_value()) << "tshark did not stop after 10 packets:\n" << capture.output();
  const std::string raw = capture.output();
  SCOPED_TRACE("tshark printed:\n" + raw);
  EXPECT_EQ(*tshark_status, 0);

  // The field lines (stdout and stderr share the log: skip tshark's messages).
  std::vector<std::vector<std::string>> sender, reflected;
  size_t lines = 0;
  std::stringstream in(raw);
  std::string line;
  while (std::getline(in, line)) {
    auto f = split(line, '\t');
    if (f.size() != kFields.size()) continue;
    ++lines;
    (f[kSrcPort] == port ? reflected : sender).push_back(f);
  }
  ASSERT_EQ(lines, 10u);
  ASSERT_EQ(sender.size(), 5u);
  ASSERT_EQ(reflected.size(), 5u);

  // How Wireshark's TWAMP-Test dissector tells the two kinds apart: it does not look at the
  // direction or the port. dissect_twamp_test() decodes the reflector's fields whenever at
  // least 27 octets follow the Error Estimate, so a 44-octet session-sender packet is shown
  // with them too; in ours they are MBZ and read zero (a zero NTP timestamp shows as
  // 1970-01-01). It also predates RFC 8972: the SSID's two octets are its "MBZ" (mbz1). So
  // the direction comes from the UDP source port (the reflector answers from `port`), and
  // for the sender's packets the reflector-only fields must be zero.
  const long long now_ns = static_cast<long long>(std::time(nullptr)) * 1000000000LL;
  const long long minute_ns = 60LL * 1000000000LL;
  for (size_t i = 0; i < 5; ++i) {
    const auto& s = sender[i];
    SCOPED_TRACE("sender packet " + std::to_string(i));
    EXPECT_EQ(s[kDstPort], port);
    EXPECT_EQ(s[kUdpLen], "52");  // 8 + 44 octets
    EXPECT_EQ(s[kSeq], std::to_string(i));
    const auto ts = parse_absolute_time(s[kTimestamp]);
    ASSERT_TRUE(ts.has_value()) << s[kTimestamp];
    EXPECT_LT(std::llabs(*ts - now_ns), minute_ns) << s[kTimestamp];
    // medic probe's clock: 1 ms, not synchronized = S 0, Scale 15, Multiplier 132 (0x0f84).
    EXPECT_EQ(s[kErrorEstimate], "3972");
    EXPECT_EQ(split(s[kMultiplier], ',').at(0), "132");
    EXPECT_EQ(split(s[kScale], ',').at(0), "15");
    EXPECT_EQ(split(s[kSBit], ',').at(0), "0");
    EXPECT_EQ(s[kMbz1], "7");  // the SSID
    EXPECT_EQ(s[kSenderSeq], "0");
    EXPECT_EQ(s[kSenderTtl], "0");
    EXPECT_EQ(s[kSenderErrorEstimate], "0");
    const auto rx = parse_absolute_time(s[kReceiveTimestamp]);
    ASSERT_TRUE(rx.has_value()) << s[kReceiveTimestamp];
    EXPECT_EQ(*rx, 0) << s[kReceiveTimestamp];
  }
  for (size_t i = 0; i < 5; ++i) {
    const auto& r = reflected[i];
    SCOPED_TRACE("reflector packet " + std::to_string(i));
    EXPECT_EQ(r[kUdpLen], "52");  // symmetric size
    EXPECT_EQ(r[kDstPort], sender[i][kSrcPort]);
    EXPECT_EQ(r[kSeq], std::to_string(i));  // stateless: the sender's own number
    EXPECT_EQ(r[kSenderSeq], std::to_string(i));
    EXPECT_EQ(r[kSenderSeq], sender[i][kSeq]);
    EXPECT_EQ(r[kSenderTimestamp], sender[i][kTimestamp]);  // copied unchanged
    EXPECT_EQ(r[kSenderErrorEstimate], sender[i][kErrorEstimate]);
    EXPECT_EQ(r[kSenderTtl], std::to_string(default_ttl()));
    EXPECT_EQ(r[kMbz1], "7");
    const auto multipliers = split(r[kMultiplier], ',');
    ASSERT_FALSE(multipliers.empty());
    EXPECT_NE(multipliers[0], "0");  // the reflector's own Error Estimate
    EXPECT_NE(multipliers[0], "");
    const auto sent = parse_absolute_time(r[kSenderTimestamp]);
    const auto received = parse_absolute_time(r[kReceiveTimestamp]);
    const auto answered = parse_absolute_time(r[kTimestamp]);
    ASSERT_TRUE(sent && received && answered) << r[kSenderTimestamp] << " / " << r[kReceiveTimestamp] << " / "
                                              << r[kTimestamp];
    EXPECT_GE(*received, *sent) << "received before it was sent";
    EXPECT_GE(*answered, *received) << "answered before it was received";
    EXPECT_LT(std::llabs(*answered - now_ns), minute_ns);
  }
}

}  // namespace
}  // namespace medic
