#include "common/result.h"

#include <gtest/gtest.h>

namespace medic {
namespace {

Result<int> lookup(int id) {
  if (id < 0) return Error::invalid("id must not be negative");
  if (id == 0) return Error::not_found("no incident with id 0");
  return id * 2;
}

Status passed_on(int id) {
  auto r = lookup(id);
  if (!r.ok()) return r.failure();  // the kind travels with the message
  return Ok{};
}

TEST(Result, AnErrorKeepsItsKindWhenPassedOn) {
  const Status a = passed_on(0);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.kind(), ErrorKind::not_found);
  EXPECT_EQ(a.error(), "no incident with id 0");
  EXPECT_EQ(passed_on(-1).kind(), ErrorKind::invalid);
  EXPECT_TRUE(passed_on(3).ok());
  EXPECT_EQ(*lookup(3), 6);
}

TEST(Result, AnUnclassifiedErrorIsInternal) {
  const Result<int> r = Error{"something broke"};
  EXPECT_EQ(r.kind(), ErrorKind::internal);
  for (const ErrorKind k : {ErrorKind::internal, ErrorKind::invalid, ErrorKind::not_found, ErrorKind::conflict,
                            ErrorKind::unavailable, ErrorKind::forbidden}) {
    EXPECT_NE(to_string(k), "?");
  }
  EXPECT_EQ(to_string(Error::conflict("x").kind), "conflict");
  EXPECT_EQ(to_string(Error::unavailable("x").kind), "unavailable");
  EXPECT_EQ(to_string(Error::forbidden("x").kind), "forbidden");
}

}  // namespace
}  // namespace medic
