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
  // MTP layers: as many as --mtp-num-layers, after every 't', and (what
  // memgate models) in the last stage.
  EXPECT_NE(Error("Et|tm|L", 3, 2, 1).find("outside the last stage"),
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
