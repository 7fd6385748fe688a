#include "tests/job_field_cases.h"

#include <cstdint>

#include "tests/test_util.h"

namespace memgate::testing {
namespace {

// A dense Llama-style job on 16 H100s: TP 2, CP 2, PP 2, DP 2 with
// sequence parallelism and the distributed optimizer, bf16 with fp32
// gradients, 32 micro-batches a step.
v1::Job DenseJob() {
  return JobFromText(R"pb(
    model {
      num_layers: 8
      hidden_size: 2048
      ffn_hidden_size: 5632
      num_attention_heads: 16
      num_query_groups: 4
      vocab_size: 32000
    }
    parallel {
      tensor_parallel: 2
      context_parallel: 2
      pipeline_parallel: 2
      sequence_parallel: true
      distributed_optimizer: true
    }
    training {
      micro_batch_size: 1
      seq_length: 4096
      global_batch_size: 64
      precision: PRECISION_BF16_FP32_GRADS
    }
    accelerator { name: "h100-80gb" }
    num_gpus: 16
  )pb");
}

// DenseJob with 8 routed experts (top 2, grouped GEMMs) over EP 2, ETP 1.
v1::Job MoeJob() {
  v1::Job job = DenseJob();
  v1::MoeConfig& moe = *job.mutable_model()->mutable_moe();
  moe.set_num_experts(8);
  moe.set_router_topk(2);
  moe.set_expert_ffn_hidden_size(1408);
  moe.set_grouped_gemm(true);
  job.mutable_parallel()->set_expert_parallel(2);
  job.mutable_parallel()->set_expert_tensor_parallel(1);
  return job;
}

// MoeJob with DeepSeek-style multi-latent attention.
v1::Job MlaJob() {
  v1::Job job = MoeJob();
  v1::MlaConfig& mla = *job.mutable_model()->mutable_mla();
  mla.set_q_lora_rank(512);
  mla.set_kv_lora_rank(256);
  mla.set_qk_head_dim(64);
  mla.set_qk_pos_emb_head_dim(32);
  mla.set_v_head_dim(64);
  return job;
}

void Nothing(v1::Job&) {}

v1::ModelConfig& M(v1::Job& j) { return *j.mutable_model(); }
v1::MoeConfig& Moe(v1::Job& j) { return *j.mutable_model()->mutable_moe(); }
v1::MlaConfig& Mla(v1::Job& j) { return *j.mutable_model()->mutable_mla(); }
v1::ParallelConfig& P(v1::Job& j) { return *j.mutable_parallel(); }
v1::TrainingConfig& T(v1::Job& j) { return *j.mutable_training(); }
v1::Recompute& R(v1::Job& j) {
  return *j.mutable_training()->mutable_recompute();
}
v1::PrecisionAwareOptimizer& Pao(v1::Job& j) {
  return *j.mutable_training()->mutable_precision_aware_optimizer();
}
v1::Fp8& F8(v1::Job& j) { return *j.mutable_training()->mutable_fp8(); }
v1::Muon& Mu(v1::Job& j) { return *j.mutable_training()->mutable_muon(); }

// DenseJob under Muon, which Megatron runs without the distributed
// optimizer, at 256 tokens: its step's Newton-Schulz copies stand above
// the freed activations (memory_model.cc [MU]).
void Muon(v1::Job& j) {
  T(j).set_optimizer(v1::OPTIMIZER_MUON);
  T(j).set_seq_length(256);
  P(j).set_distributed_optimizer(false);
}

// Without a pipeline: 16 GPUs at TP 2, CP 2, DP 4.
void NoPipeline(v1::Job& j) { P(j).set_pipeline_parallel(1); }
// Context parallelism 1 (16 GPUs at TP 2, PP 2, DP 4): what Megatron's
// own and TransformerEngine's unfused attention need.
void NoContextParallel(v1::Job& j) { P(j).set_context_parallel(1); }
void TensorwiseFp8(v1::Job& j) { F8(j).set_recipe(v1::Fp8::RECIPE_TENSORWISE); }
void FullUniform(v1::Job& j) {
  R(j).set_granularity(v1::Recompute::GRANULARITY_FULL);
  R(j).set_method(v1::Recompute::METHOD_UNIFORM);
  R(j).set_num_layers(1);
}

}  // namespace

std::vector<FieldCase> JobFieldCases() {
  using E = Effect;
  const auto chg = E::kChangesMemory;
  const auto bad = E::kRefused;
  const auto same = E::kNoMemoryChange;
  return {
      // Job.
      {"name", DenseJob, Nothing, [](v1::Job& j) { j.set_name("x"); }, same,
       "a label for logs"},
      {"num_gpus", DenseJob, Nothing, [](v1::Job& j) { j.set_num_gpus(32); },
       chg},
      // ModelConfig.
      {"model.name", DenseJob, Nothing,
       [](v1::Job& j) { M(j).set_name("mixtral-8x7b"); }, chg},
      {"model.num_layers", DenseJob, Nothing,
       [](v1::Job& j) { M(j).set_num_layers(16); }, chg},
      {"model.hidden_size", DenseJob, Nothing,
       [](v1::Job& j) { M(j).set_hidden_size(4096); }, chg},
      {"model.ffn_hidden_size", DenseJob, Nothing,
       [](v1::Job& j) { M(j).set_ffn_hidden_size(8192); }, chg},
      {"model.num_attention_heads", DenseJob, Nothing,
       [](v1::Job& j) { M(j).set_num_attention_heads(32); }, chg},
      {"model.num_query_groups", DenseJob, Nothing,
       [](v1::Job& j) { M(j).set_num_query_groups(8); }, chg},
      {"model.vocab_size", DenseJob, Nothing,
       [](v1::Job& j) { M(j).set_vocab_size(64000); }, chg},
      {"model.tie_word_embeddings", DenseJob, NoPipeline,
       [](v1::Job& j) { M(j).set_tie_word_embeddings(true); }, chg},
      {"model.head_dim", DenseJob, Nothing,
       [](v1::Job& j) { M(j).set_head_dim(64); }, chg},
      {"model.mlp_activation", DenseJob, Nothing,
       [](v1::Job& j) { M(j).set_mlp_activation(v1::MLP_ACTIVATION_GELU); },
       chg},
      {"model.normalization", DenseJob, Nothing,
       [](v1::Job& j) { M(j).set_normalization(v1::NORMALIZATION_LAYERNORM); },
       chg},
      {"model.linear_bias", DenseJob, Nothing,
       [](v1::Job& j) { M(j).set_linear_bias(true); }, chg},
      {"model.qkv_bias", DenseJob, Nothing,
       [](v1::Job& j) { M(j).set_qkv_bias(true); }, chg},
      {"model.position_embedding", DenseJob, Nothing,
       [](v1::Job& j) {
         M(j).set_position_embedding(v1::POSITION_EMBEDDING_LEARNED_ABSOLUTE);
       },
       chg},
      {"model.max_position_embeddings", DenseJob,
       [](v1::Job& j) {
         M(j).set_position_embedding(v1::POSITION_EMBEDDING_LEARNED_ABSOLUTE);
         M(j).set_max_position_embeddings(4096);
       },
       [](v1::Job& j) { M(j).set_max_position_embeddings(8192); }, chg},
      {"model.qk_norm", DenseJob, Nothing,
       [](v1::Job& j) { M(j).set_qk_norm(true); }, chg},
      {"model.sandwich_norms", DenseJob, Nothing,
       [](v1::Job& j) { M(j).set_sandwich_norms(true); }, chg},
      {"model.final_logit_softcapping", DenseJob, Nothing,
       [](v1::Job& j) { M(j).set_final_logit_softcapping(30); }, chg},
      {"model.moe", DenseJob, Nothing, [](v1::Job& j) { Moe(j); }, bad},
      {"model.mla", DenseJob, Nothing, [](v1::Job& j) { Mla(j); }, bad},
      {"model.mtp_num_layers", DenseJob, Nothing,
       [](v1::Job& j) { M(j).set_mtp_num_layers(1); }, chg},
      {"model.vocab_size_divisible_by", DenseJob, Nothing,
       [](v1::Job& j) { M(j).set_vocab_size_divisible_by(384); }, chg},
      {"model.activation_clamp", DenseJob,
       [](v1::Job& j) {
         M(j).set_mlp_activation(v1::MLP_ACTIVATION_QUICK_GEGLU);
       },
       [](v1::Job& j) { M(j).set_activation_clamp(true); }, chg},
      {"model.attention_logit_softcapping", DenseJob, NoContextParallel,
       [](v1::Job& j) { M(j).set_attention_logit_softcapping(50); }, chg},
      {"model.qk_l2_norm", DenseJob, Nothing,
       [](v1::Job& j) { M(j).set_qk_l2_norm(true); }, chg},
      {"model.softmax_type", DenseJob,
       [](v1::Job& j) {
         NoContextParallel(j);
         T(j).set_attention_kernel(v1::ATTENTION_KERNEL_UNFUSED);
       },
       [](v1::Job& j) { M(j).set_softmax_type(v1::SOFTMAX_TYPE_LEARNABLE); },
       chg},
      {"model.mtp_repeated_layer", DenseJob,
       [](v1::Job& j) { M(j).set_mtp_num_layers(2); },
       [](v1::Job& j) { M(j).set_mtp_repeated_layer(true); }, chg},
      {"model.mtp_hidden_state_mixing", DenseJob,
       [](v1::Job& j) { M(j).set_mtp_num_layers(2); },
       [](v1::Job& j) { M(j).set_mtp_hidden_state_mixing(true); }, chg},
      // With attention dropout and FlashAttention off, TransformerEngine's
      // cuDNN attention takes no window: unfused, the scores kept.
      {"model.sliding_window", DenseJob,
       [](v1::Job& j) {
         NoContextParallel(j);
         T(j).set_flash_attention_disabled(true);
         T(j).set_attention_dropout(0.1f);
       },
       [](v1::Job& j) { M(j).set_sliding_window(true); }, chg},
      // MoeConfig.
      {"model.moe.num_experts", MoeJob, Nothing,
       [](v1::Job& j) { Moe(j).set_num_experts(16); }, chg},
      {"model.moe.router_topk", MoeJob, Nothing,
       [](v1::Job& j) { Moe(j).set_router_topk(4); }, chg},
      {"model.moe.expert_ffn_hidden_size", MoeJob, Nothing,
       [](v1::Job& j) { Moe(j).set_expert_ffn_hidden_size(2816); }, chg},
      {"model.moe.shared_expert_ffn_hidden_size", MoeJob, Nothing,
       [](v1::Job& j) { Moe(j).set_shared_expert_ffn_hidden_size(1408); }, chg},
      {"model.moe.layer_frequency", MoeJob, Nothing,
       [](v1::Job& j) { Moe(j).set_layer_frequency(2); }, chg},
      {"model.moe.layer_pattern", MoeJob, Nothing,
       [](v1::Job& j) {
         for (int i = 0; i < 8; ++i) Moe(j).add_layer_pattern(i > 0);
       },
       chg},
      {"model.moe.shared_expert_gate", MoeJob,
       [](v1::Job& j) { Moe(j).set_shared_expert_ffn_hidden_size(1408); },
       [](v1::Job& j) { Moe(j).set_shared_expert_gate(true); }, chg},
      {"model.moe.token_dispatcher", MoeJob, Nothing,
       [](v1::Job& j) {
         Moe(j).set_token_dispatcher(v1::MoeConfig::DISPATCHER_ALLGATHER);
       },
       chg},
      {"model.moe.capacity_factor", MoeJob, Nothing,
       [](v1::Job& j) { Moe(j).set_capacity_factor(1.0f); }, chg},
      // Below the capacity the load margin (x1.25) decides, padded the
      // capacity.
      {"model.moe.pad_to_capacity", MoeJob,
       [](v1::Job& j) { Moe(j).set_capacity_factor(2.0f); },
       [](v1::Job& j) { Moe(j).set_pad_to_capacity(true); }, chg},
      {"model.moe.load_imbalance", MoeJob, Nothing,
       [](v1::Job& j) { Moe(j).set_load_imbalance(1.0f); }, chg},
      {"model.moe.grouped_gemm", MoeJob, Nothing,
       [](v1::Job& j) { Moe(j).set_grouped_gemm(false); }, same,
       "the grouped GEMMs run the same experts on the same tokens; they "
       "decide only what Megatron allows beside them (moe_act, the "
       "GroupedTensor path), which validation checks"},
      {"model.moe.router_dtype", MoeJob, Nothing,
       [](v1::Job& j) { Moe(j).set_router_dtype(v1::DTYPE_BF16); }, chg},
      {"model.moe.flex_dispatcher_num_sms", MoeJob,
       [](v1::Job& j) {
         Moe(j).set_token_dispatcher(v1::MoeConfig::DISPATCHER_FLEX);
       },
       [](v1::Job& j) { Moe(j).set_flex_dispatcher_num_sms(24); }, chg},
      {"model.moe.overlap_expert_parallel_comm", MoeJob,
       [](v1::Job& j) { P(j).set_virtual_pipeline_stages(2); },
       [](v1::Job& j) { Moe(j).set_overlap_expert_parallel_comm(true); }, chg},
      {"model.moe.routing_probs_applied", MoeJob, Nothing,
       [](v1::Job& j) {
         Moe(j).set_routing_probs_applied(
             v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS);
       },
       chg},
      {"model.moe.expert_activation_unfused", MoeJob, Nothing,
       [](v1::Job& j) { Moe(j).set_expert_activation_unfused(true); }, chg},
      {"model.moe.expert_glu_linear_copy", MoeJob,
       [](v1::Job& j) { Moe(j).set_expert_activation_unfused(true); },
       [](v1::Job& j) { Moe(j).set_expert_glu_linear_copy(true); }, chg},
      {"model.moe.shared_expert_overlap", MoeJob,
       [](v1::Job& j) { Moe(j).set_shared_expert_ffn_hidden_size(1408); },
       [](v1::Job& j) { Moe(j).set_shared_expert_overlap(true); }, chg},
      {"model.moe.input_jitter", MoeJob, Nothing,
       [](v1::Job& j) { Moe(j).set_input_jitter(true); }, chg},
      // [RS] Unknown router settings count their largest; each known one
      // counts what it keeps.
      {"model.moe.router_score_function", MoeJob, Nothing,
       [](v1::Job& j) {
         Moe(j).set_router_score_function(
             v1::MoeConfig::ROUTER_SCORE_SOFTMAX_AFTER_TOPK);
       },
       chg},
      {"model.moe.router_fusion", MoeJob, Nothing,
       [](v1::Job& j) { Moe(j).set_router_fusion(true); }, chg},
      {"model.moe.router_num_groups", MoeJob, Nothing,
       [](v1::Job& j) {
         Moe(j).set_router_num_groups(4);
         Moe(j).set_router_group_topk(2);
       },
       chg},
      {"model.moe.router_group_topk", MoeJob,
       [](v1::Job& j) { Moe(j).set_router_num_groups(4); },
       [](v1::Job& j) { Moe(j).set_router_group_topk(2); }, chg},
      {"model.moe.aux_loss", MoeJob, Nothing,
       [](v1::Job& j) { Moe(j).set_aux_loss(false); }, chg},
      {"model.moe.z_loss", MoeJob, Nothing,
       [](v1::Job& j) { Moe(j).set_z_loss(false); }, chg},
      // The op's multiply by the probabilities (later releases).
      {"model.moe.expert_activation_te_op", MoeJob,
       [](v1::Job& j) {
         Moe(j).set_routing_probs_applied(
             v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS);
       },
       [](v1::Job& j) { Moe(j).set_expert_activation_te_op(true); }, chg},
      {"model.moe.grouped_tensor", MoeJob, Nothing,
       [](v1::Job& j) { Moe(j).set_grouped_tensor(true); }, chg},
      {"model.moe.fused_grouped_mlp", MoeJob,
       [](v1::Job& j) { Moe(j).set_grouped_tensor(true); },
       [](v1::Job& j) { Moe(j).set_fused_grouped_mlp(true); }, same,
       "it keeps what the fused SwiGLU experts keep; its 256-row padding "
       "is the GroupedTensor path's, which it needs (grouped_tensor)"},
      // MlaConfig.
      {"model.mla.q_lora_rank", MlaJob, Nothing,
       [](v1::Job& j) { Mla(j).set_q_lora_rank(1024); }, chg},
      {"model.mla.kv_lora_rank", MlaJob, Nothing,
       [](v1::Job& j) { Mla(j).set_kv_lora_rank(512); }, chg},
      {"model.mla.qk_head_dim", MlaJob, Nothing,
       [](v1::Job& j) { Mla(j).set_qk_head_dim(128); }, chg},
      {"model.mla.qk_pos_emb_head_dim", MlaJob, Nothing,
       [](v1::Job& j) { Mla(j).set_qk_pos_emb_head_dim(64); }, chg},
      {"model.mla.v_head_dim", MlaJob, Nothing,
       [](v1::Job& j) { Mla(j).set_v_head_dim(128); }, chg},
      {"model.mla.fused_down_projection", MlaJob, Nothing,
       [](v1::Job& j) { Mla(j).set_fused_down_projection(true); }, chg},
      // ParallelConfig.
      {"parallel.tensor_parallel", DenseJob, Nothing,
       [](v1::Job& j) { P(j).set_tensor_parallel(4); }, chg},
      {"parallel.pipeline_parallel", DenseJob, Nothing,
       [](v1::Job& j) { P(j).set_pipeline_parallel(4); }, chg},
      {"parallel.context_parallel", DenseJob, Nothing,
       [](v1::Job& j) { P(j).set_context_parallel(4); }, chg},
      {"parallel.data_parallel", DenseJob, Nothing,
       [](v1::Job& j) { P(j).set_data_parallel(4); }, bad},
      {"parallel.sequence_parallel", DenseJob, Nothing,
       [](v1::Job& j) { P(j).set_sequence_parallel(false); }, chg},
      {"parallel.distributed_optimizer", DenseJob, Nothing,
       [](v1::Job& j) { P(j).set_distributed_optimizer(false); }, chg},
      // The distributed optimizer's bucket padding (memory_model.cc [BP]).
      {"parallel.ddp_bucket_size", DenseJob, Nothing,
       [](v1::Job& j) { P(j).set_ddp_bucket_size(1000000); }, chg},
      {"parallel.ddp_num_buckets", DenseJob, Nothing,
       [](v1::Job& j) { P(j).set_ddp_num_buckets(100); }, chg},
      {"parallel.pad_buckets_for_high_nccl_busbw", DenseJob, Nothing,
       [](v1::Job& j) { P(j).set_pad_buckets_for_high_nccl_busbw(true); },
       chg},
      {"parallel.layers_per_stage", DenseJob, Nothing,
       [](v1::Job& j) {
         P(j).add_layers_per_stage(3);
         P(j).add_layers_per_stage(5);
       },
       chg},
      // Standalone MTP: all 8 layers and the MTP layer on rank 0, the
      // loss alone on rank 1 (a layout "Et*8m|L").
      {"parallel.mtp_pipeline_rank", DenseJob,
       [](v1::Job& j) {
         M(j).set_mtp_num_layers(1);
         P(j).add_layers_per_stage(8);
         P(j).add_layers_per_stage(0);
       },
       [](v1::Job& j) { P(j).set_mtp_pipeline_rank(0); }, chg},
      {"parallel.virtual_pipeline_stages", DenseJob, Nothing,
       [](v1::Job& j) { P(j).set_virtual_pipeline_stages(2); }, chg},
      {"parallel.microbatch_group_size", DenseJob,
       [](v1::Job& j) { P(j).set_virtual_pipeline_stages(2); },
       [](v1::Job& j) { P(j).set_microbatch_group_size(4); }, chg},
      {"parallel.expert_parallel", MoeJob, Nothing,
       [](v1::Job& j) { P(j).set_expert_parallel(4); }, chg},
      {"parallel.expert_tensor_parallel", MoeJob, Nothing,
       [](v1::Job& j) { P(j).set_expert_tensor_parallel(2); }, chg},
      {"parallel.data_parallel_sharding", DenseJob, NoPipeline,
       [](v1::Job& j) {
         P(j).set_data_parallel_sharding(
             v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS);
       },
       chg},
      {"parallel.fsdp_double_buffer", DenseJob,
       [](v1::Job& j) {
         NoPipeline(j);
         P(j).set_data_parallel_sharding(
             v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS_PARAMS);
       },
       [](v1::Job& j) { P(j).set_fsdp_double_buffer(true); }, chg},
      {"parallel.fsdp_communication_unit_size", DenseJob,
       [](v1::Job& j) {
         NoPipeline(j);
         P(j).set_data_parallel_sharding(
             v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS_PARAMS);
       },
       [](v1::Job& j) { P(j).set_fsdp_communication_unit_size(100000000); },
       chg},
      {"parallel.distributed_optimizer_instances", DenseJob, Nothing,
       [](v1::Job& j) { P(j).set_distributed_optimizer_instances(2); }, chg},
      {"parallel.context_parallel_comm", DenseJob, Nothing,
       [](v1::Job& j) {
         P(j).set_context_parallel_comm(v1::CONTEXT_PARALLEL_COMM_ALL_GATHER);
       },
       chg},
      {"parallel.context_parallel_a2a_size", DenseJob,
       [](v1::Job& j) {
         P(j).set_tensor_parallel(1);
         P(j).set_context_parallel(4);
         P(j).set_context_parallel_comm(v1::CONTEXT_PARALLEL_COMM_A2A_P2P);
         P(j).set_context_parallel_a2a_size(2);
       },
       [](v1::Job& j) { P(j).set_context_parallel_a2a_size(4); }, same,
       "any inner all-to-all level of 2 or more keeps the attention output "
       "twice, each copy the same size: its heads scatter as its tokens "
       "gather (memory_model.cc [CPX])"},
      // Recompute.
      {"training.recompute.granularity", DenseJob, Nothing,
       [](v1::Job& j) {
         R(j).set_granularity(v1::Recompute::GRANULARITY_SELECTIVE);
       },
       same,
       "selective recomputation of core attention (its default) under "
       "FlashAttention: no scores are stored to drop"},
      {"training.recompute.method", DenseJob, FullUniform,
       [](v1::Job& j) { R(j).set_method(v1::Recompute::METHOD_BLOCK); }, chg},
      {"training.recompute.num_layers", DenseJob, FullUniform,
       [](v1::Job& j) { R(j).set_num_layers(2); }, chg},
      {"training.recompute.modules", DenseJob,
       [](v1::Job& j) {
         R(j).set_granularity(v1::Recompute::GRANULARITY_SELECTIVE);
       },
       [](v1::Job& j) { R(j).add_modules(v1::Recompute::MODULE_MLP); }, chg},
      {"training.recompute.distribute_saved_activations", DenseJob,
       [](v1::Job& j) {
         P(j).set_sequence_parallel(false);
         FullUniform(j);
       },
       [](v1::Job& j) { R(j).set_distribute_saved_activations(true); }, chg},
      // TrainingConfig.
      {"training.micro_batch_size", DenseJob, Nothing,
       [](v1::Job& j) { T(j).set_micro_batch_size(2); }, chg},
      {"training.seq_length", DenseJob, Nothing,
       [](v1::Job& j) { T(j).set_seq_length(8192); }, chg},
      {"training.global_batch_size", DenseJob, Nothing,
       [](v1::Job& j) { T(j).set_global_batch_size(2); }, chg},
      {"training.precision", DenseJob, NoContextParallel,
       [](v1::Job& j) { T(j).set_precision(v1::PRECISION_FP32); }, chg},
      {"training.hidden_dropout", DenseJob, Nothing,
       [](v1::Job& j) { T(j).set_hidden_dropout(0.1f); }, chg},
      {"training.attention_dropout", DenseJob, Nothing,
       [](v1::Job& j) { T(j).set_attention_dropout(0.1f); }, same,
       "FlashAttention drops inside the kernel and regenerates the mask "
       "from its seed: no mask stored"},
      {"training.attention_kernel", DenseJob, NoContextParallel,
       [](v1::Job& j) {
         T(j).set_attention_kernel(v1::ATTENTION_KERNEL_UNFUSED);
       },
       chg},
      {"training.recompute", DenseJob, Nothing, [](v1::Job& j) { R(j); }, same,
       "an empty recompute message recomputes nothing"},
      {"training.optimizer", DenseJob, Nothing,
       [](v1::Job& j) { T(j).set_optimizer(v1::OPTIMIZER_SGD); }, chg},
      {"training.sgd_momentum", DenseJob,
       [](v1::Job& j) { T(j).set_optimizer(v1::OPTIMIZER_SGD); },
       [](v1::Job& j) { T(j).set_sgd_momentum(0); }, chg},
      // Muon's settings apply to Muon only; each changes its step (a
      // small FC1 leaves QKV the largest matrix; with GQA 4 at these
      // sizes split and whole happen to tie), the scalar optimizer
      // its states where the release honours it (core 0.19).
      {"training.muon", DenseJob, Nothing, [](v1::Job& j) { Mu(j); }, bad},
      {"training.muon.tp_mode", DenseJob, Muon,
       [](v1::Job& j) { Mu(j).set_tp_mode(v1::Muon::TP_MODE_BLOCKWISE); },
       chg},
      {"training.muon.fp32_iteration", DenseJob, Muon,
       [](v1::Job& j) { Mu(j).set_fp32_iteration(true); }, chg},
      {"training.muon.nesterov", DenseJob, Muon,
       [](v1::Job& j) { Mu(j).set_nesterov(true); }, chg},
      {"training.muon.no_split_qkv", DenseJob,
       [](v1::Job& j) {
         Muon(j);
         M(j).set_ffn_hidden_size(512);
         M(j).set_num_query_groups(16);
       },
       [](v1::Job& j) { Mu(j).set_no_split_qkv(true); }, chg},
      {"training.muon.scalar_optimizer", DenseJob,
       [](v1::Job& j) {
         Muon(j);
         T(j).set_megatron_core_version("0.19.0");
       },
       [](v1::Job& j) { Mu(j).set_scalar_optimizer(v1::OPTIMIZER_LION); },
       chg},
      // TransformerEngine's FusedAdam keeps a bf16 weight's master as an
      // int16 remainder (--store-param-remainders, on by default).
      {"training.precision_aware_optimizer", DenseJob, Nothing,
       [](v1::Job& j) { Pao(j); }, chg},
      {"training.precision_aware_optimizer.main_grads_dtype", DenseJob,
       [](v1::Job& j) { Pao(j); },
       [](v1::Job& j) { Pao(j).set_main_grads_dtype(v1::DTYPE_BF16); }, chg},
      // fp16 masters against fp32 ones (remainders are 2 B as well).
      {"training.precision_aware_optimizer.main_params_dtype", DenseJob,
       [](v1::Job& j) { Pao(j).set_store_param_remainders(false); },
       [](v1::Job& j) { Pao(j).set_main_params_dtype(v1::DTYPE_FP16); }, chg},
      {"training.precision_aware_optimizer.exp_avg_dtype", DenseJob,
       [](v1::Job& j) { Pao(j); },
       [](v1::Job& j) { Pao(j).set_exp_avg_dtype(v1::DTYPE_BF16); }, chg},
      {"training.precision_aware_optimizer.exp_avg_sq_dtype", DenseJob,
       [](v1::Job& j) { Pao(j); },
       [](v1::Job& j) { Pao(j).set_exp_avg_sq_dtype(v1::DTYPE_BF16); }, chg},
      {"training.precision_aware_optimizer.store_param_remainders", DenseJob,
       [](v1::Job& j) { Pao(j); },
       [](v1::Job& j) { Pao(j).set_store_param_remainders(false); }, chg},
      {"training.optimizer_offload_fraction", DenseJob,
       [](v1::Job& j) { Pao(j); },
       [](v1::Job& j) { T(j).set_optimizer_offload_fraction(0.5); }, chg},
      {"training.fp8", DenseJob, Nothing, [](v1::Job& j) { F8(j); }, chg},
      // MXFP8 on Blackwell, where TransformerEngine runs it.
      {"training.fp8.recipe", DenseJob,
       [](v1::Job& j) {
         F8(j);
         j.mutable_accelerator()->set_name("b200-180gb");
       },
       [](v1::Job& j) { F8(j).set_recipe(v1::Fp8::RECIPE_MXFP8); }, chg},
      {"training.fp8.param_gather", DenseJob, [](v1::Job& j) { F8(j); },
       [](v1::Job& j) { F8(j).set_param_gather(true); }, chg},
      // The delayed recipe's amax history: 4 B a row of each quantizer.
      {"training.fp8.amax_history_len", DenseJob, [](v1::Job& j) { F8(j); },
       [](v1::Job& j) { F8(j).set_amax_history_len(1024); }, chg},
      {"training.fp8.bf16_first_layers", DenseJob, TensorwiseFp8,
       [](v1::Job& j) { F8(j).set_bf16_first_layers(1); }, chg},
      {"training.fp8.bf16_last_layers", DenseJob, TensorwiseFp8,
       [](v1::Job& j) { F8(j).set_bf16_last_layers(1); }, chg},
      // An evaluation's larger micro-batch passes the training's peak
      // (memory_model.cc [EV]); --eval-iters 0 drops the evaluation.
      {"training.eval_micro_batch_size", DenseJob, Nothing,
       [](v1::Job& j) { T(j).set_eval_micro_batch_size(8); }, chg},
      {"training.evaluation_off", DenseJob,
       [](v1::Job& j) { T(j).set_eval_micro_batch_size(8); },
       [](v1::Job& j) { T(j).set_evaluation_off(true); }, chg},
      {"training.fp8.output_projection", DenseJob,
       [](v1::Job& j) {
         F8(j).set_recipe(v1::Fp8::RECIPE_MXFP8);
         j.mutable_accelerator()->set_name("b200-180gb");
       },
       [](v1::Job& j) { F8(j).set_output_projection(true); }, chg},
      {"training.dataloader_attention_mask", DenseJob, Nothing,
       [](v1::Job& j) { T(j).set_dataloader_attention_mask(true); }, chg},
      {"training.megatron_core_version", MoeJob, Nothing,
       [](v1::Job& j) { T(j).set_megatron_core_version("0.13.0"); }, chg},
      {"training.fused_swiglu", DenseJob, Nothing,
       [](v1::Job& j) { T(j).set_fused_swiglu(true); }, chg},
      {"training.defer_embedding_wgrad", DenseJob, Nothing,
       [](v1::Job& j) { T(j).set_defer_embedding_wgrad(true); }, chg},
      {"training.wgrad_deferral_limit", DenseJob,
       [](v1::Job& j) { T(j).set_defer_embedding_wgrad(true); },
       [](v1::Job& j) { T(j).set_wgrad_deferral_limit(1); }, chg},
      {"training.activation_fp8_input_store", DenseJob,
       [](v1::Job& j) { T(j).set_fused_swiglu(true); },
       [](v1::Job& j) { T(j).set_activation_fp8_input_store(true); }, chg},
      {"training.glu_linear_copy", DenseJob, Nothing,
       [](v1::Job& j) { T(j).set_glu_linear_copy(true); }, chg},
      {"training.fp32_local_grad_accumulation", DenseJob,
       [](v1::Job& j) { T(j).set_precision(v1::PRECISION_BF16_BF16_GRADS); },
       [](v1::Job& j) { T(j).set_fp32_local_grad_accumulation(true); }, chg},
      {"training.tp_comm_overlap", DenseJob, Nothing,
       [](v1::Job& j) {
         T(j).set_tp_comm_overlap(v1::TrainingConfig::TP_COMM_OVERLAP_DEFAULT);
       },
       chg},
      {"training.reduce_scatter_fp32_accumulation", DenseJob,
       [](v1::Job& j) { T(j).set_precision(v1::PRECISION_BF16_BF16_GRADS); },
       [](v1::Job& j) { T(j).set_reduce_scatter_fp32_accumulation(true); },
       chg},
      {"training.attention_softmax_in_fp32", DenseJob, Nothing,
       [](v1::Job& j) { T(j).set_attention_softmax_in_fp32(true); }, same,
       "only Megatron's own (local) attention keeps an fp32 softmax; "
       "FlashAttention keeps no scores"},
      {"training.flash_attention_disabled", DenseJob, Nothing,
       [](v1::Job& j) { T(j).set_flash_attention_disabled(true); }, same,
       "cuDNN's fused attention, which takes over on an H100 for 128-wide "
       "heads, keeps no scores either"},
      {"training.te_deterministic_attention", DenseJob, Nothing,
       [](v1::Job& j) { T(j).set_te_deterministic_attention(true); }, same,
       "a deterministic backward picks another fused kernel, which keeps "
       "no scores either"},
      {"training.te_masked_softmax_fusion_disabled", DenseJob, Nothing,
       [](v1::Job& j) { T(j).set_te_masked_softmax_fusion_disabled(true); },
       same, "only the unfused attention's softmax is fused or not"},
      // The local spec's norms are modules of their own, whose outputs
      // "layernorm" recomputation drops (TransformerEngine fuses a dense
      // layer's norms into the linear layers: nothing to drop).
      {"training.local_layer_spec", DenseJob,
       [](v1::Job& j) {
         NoContextParallel(j);
         T(j).set_attention_kernel(v1::ATTENTION_KERNEL_LOCAL);
         R(j).set_granularity(v1::Recompute::GRANULARITY_SELECTIVE);
         R(j).add_modules(v1::Recompute::MODULE_LAYERNORM);
       },
       [](v1::Job& j) { T(j).set_local_layer_spec(true); }, chg},
      // Quick-GeGLU's sigmoid, run eagerly, is kept for the multiply.
      {"training.jit_fuser_disabled", DenseJob,
       [](v1::Job& j) {
         M(j).set_mlp_activation(v1::MLP_ACTIVATION_QUICK_GEGLU);
       },
       [](v1::Job& j) { T(j).set_jit_fuser_disabled(true); }, chg},
      {"training.rope_fusion_disabled", DenseJob, Nothing,
       [](v1::Job& j) { T(j).set_rope_fusion_disabled(true); }, chg},
      {"training.cross_entropy_new_gradient", DenseJob, Nothing,
       [](v1::Job& j) { T(j).set_cross_entropy_new_gradient(true); }, chg},
      {"training.gradient_accumulation_unfused", DenseJob, Nothing,
       [](v1::Job& j) { T(j).set_gradient_accumulation_unfused(true); }, chg},
      // Accelerator.
      {"accelerator.name", DenseJob, Nothing,
       [](v1::Job& j) { j.mutable_accelerator()->set_name("a100-40gb"); }, chg},
      {"accelerator.memory_bytes", DenseJob, Nothing,
       [](v1::Job& j) {
         j.mutable_accelerator()->set_memory_bytes(uint64_t{40} << 30);
       },
       chg},
      {"accelerator.gpus_per_node", DenseJob, Nothing,
       [](v1::Job& j) { j.mutable_accelerator()->set_gpus_per_node(4); }, same,
       "the node's size places TP and EP groups (the planner's concern); "
       "it holds no memory"},
  };
}

void PrintTo(const FieldCase& c, std::ostream* os) { *os << c.field; }

}  // namespace memgate::testing
