#include "estimator/catalog.h"

#include "estimator/hf_config.h"
#include "estimator/memory_model.h"
#include "estimator/units.h"
#include "gtest/gtest.h"

namespace memgate {
namespace {

TEST(CatalogTest, FindsModelsCaseInsensitively) {
  absl::StatusOr<v1::ModelConfig> m = FindModel("Llama-3.1-70B");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->name(), "llama-3.1-70b");
  EXPECT_EQ(m->num_layers(), 80u);
  EXPECT_EQ(m->hidden_size(), 8192u);
  EXPECT_EQ(m->ffn_hidden_size(), 28672u);
  EXPECT_EQ(m->num_attention_heads(), 64u);
  EXPECT_EQ(m->num_query_groups(), 8u);
  EXPECT_EQ(m->vocab_size(), 128256u);
}

TEST(CatalogTest, EveryListedModelIsFoundAndComplete) {
  EXPECT_EQ(ModelNames().size(), 14u);
  for (const std::string& name : ModelNames()) {
    absl::StatusOr<v1::ModelConfig> m = FindModel(name);
    ASSERT_TRUE(m.ok()) << name;
    EXPECT_EQ(m->hidden_size() % m->num_attention_heads(), 0u) << name;
    EXPECT_EQ(m->num_attention_heads() % m->num_query_groups(), 0u) << name;
  }
}

// The MoE entries are their published configs: the same parameter count as
// the config.json in tests/testdata/hf/, stage by stage on a layout with
// expert parallelism.
TEST(CatalogTest, MoeEntriesMatchTheirPublishedConfigs) {
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"mixtral-8x7b", "mixtral-8x7b-v0.1.json"},
      {"mixtral-8x22b", "mixtral-8x22b-v0.1.json"},
      {"qwen3-30b-a3b", "qwen3-30b-a3b.json"},
      {"qwen3-235b-a22b", "qwen3-235b-a22b.json"},
      {"deepseek-v3", "deepseek-v3.json"},
  };
  for (const auto& [name, file] : pairs) {
    absl::StatusOr<v1::ModelConfig> catalog = FindModel(name);
    absl::StatusOr<v1::ModelConfig> hf =
        ReadHuggingFaceConfig("tests/testdata/hf/" + file);
    ASSERT_TRUE(catalog.ok() && hf.ok()) << name;
    EXPECT_DOUBLE_EQ(TotalParameters(ShapeOf(*catalog)),
                     TotalParameters(ShapeOf(*hf)))
        << name;
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
TEST(CatalogTest, Nemotron4IsItsOwnArchitecture) {
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

TEST(CatalogTest, UnknownModelNamesTheKnownOnes) {
  absl::StatusOr<v1::ModelConfig> m = FindModel("gpt-5");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(m.status().message().find("model.name"), std::string::npos);
  EXPECT_NE(m.status().message().find("llama-3.1-405b"), std::string::npos);
}

TEST(CatalogTest, PaperGpusHaveNominalCapacities) {
  absl::StatusOr<v1::Accelerator> a100 = FindAccelerator("a100-40gb");
  ASSERT_TRUE(a100.ok());
  EXPECT_EQ(a100->memory_bytes(), 40ull << 30);
  EXPECT_EQ(a100->gpus_per_node(), 8u);
  absl::StatusOr<v1::Accelerator> h100 = FindAccelerator("H100-94GB");
  ASSERT_TRUE(h100.ok());
  EXPECT_EQ(h100->memory_bytes(), 94ull << 30);
  EXPECT_EQ(h100->gpus_per_node(), 4u);
}

TEST(CatalogTest, AliasesResolveToTheCanonicalName) {
  absl::StatusOr<v1::Accelerator> h200 = FindAccelerator("h200");
  ASSERT_TRUE(h200.ok());
  EXPECT_EQ(h200->name(), "h200-141gb");
  EXPECT_FALSE(FindAccelerator("h100").ok());  // ambiguous: 80 or 94 GB
  for (const std::string& name : AcceleratorNames()) {
    EXPECT_TRUE(FindAccelerator(name).ok()) << name;
  }
  EXPECT_EQ(AcceleratorNames().size(), 8u);
}

}  // namespace
}  // namespace memgate
