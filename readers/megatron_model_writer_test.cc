#include "readers/megatron_model_writer.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "estimator/catalog.h"
#include "estimator/job_resolver.h"
#include "gtest/gtest.h"
#include "readers/megatron_args.h"

namespace memgate {
namespace {

v1::ModelConfig Resolved(const std::string& name) {
  v1::Job job;
  job.mutable_model()->set_name(name);
  job.mutable_accelerator()->set_name("h100-80gb");
  job.set_num_gpus(8);
  job.mutable_parallel()->set_tensor_parallel(8);
  job.mutable_parallel()->set_pipeline_parallel(1);
  job.mutable_parallel()->set_context_parallel(1);
  absl::StatusOr<v1::Job> resolved = ResolveJob(job);
  EXPECT_TRUE(resolved.ok()) << name << ": " << resolved.status();
  return resolved.ok() ? resolved->model() : v1::ModelConfig();
}

// `model` written as arguments and read back as a TP 8 launch.
absl::StatusOr<v1::ModelConfig> ReadBack(const v1::ModelConfig& model) {
  const std::optional<std::string> args = MegatronModelArguments(model);
  if (!args.has_value()) return absl::InvalidArgumentError("not written");
  std::vector<std::string> argv = {"pretrain_gpt.py"};
  for (absl::string_view w : absl::StrSplit(
           *args + " --tensor-model-parallel-size 8 --seq-length 4096 "
                   "--micro-batch-size 1 --bf16 --sequence-parallel",
           ' ', absl::SkipEmpty())) {
    argv.emplace_back(w);
  }
  absl::StatusOr<MegatronLaunch> read = ParseMegatronLaunch(argv, nullptr);
  if (!read.ok()) return read.status();
  return read->job.model();
}

// Every catalog model written as arguments reads back, at TP 8, as the
// same model: each field the estimate takes from it, the experts', MLA's
// and MTP's included.
TEST(MegatronModelWriterTest, CatalogModelsReadBackAsThemselves) {
  int written = 0;
  for (const std::string name :
       {"llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b",
        "llama-3-70b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b",
        "nemotron-4-340b", "mixtral-8x7b", "mixtral-8x22b", "qwen3-30b-a3b",
        "qwen3-235b-a22b", "deepseek-v3"}) {
    const v1::ModelConfig model = Resolved(name);
    const absl::StatusOr<v1::ModelConfig> read = ReadBack(model);
    ASSERT_TRUE(read.ok()) << name << ": " << read.status();
    const v1::ModelConfig& back = *read;
    EXPECT_EQ(back.num_layers(), model.num_layers()) << name;
    EXPECT_EQ(back.hidden_size(), model.hidden_size()) << name;
    EXPECT_EQ(back.ffn_hidden_size(), model.ffn_hidden_size()) << name;
    EXPECT_EQ(back.num_attention_heads(), model.num_attention_heads());
    EXPECT_EQ(back.num_query_groups(), model.num_query_groups()) << name;
    EXPECT_EQ(back.head_dim(), model.head_dim()) << name;
    EXPECT_EQ(back.vocab_size(), model.vocab_size()) << name;
    EXPECT_EQ(back.vocab_size_divisible_by(), model.vocab_size_divisible_by())
        << name;
    EXPECT_EQ(back.mlp_activation(), model.mlp_activation() ==
                                             v1::MLP_ACTIVATION_UNSPECIFIED
                                         ? v1::MLP_ACTIVATION_SWIGLU
                                         : model.mlp_activation())
        << name;
    EXPECT_EQ(back.normalization() == v1::NORMALIZATION_LAYERNORM,
              model.normalization() == v1::NORMALIZATION_LAYERNORM)
        << name;
    EXPECT_EQ(back.linear_bias(), model.linear_bias()) << name;
    EXPECT_EQ(back.qkv_bias(), model.qkv_bias()) << name;
    EXPECT_EQ(back.qk_norm(), model.qk_norm()) << name;
    EXPECT_EQ(back.moe().router_score_function(),
              model.moe().router_score_function())
        << name;
    EXPECT_EQ(back.moe().router_group_topk(), model.moe().router_group_topk())
        << name;
    EXPECT_EQ(back.tie_word_embeddings(), model.tie_word_embeddings()) << name;
    EXPECT_EQ(back.position_embedding() ==
                  v1::POSITION_EMBEDDING_LEARNED_ABSOLUTE,
              model.position_embedding() ==
                  v1::POSITION_EMBEDDING_LEARNED_ABSOLUTE)
        << name;
    EXPECT_EQ(back.mtp_num_layers(), model.mtp_num_layers()) << name;
    EXPECT_EQ(back.mla().ShortDebugString(), model.mla().ShortDebugString())
        << name;
    const v1::MoeConfig& e = model.moe();
    const v1::MoeConfig& b = back.moe();
    EXPECT_EQ(b.num_experts(), e.num_experts()) << name;
    EXPECT_EQ(b.router_topk(), e.router_topk()) << name;
    if (e.num_experts() > 0) {
      EXPECT_EQ(b.expert_ffn_hidden_size(), e.expert_ffn_hidden_size());
      EXPECT_EQ(b.shared_expert_ffn_hidden_size(),
                e.shared_expert_ffn_hidden_size())
          << name;
      EXPECT_EQ(b.shared_expert_gate(), e.shared_expert_gate()) << name;
      // The layers that are MoE, whichever form says them.
      for (uint32_t i = 0; i < model.num_layers(); ++i) {
        auto is_moe = [i](const v1::MoeConfig& x) {
          return x.layer_pattern_size() > 0
                     ? x.layer_pattern(static_cast<int>(i)) == 1
                     : i % std::max(1u, x.layer_frequency()) == 0;
        };
        EXPECT_EQ(is_moe(b), is_moe(e)) << name << " layer " << i;
      }
      EXPECT_NE(b.token_dispatcher(), v1::MoeConfig::DISPATCHER_ALLGATHER)
          << name;
    }
    ++written;
  }
  EXPECT_EQ(written, 14);
}

// MLA's fused down projection is written (--mla-down-proj-fusion) and
// reads back; without it, none is read.
TEST(MegatronModelWriterTest, AFusedMlaDownProjectionReadsBack) {
  v1::ModelConfig model = Resolved("deepseek-v3");
  ASSERT_FALSE(model.mla().fused_down_projection());
  model.mutable_mla()->set_fused_down_projection(true);
  const absl::StatusOr<v1::ModelConfig> back = ReadBack(model);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->mla().ShortDebugString(), model.mla().ShortDebugString());
  EXPECT_TRUE(back->mla().fused_down_projection());
}

// What the command line cannot say is not written: a plan's lines stay a
// suffix for the model's own launch.
TEST(MegatronModelWriterTest, WhatTheCommandLineCannotSayIsNotWritten) {
  v1::ModelConfig capacity = Resolved("mixtral-8x7b");
  capacity.mutable_moe()->set_capacity_factor(1.25);
  EXPECT_FALSE(MegatronModelArguments(capacity).has_value());
  v1::ModelConfig sandwich = Resolved("llama-3.1-8b");
  sandwich.set_sandwich_norms(true);
  EXPECT_FALSE(MegatronModelArguments(sandwich).has_value());
  // Gemma's GeGLU and soft-capped attention have no Megatron-LM argument.
  v1::ModelConfig geglu = Resolved("llama-3.1-8b");
  geglu.set_mlp_activation(v1::MLP_ACTIVATION_GEGLU);
  EXPECT_FALSE(MegatronModelArguments(geglu).has_value());
  v1::ModelConfig capped = Resolved("llama-3.1-8b");
  capped.set_attention_logit_softcapping(50);
  EXPECT_FALSE(MegatronModelArguments(capped).has_value());
  // [RS] A router setting a launch says its own way (a loss's coefficient,
  // the fused router that dates the release, an unknown score function)
  // is not written; Megatron's defaults, said outright, are.
  v1::ModelConfig router = Resolved("mixtral-8x7b");
  ASSERT_TRUE(MegatronModelArguments(router).has_value());
  for (auto set : std::vector<std::function<void(v1::MoeConfig&)>>{
           [](v1::MoeConfig& m) { m.set_aux_loss(true); },
           [](v1::MoeConfig& m) { m.set_z_loss(true); },
           [](v1::MoeConfig& m) { m.set_router_fusion(true); },
           [](v1::MoeConfig& m) {
             m.set_router_score_function(
                 v1::MoeConfig::ROUTER_SCORE_UNSPECIFIED);
           }}) {
    v1::ModelConfig changed = router;
    set(*changed.mutable_moe());
    EXPECT_FALSE(MegatronModelArguments(changed).has_value())
        << changed.moe().ShortDebugString();
  }
  v1::ModelConfig defaults = router;
  defaults.mutable_moe()->set_aux_loss(false);
  defaults.mutable_moe()->set_z_loss(false);
  defaults.mutable_moe()->set_router_fusion(false);
  EXPECT_TRUE(MegatronModelArguments(defaults).has_value());
}

}  // namespace
}  // namespace memgate
