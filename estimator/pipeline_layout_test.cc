#include "estimator/pipeline_layout.h"

#include <string>

#include "gtest/gtest.h"

namespace memgate {
namespace {

std::string Error(absl::string_view text, uint32_t p, uint32_t layers,
                  uint32_t mtp_layers = 0) {
  absl::StatusOr<PipelineLayout> l =
      ParsePipelineLayout(text, p, layers, mtp_layers);
  return l.ok() ? "ok" : std::string(l.status().message());
}

// Megatron's own docstring example "Et*3|(tt|)*29,m|L" with a transformer
// layer where its MTP layer was: 32 stages (Ettt, 29 x tt, t, L); over PP 32
// that is v = 1.
TEST(PipelineLayoutTest, ReadsMegatronsExample) {
  absl::StatusOr<PipelineLayout> l =
      ParsePipelineLayout("Et*3|(tt|)*29,t|L", 32, 3 + 58 + 1);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->virtual_stages, 1u);
  ASSERT_EQ(l->layers.size(), 32u);
  EXPECT_EQ(l->layers[0], 3u);
  EXPECT_EQ(l->layers[1], 2u);
  EXPECT_EQ(l->layers[29], 2u);  // the 29th "tt|"
  EXPECT_EQ(l->layers[30], 1u);  // ",t|"
  EXPECT_EQ(l->layers[31], 0u);  // only the loss
}

// NVIDIA's DeepSeek-V3 H100 recipe (model zoo best_practice/deepseek-v3):
// 61 layers and one MTP layer over PP 8, "Et|(tt|)*30mL": 32 stages, v = 4,
// the last stage holding the MTP layer and the loss, no transformer layer.
TEST(PipelineLayoutTest, ReadsTheMtpLayerBesideTheLoss) {
  absl::StatusOr<PipelineLayout> l =
      ParsePipelineLayout("Et|(tt|)*30mL", 8, 61, 1);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->virtual_stages, 4u);
  ASSERT_EQ(l->layers.size(), 32u);
  EXPECT_EQ(l->layers[0], 1u);
  EXPECT_EQ(l->layers[30], 2u);
  EXPECT_EQ(l->layers[31], 0u);
  // The planner writes the same layout with a repeat inside the group.
  absl::StatusOr<PipelineLayout> planned =
      ParsePipelineLayout("Et|(t*2|)*30mL", 8, 61, 1);
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_EQ(planned->layers, l->layers);
}

// Megatron's documented DeepSeek-V3 layout (docs/user-guide/features/
// pipeline_parallel_layout.md): "Et*3|(tt|)*29,m|L" over PP 16 is 32
// stages, v = 2, the MTP layer alone in stage 30, rank 14's last chunk
// ("standalone", pipeline_parallel_layer_layout.py), the loss in stage 31.
// Written into a job, it says so; a layout with 'm' beside 'L' clears it.
TEST(PipelineLayoutTest, ReadsStandaloneMtpOnARankBeforeTheLast) {
  absl::StatusOr<PipelineLayout> l =
      ParsePipelineLayout("Et*3|(tt|)*29,m|L", 16, 61, 1);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->virtual_stages, 2u);
  ASSERT_EQ(l->layers.size(), 32u);
  EXPECT_EQ(l->layers[29], 2u);
  EXPECT_EQ(l->layers[30], 0u);
  EXPECT_EQ(l->layers[31], 0u);
  ASSERT_TRUE(l->mtp_pipeline_rank.has_value());
  EXPECT_EQ(*l->mtp_pipeline_rank, 14u);
  v1::ParallelConfig parallel;
  ApplyPipelineLayout(*l, parallel);
  EXPECT_EQ(parallel.mtp_pipeline_rank(), 14u);
  EXPECT_EQ(parallel.virtual_pipeline_stages(), 2u);
  EXPECT_EQ(parallel.layers_per_stage_size(), 32);

  absl::StatusOr<PipelineLayout> beside =
      ParsePipelineLayout("Et|(tt|)*30mL", 8, 61, 1);
  ASSERT_TRUE(beside.ok()) << beside.status();
  EXPECT_FALSE(beside->mtp_pipeline_rank.has_value());
  ApplyPipelineLayout(*beside, parallel);
  EXPECT_FALSE(parallel.has_mtp_pipeline_rank());
  EXPECT_EQ(parallel.virtual_pipeline_stages(), 4u);
  // One rank of its own, unchunked: "Et|t|m|L" over PP 4.
  absl::StatusOr<PipelineLayout> alone =
      ParsePipelineLayout("Et|t|m|L", 4, 2, 1);
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_EQ(alone->mtp_pipeline_rank, 2u);
  ApplyPipelineLayout(*alone, parallel);
  EXPECT_EQ(parallel.virtual_pipeline_stages(), 0u);
}

// 8 stages over PP 4: v = 2, chunk j of rank r is entry j * 4 + r.
TEST(PipelineLayoutTest, StagesBeyondPipelineSizeAreVirtualStages) {
  absl::StatusOr<PipelineLayout> l =
      ParsePipelineLayout("Et|(tt|)*6,tL", 4, 14);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->virtual_stages, 2u);
  EXPECT_EQ(l->layers, (std::vector<uint32_t>{1, 2, 2, 2, 2, 2, 2, 1}));
}

TEST(PipelineLayoutTest, BreakingMegatronsRulesIsNamed) {
  EXPECT_NE(Error("t|EtL", 2, 2).find("'E' (the embedding) must come first"),
            std::string::npos);
  EXPECT_NE(Error("EtL|t", 2, 2).find("'L' (the loss) must come last"),
            std::string::npos);
  EXPECT_NE(Error("Et|tt", 2, 3).find("exactly once"), std::string::npos);
  EXPECT_NE(Error("Et|tL", 2, 3).find("has 2 transformer layers"),
            std::string::npos);
  EXPECT_NE(Error("Et|t|tL", 2, 3).find("3 stages do not divide"),
            std::string::npos);
  // MTP layers: as many as --mtp-num-layers, after every 't', in one
  // stage, the last chunk of its rank (rank 1's first of two here).
  EXPECT_NE(Error("Et|tm|mL", 3, 2, 2).find("must all be in one stage"),
            std::string::npos);
  EXPECT_NE(Error("Et|tm||L", 2, 2, 1).find("stage 1, chunk 0 of rank 1: "
                                            "Megatron needs them in a "
                                            "rank's last chunk (1)"),
            std::string::npos);
  EXPECT_NE(Error("Et|tmL", 2, 2, 2).find("has 1 MTP layers ('m'); "
                                          "--mtp-num-layers is 2"),
            std::string::npos);
  EXPECT_NE(Error("Et|tL", 2, 2, 1).find("has 0 MTP layers"),
            std::string::npos);
  EXPECT_NE(Error("Et|mtL", 2, 2, 1).find("must come before the MTP"),
            std::string::npos);
  EXPECT_EQ(Error("Et|tmL", 2, 2, 1), "ok");
  EXPECT_NE(Error("Et|x|L", 3, 1).find("'x' is not a layer"),
            std::string::npos);
  EXPECT_EQ(Error("Et|tL", 2, 9).rfind("--pipeline-model-parallel-layout: ",
                                        0),
            0u);
}

// Expansion is bounded before it is built: nested repeats that would make
// 10^18 characters are refused by the size check ("expands past", which
// only Repeat's check before appending says). No clock: a bomb that was
// built would exhaust memory or the test's timeout, and fail either way.
TEST(PipelineLayoutTest, ExpansionBombsAreRefusedBeforeAnyWork) {
  for (absl::string_view bomb :
       {"E(t*999999999|)*999999999L", "Et*99999999999999999999999L",
        "E(t*1000|)*1000000L"}) {
    EXPECT_NE(Error(bomb, 1, 1).find("expands past"), std::string::npos)
        << bomb;
  }
  // The largest layout allowed still parses.
  std::string big = "E" + std::string(kMaxExpandedLayout - 2, 't') + "L";
  EXPECT_EQ(Error(big, 1, kMaxExpandedLayout - 2), "ok");
  EXPECT_NE(Error(big + "t", 1, 1).find("longer than"), std::string::npos);
}

}  // namespace
}  // namespace memgate
