#include "estimator/report.h"

#include <tuple>

#include "absl/strings/str_format.h"
#include "estimator/estimate.h"
#include "estimator/units.h"
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

// A zone the loss's transient turned RED says so: the peak line alone
// (73.7% of the GPU) would read as GREEN.
TEST(ReportTest, TableSaysWhenTheLossTransientMakesItRed) {
  absl::StatusOr<v1::Estimate> e = EstimateJob(
      testing::SmallModelLargeVocabularyJob(1, v1::PRECISION_BF16_FP32_GRADS));
  ASSERT_TRUE(e.ok()) << e.status();
  const std::string table = FormatEstimateTable(*e);
  EXPECT_NE(table.find("peak: 58.98 GiB (stage 0) = 73.7% of 80.00 GiB -> "
                       "RED"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("RED: the loss's backward casts the logits' "
                       "gradient to 16 bits, 20.51 GiB beside stage 0's "
                       "58.98 GiB: 79.49 GiB, more than the 76.75 GiB a "
                       "process can allocate of the GPU's 80.00 GiB"),
            std::string::npos)
      << table;
  // Where it fits, no such line.
  absl::StatusOr<v1::Estimate> tp2 = EstimateJob(
      testing::SmallModelLargeVocabularyJob(2, v1::PRECISION_BF16_FP32_GRADS));
  ASSERT_TRUE(tp2.ok()) << tp2.status();
  EXPECT_EQ(FormatEstimateTable(*tp2).find("the loss's backward"),
            std::string::npos);
}

// [OS] [EV] The optimizer step's and an evaluation's own peaks, outside the
// table's totals, are said where they pass the activations (bf16 gradients
// without the distributed optimizer: an fp32 copy of all of them), and
// only there.
TEST(ReportTest, TableSaysWhatTheOptimizerStepHolds) {
  v1::Job job = testing::PaperJob("llama-3.1-8b", "h100-80gb", 4, 1, 1, 1, 8,
                                  1024);
  job.mutable_parallel()->set_distributed_optimizer(false);
  absl::StatusOr<v1::Estimate> plain = EstimateJob(job);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(FormatEstimateTable(*plain).find("optimizer step"),
            std::string::npos);
  job.mutable_training()->set_precision(v1::PRECISION_BF16_BF16_GRADS);
  absl::StatusOr<v1::Estimate> e = EstimateJob(job);
  ASSERT_TRUE(e.ok()) << e.status();
  const v1::StageMemory& stage = e->peak();
  const std::string table = FormatEstimateTable(*e);
  for (const auto& [what, made_of, extra] :
       {std::tuple<const char*, const char*, double>{
            "optimizer step",
            "fp32 gradient copies, Lion's update or Muon's Newton-Schulz "
            "copies",
            stage.optimizer_step_bytes()},
        {"evaluation", "its forward, beside any fp32 gradient copies",
         stage.evaluation_bytes()}}) {
    ASSERT_GT(extra, 0) << what;
    const std::string line =
        absl::StrFormat("%s: stage 0 holds up to %.2f GiB (%s", what,
                        ToGiB(stage.total_bytes() + extra), made_of);
    EXPECT_NE(table.find(line), std::string::npos) << line << "\n" << table;
  }
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

// What overflows, in words: the transient beside the stage, and Megatron's
// attention score buffer where the stage's held bytes include it (with no
// transient at all, the stage and its buffer alone).
TEST(ReportTest, TransientOverflowTextNamesTheScoreBuffer) {
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  v1::StageMemory stage;
  stage.set_stage(3);
  stage.set_total_bytes(70 * kGiB);
  stage.set_loss_gradient_cast_bytes(5 * kGiB);
  EXPECT_EQ(TransientOverflowText(stage),
            "the loss's backward casts the logits' gradient to 16 bits, 5.00 "
            "GiB beside stage 3's 70.00 GiB");
  stage.set_attention_score_buffer_bytes(2 * kGiB);
  EXPECT_EQ(TransientOverflowText(stage),
            "the loss's backward casts the logits' gradient to 16 bits, 5.00 "
            "GiB beside stage 3's 72.00 GiB (its attention score buffer's "
            "2.00 GiB included)");
  stage.set_loss_gradient_cast_bytes(0);
  EXPECT_EQ(TransientOverflowText(stage),
            "stage 3's 72.00 GiB (its attention score buffer's 2.00 GiB "
            "included)");
}

TEST(ReportTest, ZoneNames) {
  EXPECT_EQ(ZoneName(v1::ZONE_GREEN), "GREEN");
  EXPECT_EQ(ZoneName(v1::ZONE_YELLOW), "YELLOW");
  EXPECT_EQ(ZoneName(v1::ZONE_RED), "RED");
}

}  // namespace
}  // namespace memgate
