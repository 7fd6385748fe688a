#include "estimator/validation.h"

#include <functional>
#include <limits>
#include <string>

#include "estimator/job_resolver.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace memgate {
namespace {

// A valid resolved job: Llama-3.1-8B, TP 4, CP 2, PP 2 on 32 GPUs (d = 2).
v1::Job ValidJob() {
  v1::Job job = testing::PaperJob("llama-3.1-8b", "a100-40gb", 4, 2, 2, 1, 32,
                                  8192);
  return *ResolveJob(job);
}

// ValidJob with 8 experts over EP 2, interleaved (VP 2), and the EP
// all-to-all overlap: valid until a rule is broken.
void OverlapExperts(v1::Job& j) {
  j.mutable_model()->mutable_moe()->set_num_experts(8);
  j.mutable_model()->mutable_moe()->set_router_topk(2);
  j.mutable_model()->mutable_moe()->set_overlap_expert_parallel_comm(true);
  j.mutable_parallel()->set_expert_parallel(2);
  j.mutable_parallel()->set_virtual_pipeline_stages(2);
}

// The LM head in MXFP8 (--fp8-output-proj under --fp8-recipe mxfp8), on
// Blackwell, where TransformerEngine runs MXFP8.
void Mxfp8Head(v1::Job& j) {
  j.mutable_accelerator()->set_name("b200-180gb");
  v1::Fp8& fp8 = *j.mutable_training()->mutable_fp8();
  fp8.set_recipe(v1::Fp8::RECIPE_MXFP8);
  fp8.set_output_projection(true);
}

// Full recomputation (uniform, a layer a group) whose stored inputs are
// distributed over TP: valid at TP > 1 without sequence parallelism.
void DistributeSavedInputs(v1::Job& j) {
  v1::Recompute& r = *j.mutable_training()->mutable_recompute();
  r.set_granularity(v1::Recompute::GRANULARITY_FULL);
  r.set_method(v1::Recompute::METHOD_UNIFORM);
  r.set_num_layers(1);
  r.set_distribute_saved_activations(true);
}

// MLA with --mla-down-proj-fusion's fused down projection.
void FusedMla(uint32_t q_lora, uint32_t kv_lora, uint32_t rope, v1::Job& j) {
  v1::MlaConfig& mla = *j.mutable_model()->mutable_mla();
  mla.set_q_lora_rank(q_lora);
  mla.set_kv_lora_rank(kv_lora);
  mla.set_qk_head_dim(128);
  mla.set_qk_pos_emb_head_dim(rope);
  mla.set_v_head_dim(128);
  mla.set_fused_down_projection(true);
}

// Full recomputation, method uniform, in groups of `n` layers.
void UniformGroupsOf(uint32_t n, v1::Job& j) {
  v1::Recompute& r = *j.mutable_training()->mutable_recompute();
  r.set_granularity(v1::Recompute::GRANULARITY_FULL);
  r.set_method(v1::Recompute::METHOD_UNIFORM);
  r.set_num_layers(n);
}

// ValidJob's model with Gemma 2's soft-capped scores, at CP 1 (16 GPUs):
// valid with either kernel until a rule is broken.
void SoftCappedAtContextParallelOne(v1::Job& j) {
  j.mutable_model()->set_attention_logit_softcapping(50);
  j.mutable_parallel()->set_context_parallel(1);
  j.set_num_gpus(16);
}

struct Rule {
  std::string name;
  std::function<void(v1::Job&)> breaks_it;
  std::string field;  // must be named in the message
};

class ValidationRuleTest : public ::testing::TestWithParam<Rule> {};

TEST_P(ValidationRuleTest, RefusesAndNamesTheField) {
  v1::Job job = ValidJob();
  ASSERT_TRUE(ValidateJob(job).ok());
  GetParam().breaks_it(job);
  const absl::Status status = ValidateJob(job);
  ASSERT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_EQ(status.message().rfind(GetParam().field + ":", 0), 0u)
      << "message should start with the field: " << status.message();
  EXPECT_NE(status.message().find("(got "), std::string::npos) << status;
}

// [LW] Muon's layer-wise packing is bounded before any is done: 4 x
// matrices x the ranks they use (layer_wise_layout.h). Qwen3-30B-A3B's
// 12,288 routed experts' matrices without expert parallelism over 32
// expert data-parallel ranks (1.6e6 steps) are allowed, over 64 refused
// by field; Llama-3.1-8B's 128 matrices over 16,384 ranks use 128 of them.
TEST(ValidationTest, LayerWisePackingIsBoundedBeforeItStarts) {
  auto muon_on = [](const char* model, uint32_t gpus) {
    v1::Job job = testing::PaperJob(model, "h100-80gb", 1, 1, 1, 1, gpus,
                                    4096);
    job.mutable_training()->set_optimizer(v1::OPTIMIZER_MUON);
    job.mutable_training()->set_global_batch_size(gpus);
    return *ResolveJob(job);
  };
  EXPECT_TRUE(ValidateJob(muon_on("qwen3-30b-a3b", 32)).ok());
  const absl::Status over = ValidateJob(muon_on("qwen3-30b-a3b", 64));
  EXPECT_EQ(over.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(over.message().rfind("parallel.distributed_optimizer:", 0), 0u)
      << over;
  EXPECT_TRUE(ValidateJob(muon_on("llama-3.1-8b", 16384)).ok());
  // Counted before any matrix is listed: 2^30 experts are refused at
  // once, not enumerated.
  v1::Job huge = muon_on("qwen3-30b-a3b", 32);
  huge.mutable_model()->mutable_moe()->set_num_experts(1u << 30);
  const absl::Status many = ValidateJob(huge);
  EXPECT_EQ(many.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(many.message().rfind("parallel.distributed_optimizer:", 0), 0u)
      << many;
}

INSTANTIATE_TEST_SUITE_P(
    EveryRule, ValidationRuleTest,
    ::testing::Values(
        Rule{"MoeActRecomputedOnADenseModel", [](v1::Job& j) {
               v1::Recompute& r = *j.mutable_training()->mutable_recompute();
               r.set_granularity(v1::Recompute::GRANULARITY_SELECTIVE);
               r.add_modules(v1::Recompute::MODULE_MOE_ACT);
             }, "training.recompute.modules"},
        Rule{"LayernormRecomputedUnderDelayedFp8", [](v1::Job& j) {
               v1::Recompute& r = *j.mutable_training()->mutable_recompute();
               r.set_granularity(v1::Recompute::GRANULARITY_SELECTIVE);
               r.add_modules(v1::Recompute::MODULE_LAYERNORM);
               j.mutable_training()->mutable_fp8()->set_recipe(
                   v1::Fp8::RECIPE_DELAYED);
             }, "training.recompute.modules"},
        Rule{"ExpertParallelWithoutExperts", [](v1::Job& j) {
               j.mutable_parallel()->set_expert_parallel(2);
             }, "parallel.expert_parallel"},
        // TransformerEngine has no fp32 FlashAttention (or fused).
        Rule{"FlashAttentionInFp32", [](v1::Job& j) {
               j.mutable_training()->set_precision(v1::PRECISION_FP32);
               j.mutable_training()->set_attention_kernel(
                   v1::ATTENTION_KERNEL_FLASH);
             }, "training.attention_kernel"},
        // Gemma 2's own attention, flex or unfused, raises at CP > 1
        // (ValidJob's CP 2).
        Rule{"SoftCappedScoresWithContextParallel", [](v1::Job& j) {
               j.mutable_model()->set_attention_logit_softcapping(50);
               j.mutable_training()->set_attention_kernel(
                   v1::ATTENTION_KERNEL_FLASH);
             }, "parallel.context_parallel"},
        // Megatron-Bridge's FlexAttention path falls back to the unfused
        // attention under a dataloader mask or attention dropout.
        Rule{"FlexAttentionWithADataloaderMask", [](v1::Job& j) {
               SoftCappedAtContextParallelOne(j);
               j.mutable_training()->set_attention_kernel(
                   v1::ATTENTION_KERNEL_FLASH);
               j.mutable_training()->set_dataloader_attention_mask(true);
             }, "training.attention_kernel"},
        Rule{"FlexAttentionWithAttentionDropout", [](v1::Job& j) {
               SoftCappedAtContextParallelOne(j);
               j.mutable_training()->set_attention_kernel(
                   v1::ATTENTION_KERNEL_FLASH);
               j.mutable_training()->set_attention_dropout(0.1f);
             }, "training.attention_kernel"},
        Rule{"NegativeAttentionSoftCap", [](v1::Job& j) {
               j.mutable_model()->set_attention_logit_softcapping(-1);
             }, "model.attention_logit_softcapping"},
        Rule{"InfiniteAttentionSoftCap", [](v1::Job& j) {
               j.mutable_model()->set_attention_logit_softcapping(
                   std::numeric_limits<float>::infinity());
             }, "model.attention_logit_softcapping"},
        Rule{"NanFinalSoftCap", [](v1::Job& j) {
               j.mutable_model()->set_final_logit_softcapping(
                   std::numeric_limits<float>::quiet_NaN());
             }, "model.final_logit_softcapping"},
        // Megatron fuses no GeGLU of Gemma's: its glu() counts its copy.
        Rule{"FusedSwigluOnGemmasGeglu", [](v1::Job& j) {
               j.mutable_model()->set_mlp_activation(
                   v1::MLP_ACTIVATION_GEGLU);
               j.mutable_training()->set_fused_swiglu(true);
             }, "training.fused_swiglu"},
        Rule{"GluLinearCopyOnGemmasGeglu", [](v1::Job& j) {
               j.mutable_model()->set_mlp_activation(
                   v1::MLP_ACTIVATION_GEGLU);
               j.mutable_training()->set_glu_linear_copy(true);
             }, "training.glu_linear_copy"},
        Rule{"TopKAboveExperts", [](v1::Job& j) {
               j.mutable_model()->mutable_moe()->set_num_experts(4);
               j.mutable_model()->mutable_moe()->set_router_topk(5);
             }, "model.moe.router_topk"},
        // [RS] the router's settings, as transformer_config.py checks them.
        Rule{"RouterScoreUnknown", [](v1::Job& j) {
               auto& moe = *j.mutable_model()->mutable_moe();
               moe.set_num_experts(8);
               moe.set_router_topk(2);
               moe.set_router_score_function(
                   static_cast<v1::MoeConfig::RouterScore>(99));
             }, "model.moe.router_score_function"},
        Rule{"SoftmaxAfterTheTopOne", [](v1::Job& j) {
               auto& moe = *j.mutable_model()->mutable_moe();
               moe.set_num_experts(8);
               moe.set_router_topk(1);
               moe.set_router_score_function(
                   v1::MoeConfig::ROUTER_SCORE_SOFTMAX_AFTER_TOPK);
             }, "model.moe.router_score_function"},
        Rule{"GroupTopKWithoutGroups", [](v1::Job& j) {
               auto& moe = *j.mutable_model()->mutable_moe();
               moe.set_num_experts(8);
               moe.set_router_topk(2);
               moe.set_router_group_topk(2);
             }, "model.moe.router_num_groups"},
        Rule{"GroupsNotDividingExperts", [](v1::Job& j) {
               auto& moe = *j.mutable_model()->mutable_moe();
               moe.set_num_experts(8);
               moe.set_router_topk(2);
               moe.set_router_num_groups(3);
               moe.set_router_group_topk(1);
             }, "model.moe.router_num_groups"},
        Rule{"MoreSelectedGroupsThanGroups", [](v1::Job& j) {
               auto& moe = *j.mutable_model()->mutable_moe();
               moe.set_num_experts(8);
               moe.set_router_topk(2);
               moe.set_router_num_groups(2);
               moe.set_router_group_topk(4);
             }, "model.moe.router_group_topk"},
        Rule{"ExpertsNotMultipleOfExpertParallel", [](v1::Job& j) {
               j.mutable_model()->mutable_moe()->set_num_experts(6);
               j.mutable_model()->mutable_moe()->set_router_topk(2);
               j.mutable_parallel()->set_expert_parallel(4);
             }, "model.moe.num_experts"},
        // The flex dispatcher (DeepEP): a group of 1 (EP 1 x ETP 1), a size
        // DeepEP has no config for (EP 2 x ETP 6 would need 12; EP 1 x ETP
        // 4 = 4 is fine, so break it with ETP 1), drop-and-pad, odd SMs,
        // and SMs without flex.
        Rule{"FlexDispatcherNeedsAnExpertGroup", [](v1::Job& j) {
               auto& moe = *j.mutable_model()->mutable_moe();
               moe.set_num_experts(8);
               moe.set_router_topk(2);
               moe.set_token_dispatcher(v1::MoeConfig::DISPATCHER_FLEX);
               j.mutable_parallel()->set_expert_tensor_parallel(1);
             }, "parallel.expert_parallel"},
        Rule{"FlexDispatcherPadsNoCapacity", [](v1::Job& j) {
               auto& moe = *j.mutable_model()->mutable_moe();
               moe.set_num_experts(8);
               moe.set_router_topk(2);
               moe.set_token_dispatcher(v1::MoeConfig::DISPATCHER_FLEX);
               moe.set_capacity_factor(1);
               moe.set_pad_to_capacity(true);
             }, "model.moe.pad_to_capacity"},
        Rule{"FlexDispatcherSmsAreEven", [](v1::Job& j) {
               auto& moe = *j.mutable_model()->mutable_moe();
               moe.set_num_experts(8);
               moe.set_router_topk(2);
               moe.set_token_dispatcher(v1::MoeConfig::DISPATCHER_FLEX);
               moe.set_flex_dispatcher_num_sms(21);
             }, "model.moe.flex_dispatcher_num_sms"},
        Rule{"FlexDispatcherSmsAreBounded", [](v1::Job& j) {
               auto& moe = *j.mutable_model()->mutable_moe();
               moe.set_num_experts(8);
               moe.set_router_topk(2);
               moe.set_token_dispatcher(v1::MoeConfig::DISPATCHER_FLEX);
               moe.set_flex_dispatcher_num_sms(1u << 30);
             }, "model.moe.flex_dispatcher_num_sms"},
        Rule{"DeepEpSmsNeedTheFlexDispatcher", [](v1::Job& j) {
               auto& moe = *j.mutable_model()->mutable_moe();
               moe.set_num_experts(8);
               moe.set_router_topk(2);
               moe.set_flex_dispatcher_num_sms(24);
             }, "model.moe.flex_dispatcher_num_sms"},
        Rule{"ExpertGroupDoesNotDivideGpus", [](v1::Job& j) {
               j.mutable_model()->mutable_moe()->set_num_experts(24);
               j.mutable_model()->mutable_moe()->set_router_topk(2);
               j.mutable_parallel()->set_expert_parallel(3);
             }, "num_gpus"},
        Rule{"LayerPatternWrongLength", [](v1::Job& j) {
               j.mutable_model()->mutable_moe()->set_num_experts(8);
               j.mutable_model()->mutable_moe()->set_router_topk(2);
               j.mutable_model()->mutable_moe()->add_layer_pattern(1);
             }, "model.moe.layer_pattern"},
        Rule{"MoeWithTensorParallelNeedsSequenceParallel", [](v1::Job& j) {
               j.mutable_model()->mutable_moe()->set_num_experts(8);
               j.mutable_model()->mutable_moe()->set_router_topk(2);
               j.mutable_parallel()->set_sequence_parallel(false);
             }, "parallel.sequence_parallel"},
        Rule{"LoadImbalanceBelowOne", [](v1::Job& j) {
               j.mutable_model()->mutable_moe()->set_num_experts(8);
               j.mutable_model()->mutable_moe()->set_router_topk(2);
               j.mutable_model()->mutable_moe()->set_load_imbalance(0.5);
             }, "model.moe.load_imbalance"},
        Rule{"FsdpWithExperts", [](v1::Job& j) {
               j.mutable_parallel()->set_pipeline_parallel(1);  // not PP's rule
               j.mutable_model()->mutable_moe()->set_num_experts(8);
               j.mutable_model()->mutable_moe()->set_router_topk(2);
               j.mutable_parallel()->set_data_parallel_sharding(
                   v1::DATA_PARALLEL_SHARDING_OPTIM);
             }, "parallel.data_parallel_sharding"},
        // Megatron-FSDP's device mesh has no pipeline dimension
        // (mcore_fsdp_adapter.py): ValidJob has PP 2.
        Rule{"FsdpWithPipelineStages", [](v1::Job& j) {
               j.mutable_parallel()->set_data_parallel_sharding(
                   v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS);
             }, "parallel.data_parallel_sharding"},
        // The EP overlap under Megatron's rules (transformer_config.py).
        Rule{"ExpertOverlapNeedsExpertParallelism", [](v1::Job& j) {
               OverlapExperts(j);
               j.mutable_parallel()->set_expert_parallel(1);
             }, "model.moe.overlap_expert_parallel_comm"},
        Rule{"ExpertOverlapNeedsInterleaving", [](v1::Job& j) {
               OverlapExperts(j);
               j.mutable_parallel()->set_virtual_pipeline_stages(0);
             }, "model.moe.overlap_expert_parallel_comm"},
        Rule{"ExpertOverlapNeedsAnExchange", [](v1::Job& j) {
               OverlapExperts(j);
               j.mutable_model()->mutable_moe()->set_token_dispatcher(
                   v1::MoeConfig::DISPATCHER_ALLGATHER);
             }, "model.moe.overlap_expert_parallel_comm"},
        Rule{"ExpertOverlapNeeds16BitTraining", [](v1::Job& j) {
               OverlapExperts(j);
               j.mutable_training()->set_precision(v1::PRECISION_FP32);
             }, "model.moe.overlap_expert_parallel_comm"},
        Rule{"ExpertOverlapWithoutFullRecomputation", [](v1::Job& j) {
               OverlapExperts(j);
               j.mutable_training()->mutable_recompute()->set_granularity(
                   v1::Recompute::GRANULARITY_FULL);
             }, "model.moe.overlap_expert_parallel_comm"},
        Rule{"ExpertOverlapWithoutMoeRecomputation", [](v1::Job& j) {
               OverlapExperts(j);
               v1::Recompute& r = *j.mutable_training()->mutable_recompute();
               r.set_granularity(v1::Recompute::GRANULARITY_SELECTIVE);
               r.add_modules(v1::Recompute::MODULE_MOE);
             }, "model.moe.overlap_expert_parallel_comm"},
        Rule{"ExpertOverlapWithOneMtpLayerAtMost", [](v1::Job& j) {
               OverlapExperts(j);
               j.mutable_model()->set_mtp_num_layers(2);
             }, "model.moe.overlap_expert_parallel_comm"},
        // Megatron-Core 0.14 on: multi_token_prediction.py asserts one
        // layer a group for MTP under uniform recomputation.
        Rule{"MtpUnderUniformGroupsOfTwo", [](v1::Job& j) {
               j.mutable_model()->set_mtp_num_layers(1);
               UniformGroupsOf(2, j);
             }, "training.recompute.num_layers"},
        Rule{"MtpUnderUniformGroupsOfTwoAtCore0_14_0", [](v1::Job& j) {
               j.mutable_model()->set_mtp_num_layers(1);
               UniformGroupsOf(2, j);
               j.mutable_training()->set_megatron_core_version("0.14.0");
             }, "training.recompute.num_layers"},
        Rule{"MlaWithoutKvLatent", [](v1::Job& j) {
               j.mutable_model()->mutable_mla()->set_qk_head_dim(128);
             }, "model.mla.kv_lora_rank"},
        // --mla-down-proj-fusion: FusedMLASelfAttention asserts a Q latent
        // and cuts the TP-split output into latents (TP 4 here).
        Rule{"FusedMlaDownProjectionWithoutQLatent", [](v1::Job& j) {
               FusedMla(0, 512, 64, j);
             }, "model.mla.fused_down_projection"},
        Rule{"FusedMlaDownProjectionQLatentOverTp", [](v1::Job& j) {
               FusedMla(1538, 512, 64, j);
             }, "model.mla.q_lora_rank"},
        Rule{"FusedMlaDownProjectionKvLatentOverTp", [](v1::Job& j) {
               FusedMla(1536, 512, 66, j);
             }, "model.mla.kv_lora_rank + qk_pos_emb_head_dim"},
        Rule{"ZeroTensor", [](v1::Job& j) {
               j.mutable_parallel()->set_tensor_parallel(0);
             }, "parallel.tensor_parallel"},
        Rule{"ZeroPipeline", [](v1::Job& j) {
               j.mutable_parallel()->set_pipeline_parallel(0);
             }, "parallel.pipeline_parallel"},
        Rule{"ZeroContext", [](v1::Job& j) {
               j.mutable_parallel()->set_context_parallel(0);
             }, "parallel.context_parallel"},
        Rule{"ZeroGpus", [](v1::Job& j) { j.set_num_gpus(0); }, "num_gpus"},
        Rule{"ZeroMicroBatch", [](v1::Job& j) {
               j.mutable_training()->set_micro_batch_size(0);
             }, "training.micro_batch_size"},
        Rule{"ZeroSequence", [](v1::Job& j) {
               j.mutable_training()->set_seq_length(0);
             }, "training.seq_length"},
        Rule{"GpusNotMultipleOfTpPpCp",
             [](v1::Job& j) { j.set_num_gpus(40); }, "num_gpus"},
        Rule{"DataParallelContradicts", [](v1::Job& j) {
               j.mutable_parallel()->set_data_parallel(3);
             }, "parallel.data_parallel"},
        Rule{"LayersNotMultipleOfPipeline", [](v1::Job& j) {
               j.mutable_model()->set_num_layers(31);
             }, "model.num_layers"},
        Rule{"UnevenStagesWrongCount", [](v1::Job& j) {
               j.mutable_parallel()->add_layers_per_stage(32);
             }, "parallel.layers_per_stage"},
        Rule{"UnevenStagesWrongSum", [](v1::Job& j) {
               j.mutable_parallel()->add_layers_per_stage(15);
               j.mutable_parallel()->add_layers_per_stage(15);
             }, "parallel.layers_per_stage"},
        Rule{"InterleavedStagesNeedOneEntryPerChunk", [](v1::Job& j) {
               j.mutable_parallel()->set_virtual_pipeline_stages(2);
               j.mutable_parallel()->add_layers_per_stage(16);
               j.mutable_parallel()->add_layers_per_stage(16);
             }, "parallel.layers_per_stage"},
        Rule{"HeadsNotMultipleOfTensor", [](v1::Job& j) {
               j.mutable_model()->set_num_attention_heads(30);
               j.mutable_model()->set_num_query_groups(6);
               j.mutable_model()->set_hidden_size(30 * 128);
             }, "model.num_attention_heads"},
        Rule{"KvHeadsNotMultipleOfTensor", [](v1::Job& j) {
               j.mutable_model()->set_num_query_groups(2);
             }, "model.num_query_groups"},
        Rule{"HeadsNotMultipleOfKvHeads", [](v1::Job& j) {
               j.mutable_model()->set_num_query_groups(12);
             }, "model.num_attention_heads"},
        Rule{"HiddenNotMultipleOfHeads", [](v1::Job& j) {
               j.mutable_model()->set_hidden_size(4100);
             }, "model.hidden_size"},
        Rule{"SequenceNotMultipleOfTwiceContext", [](v1::Job& j) {
               j.mutable_training()->set_seq_length(8190);
             }, "training.seq_length"},
        Rule{"SequenceNotMultipleOfTensorWithSp", [](v1::Job& j) {
               j.mutable_parallel()->set_context_parallel(1);
               j.set_num_gpus(8);
               j.mutable_training()->set_seq_length(8194);
             }, "training.seq_length"},
        Rule{"GlobalBatchNotMultipleOfMbsTimesDp", [](v1::Job& j) {
               j.mutable_training()->set_global_batch_size(1023);
             }, "training.global_batch_size"},
        Rule{"ZeroLayers", [](v1::Job& j) {
               j.mutable_model()->set_num_layers(0);
             }, "model.num_layers"},
        Rule{"ZeroHidden", [](v1::Job& j) {
               j.mutable_model()->set_hidden_size(0);
             }, "model.hidden_size"},
        Rule{"ZeroFfn", [](v1::Job& j) {
               j.mutable_model()->set_ffn_hidden_size(0);
             }, "model.ffn_hidden_size"},
        Rule{"ZeroHeads", [](v1::Job& j) {
               j.mutable_model()->set_num_attention_heads(0);
             }, "model.num_attention_heads"},
        Rule{"ZeroKvHeads", [](v1::Job& j) {
               j.mutable_model()->set_num_query_groups(0);
             }, "model.num_query_groups"},
        Rule{"ZeroVocab", [](v1::Job& j) {
               j.mutable_model()->set_vocab_size(0);
             }, "model.vocab_size"},
        Rule{"VocabNotSplitOverTp", [](v1::Job& j) {
               j.mutable_model()->set_vocab_size(128257);  // TP 4
             }, "model.vocab_size"},
        Rule{"HugeVocabMultiple", [](v1::Job& j) {
               j.mutable_model()->set_vocab_size_divisible_by(
                   kMaxVocabSizeDivisibleBy + 1);
             }, "model.vocab_size_divisible_by"},
        Rule{"FusedSwigluOnGelu", [](v1::Job& j) {
               j.mutable_model()->set_mlp_activation(v1::MLP_ACTIVATION_GELU);
               j.mutable_training()->set_fused_swiglu(true);
             }, "training.fused_swiglu"},
        Rule{"Fp8ActivationInputWithoutTheFusedActivation", [](v1::Job& j) {
               j.mutable_training()->set_activation_fp8_input_store(true);
             }, "training.activation_fp8_input_store"},
        // Megatron asserts fp32 gradient reduction off; Megatron-FSDP does
        // not read the patterns.
        Rule{"Fp32LocalAccumulationWithFp32GradientReduction",
             [](v1::Job& j) {
               j.mutable_training()->set_precision(
                   v1::PRECISION_BF16_FP32_GRADS);
               j.mutable_training()->set_fp32_local_grad_accumulation(true);
             }, "training.fp32_local_grad_accumulation"},
        Rule{"Fp32LocalAccumulationUnderFsdp", [](v1::Job& j) {
               j.mutable_training()->set_precision(
                   v1::PRECISION_BF16_BF16_GRADS);
               j.mutable_training()->set_fp32_local_grad_accumulation(true);
               j.mutable_parallel()->set_data_parallel_sharding(
                   v1::DATA_PARALLEL_SHARDING_OPTIM);
               j.mutable_parallel()->set_pipeline_parallel(1);
             }, "training.fp32_local_grad_accumulation"},
        // transformer_config.py: "moe_act in recompute_modules is only
        // supported with moe_grouped_gemm".
        Rule{"MoeActRecomputedWithoutGroupedGemm", [](v1::Job& j) {
               j.mutable_model()->mutable_moe()->set_num_experts(8);
               j.mutable_model()->mutable_moe()->set_router_topk(2);
               v1::Recompute& r = *j.mutable_training()->mutable_recompute();
               r.set_granularity(v1::Recompute::GRANULARITY_SELECTIVE);
               r.add_modules(v1::Recompute::MODULE_MOE_ACT);
             }, "training.recompute.modules"},
        Rule{"GroupedTensorWithoutGroupedGemm", [](v1::Job& j) {
               j.mutable_model()->mutable_moe()->set_num_experts(8);
               j.mutable_model()->mutable_moe()->set_router_topk(2);
               j.mutable_model()->mutable_moe()->set_grouped_tensor(true);
             }, "model.moe.grouped_tensor"},
        // TEGroupedMLP asserts _is_fused_impl_supported: no expert TP
        // (ValidJob's TP 4 is its expert TP by default).
        Rule{"FusedGroupedMlpWithExpertTensorParallelism", [](v1::Job& j) {
               v1::MoeConfig& moe = *j.mutable_model()->mutable_moe();
               moe.set_num_experts(8);
               moe.set_router_topk(2);
               moe.set_grouped_gemm(true);
               moe.set_grouped_tensor(true);
               moe.set_fused_grouped_mlp(true);
             }, "model.moe.fused_grouped_mlp"},
        // --fp8-output-proj: MXFP8 only; the head may not skip its weight
        // (tied on one stage) nor defer its wgrad (Megatron raises).
        Rule{"Fp8OutputProjectionWithoutMxfp8", [](v1::Job& j) {
               j.mutable_accelerator()->set_name("h100-80gb");
               j.mutable_training()->mutable_fp8()->set_output_projection(
                   true);
             }, "training.fp8.output_projection"},
        // TransformerEngine's recipes where its GEMMs exist
        // (quantization.py check_recipe_support): fp8 from sm89, blockwise
        // from sm90, MXFP8 on Blackwell.
        Rule{"Fp8OnAmpere", [](v1::Job& j) {
               j.mutable_training()->mutable_fp8();
             }, "training.fp8.recipe"},
        Rule{"BlockwiseFp8OnAda", [](v1::Job& j) {
               j.mutable_accelerator()->set_name("l40s-48gb");
               j.mutable_training()->mutable_fp8()->set_recipe(
                   v1::Fp8::RECIPE_BLOCKWISE);
             }, "training.fp8.recipe"},
        Rule{"Nvfp4OnHopper", [](v1::Job& j) {
               j.mutable_accelerator()->set_name("h100-80gb");
               j.mutable_training()->mutable_fp8()->set_recipe(
                   v1::Fp8::RECIPE_NVFP4);
             }, "training.fp8.recipe"},
        // --fp4-param-gather's NVFP4 weight shards are not modelled.
        Rule{"Nvfp4WeightsKeptInFp4", [](v1::Job& j) {
               j.mutable_accelerator()->set_name("b200-180gb");
               j.mutable_training()->mutable_fp8()->set_recipe(
                   v1::Fp8::RECIPE_NVFP4);
               j.mutable_training()->mutable_fp8()->set_param_gather(true);
             }, "training.fp8.param_gather"},
        Rule{"Mxfp8OnHopper", [](v1::Job& j) {
               j.mutable_accelerator()->set_name("h100-80gb");
               j.mutable_training()->mutable_fp8()->set_recipe(
                   v1::Fp8::RECIPE_MXFP8);
             }, "training.fp8.recipe"},
        Rule{"Fp8OutputProjectionTiedOnOneStage", [](v1::Job& j) {
               Mxfp8Head(j);
               j.mutable_model()->set_tie_word_embeddings(true);
               j.mutable_parallel()->set_pipeline_parallel(1);
             }, "training.fp8.output_projection"},
        Rule{"Fp8OutputProjectionWithDeferredWgrad", [](v1::Job& j) {
               Mxfp8Head(j);
               j.mutable_training()->set_defer_embedding_wgrad(true);
             }, "training.fp8.output_projection"},
        // Under Lion and Muon Megatron turns the distributed optimizer into
        // its layer-wise one [LW] from core 0.18.0 (0.16 and 0.17 assert
        // against either with it; 0.18's plain distributed optimizer, for
        // the parameters Muon leaves, takes Adam only), which asserts one
        // instance and no expert parameter outside its matrices; fp8
        // weights in it are not modelled. Megatron asserts against
        // Megatron-FSDP and raises in fp16; --use-precision-aware-optimizer
        // needs Adam.
        Rule{"MuonWithTheDistributedOptimizerBeforeCore0_18",
             [](v1::Job& j) {
               j.mutable_training()->set_optimizer(v1::OPTIMIZER_MUON);
               j.mutable_training()->set_megatron_core_version("0.17.0");
             }, "parallel.distributed_optimizer"},
        Rule{"LionWithTheDistributedOptimizerBeforeCore0_18",
             [](v1::Job& j) {
               j.mutable_training()->set_optimizer(v1::OPTIMIZER_LION);
               j.mutable_training()->set_megatron_core_version("0.17.1");
             }, "parallel.distributed_optimizer"},
        Rule{"MuonsScalarLionUnderCore0_18sDistributedOptimizer",
             [](v1::Job& j) {
               j.mutable_training()->set_optimizer(v1::OPTIMIZER_MUON);
               j.mutable_training()->mutable_muon()->set_scalar_optimizer(
                   v1::OPTIMIZER_LION);
               j.mutable_training()->set_megatron_core_version("0.18.2");
             }, "training.muon.scalar_optimizer"},
        Rule{"LayerWiseOptimizerInstances", [](v1::Job& j) {
               j.mutable_training()->set_optimizer(v1::OPTIMIZER_LION);
               j.mutable_parallel()->set_distributed_optimizer_instances(2);
             }, "parallel.distributed_optimizer_instances"},
        Rule{"LayerWiseExpertBiases", [](v1::Job& j) {
               OverlapExperts(j);
               j.mutable_model()->set_linear_bias(true);
               j.mutable_training()->set_optimizer(v1::OPTIMIZER_MUON);
             }, "model.linear_bias"},
        Rule{"LayerWiseFp8Weights", [](v1::Job& j) {
               j.mutable_accelerator()->set_name("b200-180gb");
               j.mutable_training()->set_optimizer(v1::OPTIMIZER_MUON);
               j.mutable_training()->mutable_fp8()->set_recipe(
                   v1::Fp8::RECIPE_MXFP8);
               j.mutable_training()->mutable_fp8()->set_param_gather(true);
             }, "training.fp8.param_gather"},
        // 2 x 2 packings x 4,096 matrices x 4,096 ranks used > 2^21 steps.
        Rule{"LayerWisePackingPastItsBound", [](v1::Job& j) {
               j.mutable_training()->set_optimizer(v1::OPTIMIZER_MUON);
               j.mutable_model()->set_num_layers(1024);
               j.set_num_gpus(1u << 24);
               j.mutable_training()->set_global_batch_size(1u << 22);
             }, "parallel.distributed_optimizer"},
        Rule{"LionUnderMegatronFsdp", [](v1::Job& j) {
               j.mutable_training()->set_optimizer(v1::OPTIMIZER_LION);
               j.mutable_parallel()->set_distributed_optimizer(false);
               j.mutable_parallel()->set_data_parallel_sharding(
                   v1::DATA_PARALLEL_SHARDING_OPTIM);
             }, "training.optimizer"},
        Rule{"LionInFp16", [](v1::Job& j) {
               j.mutable_training()->set_optimizer(v1::OPTIMIZER_LION);
               j.mutable_parallel()->set_distributed_optimizer(false);
               j.mutable_training()->set_precision(v1::PRECISION_FP16);
             }, "training.optimizer"},
        Rule{"LionInAReleaseWithoutIt", [](v1::Job& j) {
               j.mutable_training()->set_optimizer(v1::OPTIMIZER_LION);
               j.mutable_parallel()->set_distributed_optimizer(false);
               j.mutable_training()->set_megatron_core_version("0.16.1");
             }, "training.optimizer"},
        // Muon under the same rules, in the releases that have it, with
        // its settings for Muon only.
        Rule{"MuonUnderMegatronFsdp", [](v1::Job& j) {
               j.mutable_training()->set_optimizer(v1::OPTIMIZER_MUON);
               j.mutable_parallel()->set_distributed_optimizer(false);
               j.mutable_parallel()->set_data_parallel_sharding(
                   v1::DATA_PARALLEL_SHARDING_OPTIM);
             }, "training.optimizer"},
        Rule{"MuonInFp16", [](v1::Job& j) {
               j.mutable_training()->set_optimizer(v1::OPTIMIZER_MUON);
               j.mutable_parallel()->set_distributed_optimizer(false);
               j.mutable_training()->set_precision(v1::PRECISION_FP16);
             }, "training.optimizer"},
        Rule{"MuonInAReleaseWithoutIt", [](v1::Job& j) {
               j.mutable_training()->set_optimizer(v1::OPTIMIZER_MUON);
               j.mutable_parallel()->set_distributed_optimizer(false);
               j.mutable_training()->set_megatron_core_version("0.15.3");
             }, "training.optimizer"},
        Rule{"MuonScalarLionInCore0_16", [](v1::Job& j) {
               j.mutable_training()->set_optimizer(v1::OPTIMIZER_MUON);
               j.mutable_parallel()->set_distributed_optimizer(false);
               j.mutable_training()->set_megatron_core_version("0.16.1");
               j.mutable_training()->mutable_muon()->set_scalar_optimizer(
                   v1::OPTIMIZER_LION);
             }, "training.muon.scalar_optimizer"},
        Rule{"MuonScalarSgd", [](v1::Job& j) {
               j.mutable_training()->set_optimizer(v1::OPTIMIZER_MUON);
               j.mutable_parallel()->set_distributed_optimizer(false);
               j.mutable_training()->mutable_muon()->set_scalar_optimizer(
                   v1::OPTIMIZER_SGD);
             }, "training.muon.scalar_optimizer"},
        Rule{"MuonUnknownTpMode", [](v1::Job& j) {
               j.mutable_training()->set_optimizer(v1::OPTIMIZER_MUON);
               j.mutable_parallel()->set_distributed_optimizer(false);
               j.mutable_training()->mutable_muon()->set_tp_mode(
                   static_cast<v1::Muon::TpMode>(9));
             }, "training.muon.tp_mode"},
        Rule{"MuonSettingsWithAdam", [](v1::Job& j) {
               j.mutable_training()->mutable_muon()->set_nesterov(true);
             }, "training.muon"},
        Rule{"PrecisionAwareOptimizerWithLion", [](v1::Job& j) {
               j.mutable_training()->set_optimizer(v1::OPTIMIZER_LION);
               j.mutable_parallel()->set_distributed_optimizer(false);
               j.mutable_training()->mutable_precision_aware_optimizer();
             }, "training.precision_aware_optimizer"},
        // --tp-comm-overlap asserts sequence parallelism, off at TP 1.
        Rule{"TpCommOverlapWithoutSequenceParallelism", [](v1::Job& j) {
               j.mutable_training()->set_tp_comm_overlap(
                   v1::TrainingConfig::TP_COMM_OVERLAP_DEFAULT);
               j.mutable_parallel()->set_sequence_parallel(false);
             }, "training.tp_comm_overlap"},
        Rule{"TpCommOverlapAtTensorParallelOne", [](v1::Job& j) {
               j.mutable_training()->set_tp_comm_overlap(
                   v1::TrainingConfig::TP_COMM_OVERLAP_CUSTOM_CONFIG);
               j.mutable_parallel()->set_tensor_parallel(1);
             }, "training.tp_comm_overlap"},
        Rule{"TpCommOverlapUnknown", [](v1::Job& j) {
               j.mutable_training()->set_tp_comm_overlap(
                   static_cast<v1::TrainingConfig::TpCommOverlap>(7));
             }, "training.tp_comm_overlap"},
        // Interleaved 1F1B's micro-batch groups (Megatron's schedules.py):
        // ValidJob runs m = 1024 / 2 = 512 micro-batches over p = 2.
        Rule{"MicrobatchGroupWithoutInterleaving", [](v1::Job& j) {
               j.mutable_parallel()->set_microbatch_group_size(4);
             }, "parallel.microbatch_group_size"},
        Rule{"MicrobatchGroupBelowThePipeline", [](v1::Job& j) {
               j.mutable_parallel()->set_virtual_pipeline_stages(2);
               j.mutable_parallel()->set_microbatch_group_size(1);
             }, "parallel.microbatch_group_size"},
        Rule{"MicrobatchGroupAboveTheStepsMicrobatches", [](v1::Job& j) {
               j.mutable_parallel()->set_virtual_pipeline_stages(2);
               j.mutable_parallel()->set_microbatch_group_size(513);
             }, "parallel.microbatch_group_size"},
        Rule{"MicrobatchGroupLeavesALastGroupShorterThanThePipeline",
             [](v1::Job& j) {  // 512 % 7 = 1 < p
               j.mutable_parallel()->set_virtual_pipeline_stages(2);
               j.mutable_parallel()->set_microbatch_group_size(7);
             }, "parallel.microbatch_group_size"},
        Rule{"InterleavingWithFewerMicrobatchesThanStages", [](v1::Job& j) {
               j.mutable_parallel()->set_virtual_pipeline_stages(2);
               j.mutable_training()->set_global_batch_size(2);  // m = 1
             }, "training.global_batch_size"},
        Rule{"InterleavingWithMicrobatchesNotAMultipleOfStages",
             [](v1::Job& j) {
               j.mutable_parallel()->set_virtual_pipeline_stages(2);
               j.mutable_training()->set_global_batch_size(6);  // m = 3
             }, "training.global_batch_size"},
        Rule{"DeferredEmbeddingWgradWithoutPipelining", [](v1::Job& j) {
               j.mutable_parallel()->set_pipeline_parallel(1);
               j.mutable_training()->set_defer_embedding_wgrad(true);
             }, "training.defer_embedding_wgrad"},
        Rule{"DeferredEmbeddingWgradWithoutAStep", [](v1::Job& j) {
               j.mutable_training()->set_global_batch_size(0);
               j.mutable_training()->set_defer_embedding_wgrad(true);
             }, "training.defer_embedding_wgrad"},
        Rule{"WgradDeferralLimitWithoutDeferral", [](v1::Job& j) {
               j.mutable_training()->set_wgrad_deferral_limit(4);
             }, "training.wgrad_deferral_limit"},
        // The partial distributed optimizer (d x c = 4 here).
        Rule{"OptimizerInstancesDivideDataParallelRanks", [](v1::Job& j) {
               j.mutable_parallel()->set_distributed_optimizer_instances(3);
             }, "parallel.distributed_optimizer_instances"},
        // EP 4 x ETP 4 x PP 2 = 32 GPUs: an expert-data-parallel group of
        // 1, which 4 instances (dividing d x c = 4) do not divide.
        Rule{"OptimizerInstancesDivideExpertDataParallelRanks",
             [](v1::Job& j) {
               j.mutable_model()->mutable_moe()->set_num_experts(8);
               j.mutable_model()->mutable_moe()->set_router_topk(2);
               j.mutable_parallel()->set_expert_parallel(4);
               j.mutable_parallel()->set_distributed_optimizer_instances(4);
             }, "parallel.distributed_optimizer_instances"},
        Rule{"BucketCountBesideBucketSize", [](v1::Job& j) {
               j.mutable_parallel()->set_ddp_num_buckets(4);
               j.mutable_parallel()->set_ddp_bucket_size(1000000);
             }, "parallel.ddp_num_buckets"},
        Rule{"OptimizerInstancesNeedTheDistributedOptimizer", [](v1::Job& j) {
               j.mutable_parallel()->set_distributed_optimizer(false);
               j.mutable_parallel()->set_distributed_optimizer_instances(2);
             }, "parallel.distributed_optimizer_instances"},
        Rule{"OptimizerInstancesWithFsdpAreHybridFsdp", [](v1::Job& j) {
               j.mutable_parallel()->set_data_parallel_sharding(
                   v1::DATA_PARALLEL_SHARDING_OPTIM);
               j.mutable_parallel()->set_distributed_optimizer_instances(2);
             }, "parallel.distributed_optimizer_instances"},
        Rule{"SharedExpertOverlapNeedsAllToAll", [](v1::Job& j) {
               auto& moe = *j.mutable_model()->mutable_moe();
               moe.set_num_experts(8);
               moe.set_router_topk(2);
               moe.set_shared_expert_ffn_hidden_size(1024);
               moe.set_shared_expert_overlap(true);
               moe.set_token_dispatcher(v1::MoeConfig::DISPATCHER_ALLGATHER);
             }, "model.moe.shared_expert_overlap"},
        Rule{"SharedExpertOverlapWithoutItsRecomputation", [](v1::Job& j) {
               auto& moe = *j.mutable_model()->mutable_moe();
               moe.set_num_experts(8);
               moe.set_router_topk(2);
               moe.set_shared_expert_ffn_hidden_size(1024);
               moe.set_shared_expert_overlap(true);
               v1::Recompute& r = *j.mutable_training()->mutable_recompute();
               r.set_granularity(v1::Recompute::GRANULARITY_SELECTIVE);
               r.add_modules(v1::Recompute::MODULE_SHARED_EXPERTS);
             }, "model.moe.shared_expert_overlap"},
        // Context parallelism's exchange: TP 4 leaves 8 query and 2 key
        // heads a rank; CP 2 here.
        Rule{"AllToAllScattersEveryRanksKeyHeads", [](v1::Job& j) {
               j.mutable_parallel()->set_context_parallel(4);
               j.mutable_parallel()->set_pipeline_parallel(1);
               j.mutable_parallel()->set_context_parallel_comm(
                   v1::CONTEXT_PARALLEL_COMM_A2A);
             }, "parallel.context_parallel_comm"},
        Rule{"HierarchicalAllToAllScattersEveryRanksKeyHeads",
             [](v1::Job& j) {
               j.mutable_parallel()->set_context_parallel(8);
               j.mutable_parallel()->set_pipeline_parallel(1);
               j.mutable_parallel()->set_tensor_parallel(2);
               j.set_num_gpus(16);
               j.mutable_training()->set_global_batch_size(4);
               j.mutable_parallel()->set_context_parallel_comm(
                   v1::CONTEXT_PARALLEL_COMM_A2A_P2P);
               j.mutable_parallel()->set_context_parallel_a2a_size(8);
             }, "parallel.context_parallel_comm"},
        Rule{"HierarchicalAllToAllNeedsItsSize", [](v1::Job& j) {
               j.mutable_parallel()->set_context_parallel_comm(
                   v1::CONTEXT_PARALLEL_COMM_A2A_P2P);
             }, "parallel.context_parallel_a2a_size"},
        Rule{"AllToAllSizeOnlyWithTheHierarchicalExchange", [](v1::Job& j) {
               j.mutable_parallel()->set_context_parallel_comm(
                   v1::CONTEXT_PARALLEL_COMM_A2A);
               j.mutable_parallel()->set_context_parallel_a2a_size(2);
             }, "parallel.context_parallel_a2a_size"},
        Rule{"AllToAllSizeDividesContextParallel", [](v1::Job& j) {
               j.mutable_parallel()->set_context_parallel_comm(
                   v1::CONTEXT_PARALLEL_COMM_A2A_P2P);
               j.mutable_parallel()->set_context_parallel_a2a_size(4);
             }, "parallel.context_parallel"},
        // Attention sinks: the kernel said, cuDNN's over an all-to-all
        // under CP (ValidJob: CP 2, point-to-point).
        Rule{"SinksNeedTheirKernelSaid", [](v1::Job& j) {
               j.mutable_model()->set_softmax_type(
                   v1::SOFTMAX_TYPE_LEARNABLE);
             }, "model.softmax_type"},
        Rule{"SinksDoNotRunInFlashAttention", [](v1::Job& j) {
               j.mutable_model()->set_softmax_type(
                   v1::SOFTMAX_TYPE_OFF_BY_ONE);
               j.mutable_training()->set_attention_kernel(
                   v1::ATTENTION_KERNEL_FLASH);
             }, "model.softmax_type"},
        Rule{"SinksUnderContextParallelRunOverAnAllToAll", [](v1::Job& j) {
               j.mutable_model()->set_softmax_type(
                   v1::SOFTMAX_TYPE_LEARNABLE);
               j.mutable_training()->set_flash_attention_disabled(true);
             }, "parallel.context_parallel_comm"},
        // Sliding windows under CP: an all-to-all or an all-gather only
        // (TE's context_parallel.py asserts; ValidJob: CP 2, p2p).
        Rule{"WindowsUnderContextParallelNeedAnAllToAllOrGather",
             [](v1::Job& j) { j.mutable_model()->set_sliding_window(true); },
             "parallel.context_parallel_comm"},
        Rule{"WindowsUnderHierarchicalContextParallel", [](v1::Job& j) {
               j.mutable_model()->set_sliding_window(true);
               j.mutable_parallel()->set_context_parallel_comm(
                   v1::CONTEXT_PARALLEL_COMM_A2A_P2P);
               j.mutable_parallel()->set_context_parallel_a2a_size(2);
             }, "parallel.context_parallel_comm"},
        Rule{"UnknownSoftmaxType", [](v1::Job& j) {
               j.mutable_model()->set_softmax_type(
                   static_cast<v1::SoftmaxType>(7));
             }, "model.softmax_type"},
        Rule{"UnknownContextParallelComm", [](v1::Job& j) {
               j.mutable_parallel()->set_context_parallel_comm(
                   static_cast<v1::ContextParallelComm>(9));
             }, "parallel.context_parallel_comm"},
        Rule{"DistributedSavedActivationsNeedFullRecomputation",
             [](v1::Job& j) {
               j.mutable_parallel()->set_sequence_parallel(false);
               j.mutable_training()
                   ->mutable_recompute()
                   ->set_distribute_saved_activations(true);
             }, "training.recompute.distribute_saved_activations"},
        Rule{"DistributedSavedActivationsNotBesideSequenceParallelism",
             DistributeSavedInputs,
             "training.recompute.distribute_saved_activations"},
        Rule{"DistributedSavedActivationsNeedTensorParallelism",
             [](v1::Job& j) {
               j.mutable_parallel()->set_tensor_parallel(1);
               j.mutable_parallel()->set_sequence_parallel(false);
               DistributeSavedInputs(j);
             }, "training.recompute.distribute_saved_activations"},
        Rule{"GluLinearCopyIsTheUnfusedSwiglusOnly", [](v1::Job& j) {
               j.mutable_training()->set_fused_swiglu(true);
               j.mutable_training()->set_glu_linear_copy(true);
             }, "training.glu_linear_copy"},
        Rule{"GluLinearCopyNeedsASwigluMlp", [](v1::Job& j) {
               j.mutable_model()->set_mlp_activation(v1::MLP_ACTIVATION_GELU);
               j.mutable_training()->set_glu_linear_copy(true);
             }, "training.glu_linear_copy"},
        Rule{"NoGpuMemory", [](v1::Job& j) {
               j.mutable_accelerator()->set_memory_bytes(0);
             }, "accelerator.memory_bytes"},
        Rule{"UnknownPrecision", [](v1::Job& j) {
               j.mutable_training()->set_precision(
                   static_cast<v1::Precision>(77));
             }, "training.precision"},
        Rule{"QkL2NormBesideLearnedNorms", [](v1::Job& j) {
               j.mutable_model()->set_qk_norm(true);
               j.mutable_model()->set_qk_l2_norm(true);
             }, "model.qk_l2_norm"},
        Rule{"QkL2NormWithLatentAttention", [](v1::Job& j) {
               j.mutable_model()->set_qk_l2_norm(true);
               v1::MlaConfig& mla = *j.mutable_model()->mutable_mla();
               mla.set_kv_lora_rank(512);
               mla.set_qk_head_dim(128);
               mla.set_qk_pos_emb_head_dim(64);
               mla.set_v_head_dim(128);
             }, "model.qk_l2_norm"},
        Rule{"LocalLayerSpecWithAnotherAttention", [](v1::Job& j) {
               j.mutable_training()->set_local_layer_spec(true);
               j.mutable_training()->set_attention_kernel(
                   v1::ATTENTION_KERNEL_FLASH);
             }, "training.local_layer_spec"},
        Rule{"AbsurdPipeline", [](v1::Job& j) {
               j.mutable_parallel()->set_pipeline_parallel(1u << 31);
               j.mutable_parallel()->set_tensor_parallel(1);
               j.mutable_parallel()->set_context_parallel(1);
               j.set_num_gpus(1u << 31);
               j.mutable_model()->set_num_layers(1u << 31);
             }, "parallel.pipeline_parallel"}),
    [](const ::testing::TestParamInfo<Rule>& info) { return info.param.name; });

// A soft-capped model resolves to the unfused attention NeMo and
// Megatron-Bridge run by default, which takes no context parallelism; at
// CP 1 it is valid, and so is FlexAttention (the flash kernel given).
TEST(ValidationTest, SoftCappedScoresResolveUnfusedWithoutContextParallel) {
  v1::Job job = testing::PaperJob("llama-3.1-8b", "h100-80gb", 4, 2, 2, 1, 32,
                                  8192);
  job.mutable_model()->set_attention_logit_softcapping(50);
  absl::StatusOr<v1::Job> resolved = ResolveJob(job);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->training().attention_kernel(),
            v1::ATTENTION_KERNEL_UNFUSED);
  const absl::Status cp = ValidateJob(*resolved);
  EXPECT_NE(cp.message().find("Gemma2DotProductAttention"), std::string::npos)
      << cp;
  job.mutable_parallel()->set_context_parallel(1);
  job.set_num_gpus(16);
  resolved = ResolveJob(job);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_TRUE(ValidateJob(*resolved).ok()) << ValidateJob(*resolved);
  // FlexAttention (the flash kernel given) without a mask or dropout.
  job.mutable_training()->set_attention_kernel(v1::ATTENTION_KERNEL_FLASH);
  resolved = ResolveJob(job);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->training().attention_kernel(),
            v1::ATTENTION_KERNEL_FLASH);
  EXPECT_TRUE(ValidateJob(*resolved).ok()) << ValidateJob(*resolved);
}

// Each exchange where its heads split (TP 4: 8 query and 2 key heads a
// rank, CP 2), and any without CP, where no exchange runs.
TEST(ValidationTest, ContextParallelExchangesThatSplitTheHeadsAreValid) {
  for (v1::ContextParallelComm comm :
       {v1::CONTEXT_PARALLEL_COMM_P2P, v1::CONTEXT_PARALLEL_COMM_ALL_GATHER,
        v1::CONTEXT_PARALLEL_COMM_A2A, v1::CONTEXT_PARALLEL_COMM_A2A_P2P}) {
    v1::Job job = ValidJob();
    job.mutable_parallel()->set_context_parallel_comm(comm);
    if (comm == v1::CONTEXT_PARALLEL_COMM_A2A_P2P) {
      job.mutable_parallel()->set_context_parallel_a2a_size(2);
    }
    EXPECT_TRUE(ValidateJob(job).ok()) << v1::ContextParallelComm_Name(comm);
    // Sliding windows run CP over an all-to-all or an all-gather.
    v1::Job windowed = job;
    windowed.mutable_model()->set_sliding_window(true);
    EXPECT_EQ(ValidateJob(windowed).ok(),
              comm == v1::CONTEXT_PARALLEL_COMM_ALL_GATHER ||
                  comm == v1::CONTEXT_PARALLEL_COMM_A2A)
        << v1::ContextParallelComm_Name(comm);
    job.mutable_parallel()->set_context_parallel(1);
    job.mutable_parallel()->set_tensor_parallel(8);
    EXPECT_TRUE(ValidateJob(job).ok()) << v1::ContextParallelComm_Name(comm);
    windowed = job;
    windowed.mutable_model()->set_sliding_window(true);
    EXPECT_TRUE(ValidateJob(windowed).ok())  // no CP: any exchange unused
        << v1::ContextParallelComm_Name(comm);
  }
}

// Megatron runs a micro-batch group of N >= p whose last group, m % N, is
// 0 or at least p: p = 2, m = 512, N = 3 leaves 2; N = 512 is one group.
TEST(ValidationTest, MicrobatchGroupsMegatronRunsAreValid) {
  for (uint32_t group : {0u, 2u, 3u, 256u, 512u}) {
    v1::Job job = ValidJob();
    job.mutable_parallel()->set_virtual_pipeline_stages(2);
    job.mutable_parallel()->set_microbatch_group_size(group);
    EXPECT_TRUE(ValidateJob(job).ok()) << group << ": " << ValidateJob(job);
  }
}

TEST(ValidationTest, TheExpertOverlapUnderMegatronsRulesIsValid) {
  v1::Job job = ValidJob();
  OverlapExperts(job);
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
}

// fp8 with experts, MLA and MTP is modelled (moe_terms.cc [F8]): accepted.
// The recipe refused where TransformerEngine raises is named as the job
// gives it (the default: delayed scaling), with TE's own reason.
TEST(ValidationTest, Fp8OnAnA100SaysWhy) {
  v1::Job job = ValidJob();
  job.mutable_training()->mutable_fp8();
  EXPECT_EQ(ValidateJob(job).message(),
            "training.fp8.recipe: fp8 (delayed scaling, the default) needs "
            "an Ada, Hopper or Blackwell GPU (TransformerEngine: 'Device "
            "compute capability 8.9 or higher required for FP8 execution') "
            "(got a100-40gb)");
  job.mutable_accelerator()->set_name("l40s-48gb");
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
  job.mutable_accelerator()->set_name("b300-288gb");
  job.mutable_training()->mutable_fp8()->set_recipe(v1::Fp8::RECIPE_MXFP8);
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
  job.mutable_accelerator()->clear_name();
  job.mutable_accelerator()->set_memory_bytes(80e9);  // unknown: unchecked
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
}

TEST(ValidationTest, Fp8WithExpertsLatentAttentionAndMtpIsModelled) {
  v1::Job job = ValidJob();
  job.mutable_model()->mutable_moe()->set_num_experts(8);
  job.mutable_model()->mutable_moe()->set_router_topk(2);
  v1::MlaConfig& mla = *job.mutable_model()->mutable_mla();
  mla.set_kv_lora_rank(512);
  mla.set_qk_head_dim(128);
  mla.set_qk_pos_emb_head_dim(64);
  mla.set_v_head_dim(128);
  job.mutable_model()->set_mtp_num_layers(1);
  job.mutable_accelerator()->set_name("h100-80gb");
  job.mutable_training()->mutable_fp8()->set_recipe(
      v1::Fp8::RECIPE_BLOCKWISE);
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
}

// Hidden-state mixing mixes the depths after the first: Megatron's
// transformer_config.py raises below two MTP layers.
TEST(ValidationTest, MtpHiddenStateMixingNeedsTwoMtpLayers) {
  v1::Job job = ValidJob();
  job.mutable_model()->set_mtp_hidden_state_mixing(true);
  job.mutable_model()->set_mtp_num_layers(1);
  EXPECT_EQ(ValidateJob(job).message(),
            "model.mtp_hidden_state_mixing: needs model.mtp_num_layers of 2 "
            "or more (Megatron's transformer_config.py raises) (got 1 MTP "
            "layers)");
  job.mutable_model()->set_mtp_num_layers(2);
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
}

// Standalone MTP (parallel.mtp_pipeline_rank) under Megatron's layout
// rules (pipeline_parallel_layer_layout.py): MTP layers to place, on a
// rank of the pipeline, after every transformer layer; the last rank is
// beside the loss, where any split is valid.
TEST(ValidationTest, StandaloneMtpFollowsMegatronsLayoutRules) {
  v1::Job job = ValidJob();  // 32 layers over PP 2
  v1::ParallelConfig& par = *job.mutable_parallel();
  par.set_mtp_pipeline_rank(0);
  EXPECT_EQ(ValidateJob(job).message(),
            "parallel.mtp_pipeline_rank: needs model.mtp_num_layers (got 0)");
  job.mutable_model()->set_mtp_num_layers(1);
  EXPECT_EQ(ValidateJob(job).message(),
            "parallel.mtp_pipeline_rank: off the last rank needs "
            "parallel.layers_per_stage, with no transformer layer after the "
            "MTP layers' stage (got 0, even stages)");
  par.add_layers_per_stage(16);
  par.add_layers_per_stage(16);
  EXPECT_EQ(ValidateJob(job).message(),
            "parallel.mtp_pipeline_rank: puts the MTP layers in stage 0 "
            "(rank 0's last chunk), before stage 1's transformer layers; "
            "Megatron needs every transformer layer first (got 0, "
            "parallel.layers_per_stage[1] = 16)");
  par.set_layers_per_stage(0, 32);
  par.set_layers_per_stage(1, 0);
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
  par.set_mtp_pipeline_rank(2);
  EXPECT_EQ(ValidateJob(job).message(),
            "parallel.mtp_pipeline_rank: must be below "
            "parallel.pipeline_parallel = 2 (got 2)");
  par.set_mtp_pipeline_rank(1);
  par.set_layers_per_stage(0, 16);
  par.set_layers_per_stage(1, 16);
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
}

// An allocated vocabulary must split over TP; a tokenizer's, with
// Megatron's multiple, is padded to one.
// MTP layers with uniform recomputation: groups of one layer, or any
// groups under a release before Megatron-Core 0.14.0rc6 (which does not
// recompute them), and block recomputation (which skips them) are valid.
TEST(ValidationTest, MtpUnderRecomputationMegatronRuns) {
  v1::Job job = ValidJob();
  job.mutable_model()->set_mtp_num_layers(1);
  UniformGroupsOf(1, job);
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
  UniformGroupsOf(2, job);
  job.mutable_training()->set_megatron_core_version("0.14.0rc5");
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
  job.mutable_training()->clear_megatron_core_version();
  job.mutable_training()->mutable_recompute()->set_method(
      v1::Recompute::METHOD_BLOCK);
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
}

TEST(ValidationTest, ATokenizersVocabularyWithItsMultipleNeedNotSplit) {
  v1::Job job = ValidJob();
  job.mutable_model()->set_vocab_size(128257);
  EXPECT_EQ(ValidateJob(job).message(),
            "model.vocab_size: must be a multiple of parallel.tensor_parallel "
            "= 4 (got 128257)");
  job.mutable_model()->set_vocab_size_divisible_by(128);
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
}

TEST(ValidationTest, HugeProductsDoNotOverflowIntoAFalsePass) {
  // t*p*c = 2^96 would wrap in 64-bit arithmetic; it must simply not divide.
  v1::Job job = ValidJob();
  job.mutable_parallel()->set_tensor_parallel(1u << 31);
  job.mutable_parallel()->set_pipeline_parallel(2);
  job.mutable_parallel()->set_context_parallel(1u << 31);
  job.set_num_gpus(4294967295u);
  const absl::Status status = ValidateJob(job);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message().rfind("num_gpus:", 0), 0u) << status;
}

TEST(ValidationTest, SequenceOnlyNeedsEvenChunksWhenContextParallel) {
  v1::Job job = ValidJob();
  job.mutable_parallel()->set_context_parallel(1);
  job.mutable_parallel()->set_tensor_parallel(1);
  job.set_num_gpus(2);
  job.mutable_training()->set_seq_length(8191);
  job.mutable_training()->set_global_batch_size(0);
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
}

TEST(ValidationTest, NoSequenceParallelLiftsTheTensorRule) {
  v1::Job job = ValidJob();
  job.mutable_parallel()->set_context_parallel(1);
  job.set_num_gpus(8);
  job.mutable_parallel()->set_sequence_parallel(false);
  job.mutable_training()->set_seq_length(8194);
  job.mutable_training()->set_global_batch_size(0);
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
}

// Megatron splits each context-parallel rank's s / c tokens over TP under
// sequence parallelism: 8200 is a multiple of 8 and of 2 x 4, but 2050
// tokens a CP rank do not split over TP 8.
TEST(ValidationTest, SequenceParallelSplitsEachContextRanksTokens) {
  v1::Job job = ValidJob();
  job.mutable_parallel()->set_tensor_parallel(8);
  job.mutable_parallel()->set_context_parallel(4);
  job.mutable_parallel()->set_pipeline_parallel(1);
  job.set_num_gpus(32);
  job.mutable_training()->set_seq_length(8200);
  job.mutable_training()->set_global_batch_size(0);
  const absl::Status status = ValidateJob(job);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message().rfind("training.seq_length:", 0), 0u) << status;
  EXPECT_NE(status.message().find("= 32"), std::string::npos) << status;
  job.mutable_training()->set_seq_length(8192);
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
}

// Attention sinks run where the job says: cuDNN's fused attention
// (FlashAttention off; over an all-to-all under CP), TransformerEngine's
// unfused attention, or fp32's, which an unset kernel resolves to.
TEST(ValidationTest, SinksRunInTheKernelTheJobSays) {
  v1::Job base = ValidJob();
  base.mutable_model()->set_softmax_type(v1::SOFTMAX_TYPE_LEARNABLE);
  v1::Job cudnn = base;
  cudnn.mutable_training()->set_flash_attention_disabled(true);
  cudnn.mutable_parallel()->set_context_parallel_comm(
      v1::CONTEXT_PARALLEL_COMM_A2A);
  EXPECT_TRUE(ValidateJob(cudnn).ok()) << ValidateJob(cudnn);
  cudnn.mutable_training()->set_attention_kernel(v1::ATTENTION_KERNEL_FLASH);
  EXPECT_TRUE(ValidateJob(cudnn).ok()) << ValidateJob(cudnn);
  v1::Job unfused = base;
  unfused.mutable_parallel()->set_context_parallel(1);
  unfused.mutable_parallel()->set_pipeline_parallel(4);
  unfused.mutable_training()->set_attention_kernel(
      v1::ATTENTION_KERNEL_UNFUSED);
  EXPECT_TRUE(ValidateJob(unfused).ok()) << ValidateJob(unfused);
  v1::Job fp32 = unfused;
  fp32.mutable_training()->set_attention_kernel(
      v1::ATTENTION_KERNEL_UNSPECIFIED);
  fp32.mutable_training()->set_precision(v1::PRECISION_FP32);
  EXPECT_TRUE(ValidateJob(fp32).ok()) << ValidateJob(fp32);
}

// Lion without the distributed optimizer, in bf16 or fp32: what Megatron
// runs as Lion (ValidationRuleTest has the rest).
TEST(ValidationTest, LionWithoutTheDistributedOptimizerIsValid) {
  v1::Job job = ValidJob();
  job.mutable_training()->set_optimizer(v1::OPTIMIZER_LION);
  job.mutable_parallel()->set_distributed_optimizer(false);
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
  job.mutable_training()->set_precision(v1::PRECISION_FP32);
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
  // Core 0.17.0 brought Lion.
  job.mutable_training()->set_megatron_core_version("0.17.0");
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
}

// [LW] With the distributed optimizer, Megatron's layer-wise one: valid
// from core 0.18.0, and without a release; Muon's scalar Lion where the
// release's distributed optimizer takes it (0.19 on) or reads past it
// (0.18.0 keeps Adam).
TEST(ValidationTest, LionAndMuonWithTheLayerWiseOptimizerAreValid) {
  for (const v1::Optimizer o : {v1::OPTIMIZER_LION, v1::OPTIMIZER_MUON}) {
    v1::Job job = ValidJob();
    job.mutable_training()->set_optimizer(o);
    EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
    for (const char* release : {"0.18.0", "0.18.2", "0.19.0", "0.20.0"}) {
      job.mutable_training()->set_megatron_core_version(release);
      EXPECT_TRUE(ValidateJob(job).ok()) << release << ValidateJob(job);
    }
  }
  v1::Job muon = ValidJob();
  muon.mutable_training()->set_optimizer(v1::OPTIMIZER_MUON);
  muon.mutable_training()->mutable_muon()->set_scalar_optimizer(
      v1::OPTIMIZER_LION);
  for (const char* release : {"", "0.18.0", "0.19.0"}) {
    muon.mutable_training()->set_megatron_core_version(release);
    EXPECT_TRUE(ValidateJob(muon).ok()) << release << ValidateJob(muon);
  }
}

// Muon likewise, from core 0.16.0, with each of its settings.
TEST(ValidationTest, MuonWithoutTheDistributedOptimizerIsValid) {
  v1::Job job = ValidJob();
  job.mutable_training()->set_optimizer(v1::OPTIMIZER_MUON);
  job.mutable_parallel()->set_distributed_optimizer(false);
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
  v1::Muon& muon = *job.mutable_training()->mutable_muon();
  muon.set_tp_mode(v1::Muon::TP_MODE_DISTRIBUTED);
  muon.set_fp32_iteration(true);
  muon.set_nesterov(true);
  muon.set_no_split_qkv(true);
  muon.set_scalar_optimizer(v1::OPTIMIZER_LION);
  job.mutable_training()->set_megatron_core_version("0.17.0");
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
  muon.set_scalar_optimizer(v1::OPTIMIZER_ADAM);
  job.mutable_training()->set_megatron_core_version("0.16.0");
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
}

TEST(ValidationTest, ThresholdMustBeAFraction) {
  EXPECT_TRUE(ValidateThreshold(0.8).ok());
  EXPECT_TRUE(ValidateThreshold(1.0).ok());
  for (double bad : {0.0, -0.5, 1.01, std::nan(""), double{INFINITY}}) {
    const absl::Status s = ValidateThreshold(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(s.message().rfind("threshold:", 0), 0u) << s;
  }
}

}  // namespace
}  // namespace memgate
