// The catalog's entries against the published config.json files they were
// taken from (tests/testdata/hf/), read by the Hugging Face reader: the same
// parameters, and the same memory stage by stage.

#include <string>
#include <utility>
#include <vector>

#include "estimator/catalog.h"
#include "estimator/memory_model.h"
#include "gtest/gtest.h"
#include "readers/hf_config.h"

namespace memgate {
namespace {

// The MoE entries are their published configs: the same parameter count as
// the config.json in tests/testdata/hf/, stage by stage on a layout with
// expert parallelism.
TEST(CatalogConfigsTest, MoeEntriesMatchTheirPublishedConfigs) {
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"mixtral-8x7b", "mixtral-8x7b-v0.1.json"},
      {"mixtral-8x22b", "mixtral-8x22b-v0.1.json"},
      {"qwen3-30b-a3b", "qwen3-30b-a3b.json"},
      {"qwen3-235b-a22b", "qwen3-235b-a22b.json"},
      {"deepseek-v3", "deepseek-v3.json"},
      {"gpt-oss-20b", "gpt-oss-20b.json"},
      {"gpt-oss-120b", "gpt-oss-120b.json"},
  };
  for (const auto& [name, file] : pairs) {
    absl::StatusOr<v1::ModelConfig> catalog = FindModel(name);
    absl::StatusOr<v1::ModelConfig> hf =
        ReadHuggingFaceConfig("tests/testdata/hf/" + file);
    ASSERT_TRUE(catalog.ok() && hf.ok()) << name;
    EXPECT_DOUBLE_EQ(TotalParameters(ShapeOf(*catalog)),
                     TotalParameters(ShapeOf(*hf)))
        << name;
    EXPECT_EQ(catalog->softmax_type(), hf->softmax_type()) << name;
    Layout l;
    l.tensor = 2;
    l.pipeline = 4;
    l.expert_parallel = 4;
    l.expert_tensor = 1;
    l.data = 8;
    l.seq_length = 4096;
    for (uint32_t stage : {0u, 3u}) {
      EXPECT_DOUBLE_EQ(
          StageMemoryOf(ShapeOf(*catalog), l, stage, 8, stage * 8.0)
              .total_bytes(),
          StageMemoryOf(ShapeOf(*hf), l, stage, 8, stage * 8.0).total_bytes())
          << name << " stage " << stage;
    }
  }
}

// Nemotron-4 340B is not a Llama: squared ReLU (2 matrices) and LayerNorm
// (weight and bias). Counted so, it has the 341.0B parameters of its
// dimensions (the report's "340B"); as a SwiGLU model it would be 471B.
TEST(CatalogConfigsTest, Nemotron4IsItsOwnArchitecture) {
  absl::StatusOr<v1::ModelConfig> m = FindModel("nemotron-4-340b");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->mlp_activation(), v1::MLP_ACTIVATION_SQUARED_RELU);
  EXPECT_EQ(m->normalization(), v1::NORMALIZATION_LAYERNORM);
  EXPECT_FALSE(m->tie_word_embeddings());
  EXPECT_FALSE(m->linear_bias());
  EXPECT_NEAR(TotalParameters(ShapeOf(*m)), 341.03e9, 0.01e9);
  // The same model as transformers' NemotronConfig writes it (the keys of
  // its NeMo conversion, the 340B's dimensions; tests/testdata/hf/).
  absl::StatusOr<v1::ModelConfig> hf =
      ReadHuggingFaceConfig("tests/testdata/hf/nemotron-4-340b.json");
  ASSERT_TRUE(hf.ok()) << hf.status();
  Layout l;
  l.tensor = 8;
  l.pipeline = 12;
  l.data = 16;
  l.seq_length = 4096;
  for (uint32_t stage : {0u, 5u, 11u}) {
    EXPECT_DOUBLE_EQ(
        StageMemoryOf(ShapeOf(*m), l, stage, 8).total_bytes(),
        StageMemoryOf(ShapeOf(*hf), l, stage, 8).total_bytes())
        << "stage " << stage;
  }
}

}  // namespace
}  // namespace memgate
