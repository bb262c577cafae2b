// ReplyIndex: the session a reflected packet answers, from its SSID, the socket it came in
// on and the reflector's address, as the prober looked it up before (a scan of the
// sessions with that SSID), without touching the sessions.
#include "probes/reply_index.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/probes/reflector_fixture.h"

namespace medic::probes {
namespace {

TEST(ReplyIndex, FindsTheSessionBySsidSocketAndReflectorHost) {
  ReplyIndex x;
  x.add(0, 7, 0, ep("198.18.0.1:862"));
  x.add(1, 8, 0, ep("198.18.0.1:862"));
  x.add(2, 7, 1, ep("198.18.0.1:862"));    // another socket (source port)
  x.add(3, 7, 0, ep("198.18.0.2:862"));    // another reflector
  x.add(4, 7, 0, ep("[2001:db8::1]:862"));
  x.finish();
  EXPECT_EQ(x.size(), 5u);
  EXPECT_EQ(x.find(7, 0, ep("198.18.0.1:862")), 0u);
  EXPECT_EQ(x.find(8, 0, ep("198.18.0.1:862")), 1u);
  EXPECT_EQ(x.find(7, 1, ep("198.18.0.1:862")), 2u);
  EXPECT_EQ(x.find(7, 0, ep("198.18.0.2:862")), 3u);
  EXPECT_EQ(x.find(7, 0, ep("[2001:db8::1]:862")), 4u);
  // The reflector's port is not compared: a reflector may answer from another one.
  EXPECT_EQ(x.find(7, 0, ep("198.18.0.1:40000")), 0u);
}

TEST(ReplyIndex, WhatMatchesNoSessionIsNone) {
  ReplyIndex x;
  EXPECT_EQ(x.find(1, 0, ep("198.18.0.1:862")), ReplyIndex::kNoSession);  // empty, not finished
  x.add(0, 1, 0, ep("198.18.0.1:862"));
  x.finish();
  EXPECT_EQ(x.find(2, 0, ep("198.18.0.1:862")), ReplyIndex::kNoSession);  // SSID
  EXPECT_EQ(x.find(1, 1, ep("198.18.0.1:862")), ReplyIndex::kNoSession);  // socket
  EXPECT_EQ(x.find(1, 0, ep("198.18.0.9:862")), ReplyIndex::kNoSession);  // host
  EXPECT_EQ(x.find(1, 0, ep("[::ffff:198.18.0.1]:862")), ReplyIndex::kNoSession);  // family
  EXPECT_EQ(x.find(0xffff, 0, ep("198.18.0.1:862")), ReplyIndex::kNoSession);
  EXPECT_EQ(x.find(0, 0, ep("198.18.0.1:862")), ReplyIndex::kNoSession);
}

// More sessions than SSIDs: the SSID wraps and sessions share it, told apart by socket and
// reflector; when even those are the same, the lowest-numbered session wins (as the scan did).
TEST(ReplyIndex, SessionsSharingAnSsidAreToldApartAndTheFirstWinsATie) {
  ReplyIndex x;
  const uint32_t n = 3 * 65536 + 10;
  for (uint32_t i = n; i-- > 0;) {  // added in any order
    const std::string host = "198.18." + std::to_string(i / 65536) + ".1:862";
    x.add(i, static_cast<uint16_t>(i & 0xffff), i % 3 == 0 ? 0 : 1, ep(host));
  }
  x.add(n, 5, 0, ep("198.18.0.1:862"));  // the same SSID, socket and host as session 5 below
  x.add(n + 1, 5, 0, ep("198.18.0.1:862"));
  x.finish();
  for (const uint32_t i : {0u, 1u, 65535u, 65536u, 65537u, 2u * 65536u + 4u, n - 1}) {
    SCOPED_TRACE(i);
    const std::string host = "198.18." + std::to_string(i / 65536) + ".1:862";
    EXPECT_EQ(x.find(static_cast<uint16_t>(i & 0xffff), i % 3 == 0 ? 0 : 1, ep(host)), i);
  }
  // Session 5: socket 1 (5 % 3 != 0); sessions n and n+1 are on socket 0, so tie among them.
  EXPECT_EQ(x.find(5, 1, ep("198.18.0.1:862")), 5u);
  EXPECT_EQ(x.find(5, 0, ep("198.18.0.1:862")), n);
}

}  // namespace
}  // namespace medic::probes
