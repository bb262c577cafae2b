#include "detectors/config.h"

#include <gtest/gtest.h>

#include "tests/support/testing.h"

namespace medic::detectors {
namespace {

TEST(DetectorConfig, ShippedFileLoads) {
  const auto c = DetectorConfig::load_file(testing::source_dir() + "/data/detectors.json");
  EXPECT_EQ(c.optics.default_type, "400G-DR4");
  ASSERT_NE(c.optics.type_for(""), nullptr);
  EXPECT_DOUBLE_EQ(c.fec.limit_ber, 2.4e-4);
}

}  // namespace
}  // namespace medic::detectors
