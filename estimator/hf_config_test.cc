#include "estimator/hf_config.h"

#include "gtest/gtest.h"

namespace memgate {
namespace {

// Meta-Llama-3.1-8B's config.json as published (abridged nested rope
// settings kept: unknown keys, nested objects and floats must be ignored).
constexpr char kLlama31_8B[] = R"json({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 131072,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192,
                   "rope_type": "llama3"},
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.43.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
})json";

TEST(HfConfigTest, ReadsLlama31_8B) {
  absl::StatusOr<v1::ModelConfig> m =
      ModelFromHuggingFaceJson(kLlama31_8B, "meta-llama/Llama-3.1-8B");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->name(), "meta-llama/Llama-3.1-8B");
  EXPECT_EQ(m->num_layers(), 32u);
  EXPECT_EQ(m->hidden_size(), 4096u);
  EXPECT_EQ(m->ffn_hidden_size(), 14336u);
  EXPECT_EQ(m->num_attention_heads(), 32u);
  EXPECT_EQ(m->num_query_groups(), 8u);
  EXPECT_EQ(m->vocab_size(), 128256u);
  EXPECT_FALSE(m->tie_word_embeddings());
}

TEST(HfConfigTest, NoKeyValueHeadsMeansMultiHead) {
  absl::StatusOr<v1::ModelConfig> m = ModelFromHuggingFaceJson(
      R"({"hidden_size": 4096, "num_hidden_layers": 32,
          "num_attention_heads": 32, "intermediate_size": 11008,
          "vocab_size": 32000, "tie_word_embeddings": true})",
      "llama-2-7b-ish");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->num_query_groups(), 32u);
  EXPECT_TRUE(m->tie_word_embeddings());
}

TEST(HfConfigTest, MissingKeyIsNamed) {
  absl::StatusOr<v1::ModelConfig> m = ModelFromHuggingFaceJson(
      R"({"hidden_size": 4096, "num_hidden_layers": 32,
          "num_attention_heads": 32, "vocab_size": 32000})",
      "x");
  ASSERT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("intermediate_size"), std::string::npos)
      << m.status();
}

TEST(HfConfigTest, MalformedJsonIsAnErrorNotACrash) {
  for (const char* bad :
       {"", "{", "[]", "{\"hidden_size\": -4096}", "{\"hidden_size\": \"x\"}",
        "{\"hidden_size\": 1e30}", "null", "{\"vocab_size\": 4.5}"}) {
    absl::StatusOr<v1::ModelConfig> m = ModelFromHuggingFaceJson(bad, "x");
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(m.status().message().find("config.json"), std::string::npos);
  }
}

TEST(HfConfigTest, MissingFileIsNamed) {
  absl::StatusOr<v1::ModelConfig> m =
      ReadHuggingFaceConfig("/nonexistent/config.json");
  EXPECT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("/nonexistent/config.json"),
            std::string::npos);
}

}  // namespace
}  // namespace memgate
