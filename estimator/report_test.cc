#include "estimator/report.h"

#include "estimator/estimate.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace memgate {
namespace {

TEST(ReportTest, TableShowsEveryStageThePeakAndTheZone) {
  absl::StatusOr<v1::Estimate> e = EstimateJob(testing::PaperJob(
      "llama-3.1-8b", "a100-40gb", 4, 1, 2, 1, 8, 8192));
  ASSERT_TRUE(e.ok());
  const std::string table = FormatEstimateTable(*e);
  EXPECT_NE(table.find("llama-3.1-8b on 8 x a100-40gb: TP=4 CP=1 PP=2 DP=1 "
                       "MBS=1 seq=8192"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("27.20  <- peak"), std::string::npos) << table;
  EXPECT_NE(table.find("peak: 27.20 GiB (stage 0) = 68.0% of 40.00 GiB -> "
                       "GREEN"),
            std::string::npos)
      << table;
}

TEST(ReportTest, BreakdownAddsUpToTheTotal) {
  v1::StageMemory s;
  s.set_weight_bytes(1ull << 30);
  s.set_gradient_bytes(2ull << 30);
  s.set_optimizer_bytes(3ull << 30);
  s.set_activation_bytes(4ull << 30);
  EXPECT_EQ(BreakdownLine(s),
            "weights 1.00 + gradients 2.00 + optimizer 3.00 + activations "
            "4.00 GiB");
}

TEST(ReportTest, ZoneNames) {
  EXPECT_EQ(ZoneName(v1::ZONE_GREEN), "GREEN");
  EXPECT_EQ(ZoneName(v1::ZONE_YELLOW), "YELLOW");
  EXPECT_EQ(ZoneName(v1::ZONE_RED), "RED");
}

}  // namespace
}  // namespace memgate
