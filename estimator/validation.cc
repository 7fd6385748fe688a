#include "estimator/validation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "estimator/attention_backend.h"
#include "estimator/catalog.h"
#include "estimator/deepep_buffers.h"
#include "estimator/layer_wise_layout.h"
#include "estimator/layer_wise_terms.h"
#include "estimator/megatron_release.h"
#include "estimator/memory_model.h"

namespace memgate {
namespace {

constexpr uint32_t kMaxPipelineStages = 4096;
// MoE models keep a per-layer table; no real model comes near this.
constexpr uint32_t kMaxLayersWithExperts = 1u << 16;

absl::Status Invalid(absl::string_view field, absl::string_view rule,
                     absl::string_view got) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": ", rule, " (got ", got, ")"));
}

absl::Status RequirePositive(absl::string_view field, uint64_t value) {
  if (value > 0) return absl::OkStatus();
  return Invalid(field, "must be at least 1", "0");
}

// `value` must be a multiple of `divisor` (> 0).
absl::Status RequireMultiple(absl::string_view field, uint64_t value,
                             absl::string_view divisor_name, uint64_t divisor) {
  if (value % divisor == 0) return absl::OkStatus();
  return Invalid(field,
                 absl::StrCat("must be a multiple of ", divisor_name, " = ",
                              divisor),
                 absl::StrCat(value));
}

#define MEMGATE_RETURN_IF_ERROR(expr)      \
  do {                                     \
    absl::Status status_ = (expr);         \
    if (!status_.ok()) return status_;     \
  } while (0)

absl::Status ValidateModel(const v1::ModelConfig& m) {
  MEMGATE_RETURN_IF_ERROR(RequirePositive("model.num_layers", m.num_layers()));
  MEMGATE_RETURN_IF_ERROR(
      RequirePositive("model.hidden_size", m.hidden_size()));
  MEMGATE_RETURN_IF_ERROR(
      RequirePositive("model.ffn_hidden_size", m.ffn_hidden_size()));
  MEMGATE_RETURN_IF_ERROR(
      RequirePositive("model.num_attention_heads", m.num_attention_heads()));
  MEMGATE_RETURN_IF_ERROR(
      RequirePositive("model.num_query_groups", m.num_query_groups()));
  MEMGATE_RETURN_IF_ERROR(RequirePositive("model.vocab_size", m.vocab_size()));
  if (m.vocab_size_divisible_by() > kMaxVocabSizeDivisibleBy) {
    return Invalid("model.vocab_size_divisible_by",
                   absl::StrCat("must be at most ", kMaxVocabSizeDivisibleBy,
                                " (0: vocab_size is already padded)"),
                   absl::StrCat(m.vocab_size_divisible_by()));
  }
  if (m.head_dim() == 0 && m.hidden_size() % m.num_attention_heads() != 0) {
    // Megatron: kv_channels = h / a unless given.
    return Invalid("model.hidden_size",
                   absl::StrCat("must be a multiple of "
                                "model.num_attention_heads = ",
                                m.num_attention_heads(),
                                " (or give model.head_dim)"),
                   absl::StrCat(m.hidden_size()));
  }
  if (!v1::MlpActivation_IsValid(m.mlp_activation())) {
    return Invalid("model.mlp_activation", "must be a known activation",
                   absl::StrCat(m.mlp_activation()));
  }
  if (!v1::Normalization_IsValid(m.normalization())) {
    return Invalid("model.normalization", "must be a known normalization",
                   absl::StrCat(m.normalization()));
  }
  if (!v1::PositionEmbedding_IsValid(m.position_embedding())) {
    return Invalid("model.position_embedding",
                   "must be a known position embedding",
                   absl::StrCat(m.position_embedding()));
  }
  // c in c * tanh(x / c): a cap, 0 for none. A negative or non-finite one
  // (JSON takes "NaN" and "-Infinity" for floats) is no model's.
  const std::pair<const char*, float> caps[] = {
      {"model.final_logit_softcapping", m.final_logit_softcapping()},
      {"model.attention_logit_softcapping", m.attention_logit_softcapping()}};
  for (const auto& [field, cap] : caps) {
    if (!(cap >= 0 && std::isfinite(cap))) {
      return Invalid(field, "must be a finite cap >= 0 (0: none)",
                     absl::StrCat(cap));
    }
  }
  return RequireMultiple("model.num_attention_heads", m.num_attention_heads(),
                         "model.num_query_groups", m.num_query_groups());
}

// Mixture of experts, MLA and MTP, with Megatron-Core's rules
// (transformer_config.py, moe_layer.py, arguments.py).
// Megatron's rules for --moe-shared-expert-overlap (transformer_config.py
// raises): the alltoall or flex dispatcher only, and not beside the
// shared experts' recomputation.
absl::Status ValidateSharedExpertOverlap(const v1::Job& job) {
  const v1::MoeConfig& moe = job.model().moe();
  if (!moe.shared_expert_overlap()) return absl::OkStatus();
  const char* field = "model.moe.shared_expert_overlap";
  if (moe.token_dispatcher() == v1::MoeConfig::DISPATCHER_ALLGATHER) {
    return Invalid(field,
                   "needs the alltoall or flex dispatcher (Megatron raises)",
                   "allgather");
  }
  const v1::Recompute& r = job.training().recompute();
  if (moe.shared_expert_ffn_hidden_size() > 0 &&
      r.granularity() == v1::Recompute::GRANULARITY_SELECTIVE) {
    for (int module : r.modules()) {
      if (module == v1::Recompute::MODULE_SHARED_EXPERTS) {
        return Invalid(field,
                       "cannot be used with the shared_experts "
                       "recomputation (Megatron raises)",
                       "true");
      }
    }
  }
  return absl::OkStatus();
}

// The router's settings (MoeConfig [RS]) under Megatron's rules
// (transformer_config.py __post_init__).
absl::Status ValidateRouter(const v1::MoeConfig& moe) {
  if (!v1::MoeConfig::RouterScore_IsValid(moe.router_score_function())) {
    return Invalid("model.moe.router_score_function",
                   "must name a known score function",
                   absl::StrCat(moe.router_score_function()));
  }
  if (moe.router_score_function() ==
          v1::MoeConfig::ROUTER_SCORE_SOFTMAX_AFTER_TOPK &&
      moe.router_topk() == 1) {
    return Invalid("model.moe.router_score_function",
                   "a softmax after the top-k needs router_topk above 1 "
                   "(Megatron raises 'Please use --moe-router-pre-softmax "
                   "when topk is 1')",
                   "ROUTER_SCORE_SOFTMAX_AFTER_TOPK");
  }
  if (moe.router_group_topk() == 0) return absl::OkStatus();
  if (moe.router_num_groups() == 0 ||
      moe.num_experts() % moe.router_num_groups() != 0) {
    return Invalid("model.moe.router_num_groups",
                   absl::StrCat("must divide model.moe.num_experts (",
                                moe.num_experts(),
                                ") with router_group_topk set (Megatron "
                                "raises or asserts)"),
                   absl::StrCat(moe.router_num_groups()));
  }
  if (moe.router_group_topk() > moe.router_num_groups()) {
    return Invalid("model.moe.router_group_topk",
                   absl::StrCat("must be at most router_num_groups (",
                                moe.router_num_groups(),
                                "; Megatron asserts)"),
                   absl::StrCat(moe.router_group_topk()));
  }
  return absl::OkStatus();
}

absl::Status ValidateExperts(const v1::Job& job) {
  const v1::ModelConfig& m = job.model();
  const v1::ParallelConfig& par = job.parallel();
  const uint64_t ep = std::max(1u, par.expert_parallel());
  const uint64_t etp = par.expert_tensor_parallel() > 0
                           ? par.expert_tensor_parallel()
                           : par.tensor_parallel();
  if (!m.has_moe()) {
    if (ep > 1 || par.expert_tensor_parallel() > 0) {
      return Invalid(ep > 1 ? "parallel.expert_parallel"
                            : "parallel.expert_tensor_parallel",
                     "needs model.moe (Megatron: num_moe_experts must be set "
                     "to use expert parallelism)",
                     absl::StrCat(ep > 1 ? ep : etp));
    }
  } else {
    const v1::MoeConfig& moe = m.moe();
    MEMGATE_RETURN_IF_ERROR(
        RequirePositive("model.moe.num_experts", moe.num_experts()));
    if (moe.router_topk() == 0 || moe.router_topk() > moe.num_experts()) {
      return Invalid("model.moe.router_topk",
                     absl::StrCat("must lie in [1, model.moe.num_experts = ",
                                  moe.num_experts(), "]"),
                     absl::StrCat(moe.router_topk()));
    }
    if (m.num_layers() > kMaxLayersWithExperts) {
      return Invalid("model.num_layers",
                     absl::StrCat("must be at most ", kMaxLayersWithExperts,
                                  " with experts"),
                     absl::StrCat(m.num_layers()));
    }
    if (moe.layer_pattern_size() > 0) {
      if (static_cast<uint64_t>(moe.layer_pattern_size()) != m.num_layers()) {
        return Invalid("model.moe.layer_pattern",
                       absl::StrCat("must list every layer (",
                                    m.num_layers(), ")"),
                       absl::StrCat(moe.layer_pattern_size(), " entries"));
      }
      for (uint32_t x : moe.layer_pattern()) {
        if (x > 1) {
          return Invalid("model.moe.layer_pattern",
                         "entries must be 0 (dense) or 1 (MoE)",
                         absl::StrCat(x));
        }
      }
    }
    if (!v1::MoeConfig::Dispatcher_IsValid(moe.token_dispatcher()) ||
        !v1::DType_IsValid(moe.router_dtype()) ||
        !v1::MoeConfig::ProbsApplied_IsValid(moe.routing_probs_applied())) {
      return Invalid("model.moe",
                     "must name a known dispatcher, dtype and place the "
                     "routing probabilities are applied",
                     moe.ShortDebugString());
    }
    MEMGATE_RETURN_IF_ERROR(ValidateRouter(moe));
    if (moe.routing_probs_applied() ==
            v1::MoeConfig::PROBS_APPLIED_ON_INPUT &&
        moe.router_topk() != 1) {
      return Invalid("model.moe.routing_probs_applied",
                     "PROBS_APPLIED_ON_INPUT (--moe-apply-probs-on-input) "
                     "needs router_topk 1 (Megatron asserts it)",
                     absl::StrCat("router_topk ", moe.router_topk()));
    }
    if (!(moe.capacity_factor() >= 0 && moe.capacity_factor() <= 1024)) {
      return Invalid("model.moe.capacity_factor",
                     "must lie in [0, 1024] (0: dropless)",
                     absl::StrCat(moe.capacity_factor()));
    }
    // transformer_config.py: "moe_use_grouped_tensor=True requires
    // moe_grouped_gemm=True".
    if (moe.grouped_tensor() && !moe.grouped_gemm()) {
      return Invalid("model.moe.grouped_tensor",
                     "needs model.moe.grouped_gemm (Megatron raises)", "true");
    }
    if (moe.fused_grouped_mlp()) {
      // The op fuser turns the GroupedTensor path on (transformer_config.py)
      // and TEGroupedMLP asserts _is_fused_impl_supported (experts.py).
      if (!moe.grouped_tensor()) {
        return Invalid("model.moe.fused_grouped_mlp",
                       "needs model.moe.grouped_tensor (the op fuser's "
                       "experts run on it)",
                       "grouped_tensor false");
      }
      if (etp > 1) {
        return Invalid("model.moe.fused_grouped_mlp",
                       "needs expert_tensor_parallel 1 (Megatron asserts its "
                       "fused grouped MLP runs without expert TP)",
                       absl::StrCat("expert TP ", etp));
      }
      if (moe.routing_probs_applied() ==
          v1::MoeConfig::PROBS_APPLIED_ON_INPUT) {
        return Invalid("model.moe.fused_grouped_mlp",
                       "cannot apply the routing probabilities on the input "
                       "(Megatron asserts)",
                       "PROBS_APPLIED_ON_INPUT");
      }
    }
    if (moe.pad_to_capacity() && moe.capacity_factor() == 0) {
      return Invalid("model.moe.pad_to_capacity",
                     "needs model.moe.capacity_factor", "true");
    }
    if (moe.has_load_imbalance() &&
        !(moe.load_imbalance() >= 1 && moe.load_imbalance() <= 64)) {
      return Invalid("model.moe.load_imbalance", "must lie in [1, 64]",
                     absl::StrCat(moe.load_imbalance()));
    }
    if (moe.num_experts() % ep != 0) {
      return Invalid("model.moe.num_experts",
                     absl::StrCat("must be a multiple of "
                                  "parallel.expert_parallel = ",
                                  ep),
                     absl::StrCat(moe.num_experts()));
    }
    const uint64_t group = ep * etp * par.pipeline_parallel();
    if (job.num_gpus() % group != 0) {
      return Invalid("num_gpus",
                     absl::StrCat("must be a multiple of expert_parallel x "
                                  "expert_tensor_parallel x pipeline_parallel "
                                  "= ",
                                  group),
                     absl::StrCat(job.num_gpus()));
    }
    if (par.tensor_parallel() > 1 && !par.sequence_parallel()) {
      return Invalid("parallel.sequence_parallel",
                     "must be on with MoE and tensor parallelism (Megatron's "
                     "MoELayer refuses to train without it)",
                     "false");
    }
    if (ep * etp > job.num_gpus() / par.pipeline_parallel()) {
      return Invalid("parallel.expert_parallel",
                     "x expert_tensor_parallel must fit in one pipeline stage's "
                     "GPUs",
                     absl::StrCat(ep * etp));
    }
    MEMGATE_RETURN_IF_ERROR(ValidateFlexDispatcher(moe, ep * etp));
    MEMGATE_RETURN_IF_ERROR(ValidateSharedExpertOverlap(job));
    MEMGATE_RETURN_IF_ERROR(ValidateExpertOverlap(job, ep));
  }
  if (m.has_mla()) {
    const v1::MlaConfig& mla = m.mla();
    MEMGATE_RETURN_IF_ERROR(
        RequirePositive("model.mla.kv_lora_rank", mla.kv_lora_rank()));
    MEMGATE_RETURN_IF_ERROR(
        RequirePositive("model.mla.qk_head_dim", mla.qk_head_dim()));
    MEMGATE_RETURN_IF_ERROR(
        RequirePositive("model.mla.v_head_dim", mla.v_head_dim()));
    // FusedMLASelfAttention asserts a Q latent (q_lora_rank set).
    if (mla.fused_down_projection() && mla.q_lora_rank() == 0) {
      return Invalid("model.mla.fused_down_projection",
                     "needs model.mla.q_lora_rank (Megatron's "
                     "FusedMLASelfAttention asserts it)",
                     "q_lora_rank 0");
    }
    // QK-norm with MLA is DeepSeek's latent norms (Megatron's
    // --qk-layernorm makes the up projections LayerNormLinear:
    // gpt_layer_specs.py), modelled in MlaActivations.
    if (m.linear_bias() || m.qkv_bias()) {
      return Invalid("model.mla", "with attention biases is not modelled",
                     "biases");
    }
  }
  // Megatron's spec takes L2Norm over the learned norms when both are
  // asked for (gpt_layer_specs.py), and has none with MLA (it asserts).
  if (m.qk_l2_norm() && m.qk_norm()) {
    return Invalid("model.qk_l2_norm",
                   "replaces model.qk_norm's learned norms: set one",
                   "both set");
  }
  if (m.qk_l2_norm() && m.has_mla()) {
    return Invalid("model.qk_l2_norm",
                   "has no multi-latent-attention form in Megatron", "mla set");
  }
  if (m.mtp_num_layers() > 16) {
    return Invalid("model.mtp_num_layers", "must be at most 16",
                   absl::StrCat(m.mtp_num_layers()));
  }
  if (m.mtp_hidden_state_mixing() && m.mtp_num_layers() < 2) {
    return Invalid("model.mtp_hidden_state_mixing",
                   "needs model.mtp_num_layers of 2 or more (Megatron's "
                   "transformer_config.py raises)",
                   absl::StrCat(m.mtp_num_layers(), " MTP layers"));
  }
  if ((m.has_moe() || m.has_mla() || m.mtp_num_layers() > 0) &&
      par.data_parallel_sharding() != v1::DATA_PARALLEL_SHARDING_UNSPECIFIED) {
    return Invalid("parallel.data_parallel_sharding",
                   "with MoE, MLA or MTP is not modelled", "set");
  }
  return absl::OkStatus();
}

absl::Status ValidateStages(const v1::Job& job) {
  const v1::ParallelConfig& par = job.parallel();
  const uint32_t layers = job.model().num_layers();
  const uint64_t v = par.virtual_pipeline_stages();
  if (v > 1) {
    if (par.pipeline_parallel() < 2) {
      return Invalid("parallel.virtual_pipeline_stages",
                     "needs parallel.pipeline_parallel of 2 or more",
                     absl::StrCat(v));
    }
    if (v > kMaxPipelineStages) {
      return Invalid("parallel.virtual_pipeline_stages",
                     absl::StrCat("must be at most ", kMaxPipelineStages),
                     absl::StrCat(v));
    }
  }
  if (par.layers_per_stage().empty()) {
    // Even stages; an uneven split is how a model whose layers do not
    // divide (DeepSeek-V3's 61, Llama-3.1-405B's 126 over 16) runs.
    const uint64_t chunks = par.pipeline_parallel() * std::max<uint64_t>(v, 1);
    if (layers % chunks == 0) return absl::OkStatus();
    return Invalid(
        "model.num_layers",
        absl::StrCat("must be a multiple of ",
                     v > 1 ? "parallel.pipeline_parallel x "
                             "parallel.virtual_pipeline_stages = "
                           : "parallel.pipeline_parallel = ",
                     chunks, " for even stages"),
        absl::StrCat(layers, "; uneven stages: give "
                             "parallel.layers_per_stage"));
  }
  const uint64_t stages = par.pipeline_parallel() * std::max<uint64_t>(v, 1);
  if (static_cast<uint64_t>(par.layers_per_stage_size()) != stages) {
    return Invalid("parallel.layers_per_stage",
                   absl::StrCat("must list one entry per pipeline stage x "
                                "virtual stage (",
                                stages, ")"),
                   absl::StrCat(par.layers_per_stage_size(), " entries"));
  }
  uint64_t sum = 0;
  for (uint32_t n : par.layers_per_stage()) sum += n;
  if (sum != layers) {
    return Invalid("parallel.layers_per_stage",
                   absl::StrCat("must add up to model.num_layers = ", layers),
                   absl::StrCat(sum));
  }
  return absl::OkStatus();
}

// Standalone MTP (ParallelConfig.mtp_pipeline_rank): Megatron's layout
// rules (pipeline_parallel_layer_layout.py validate_layer_layout) on the
// stages as listed: every transformer layer before the MTP layers, which
// sit in the last chunk of their rank. After ValidateStages.
absl::Status ValidateMtpPlacement(const v1::Job& job) {
  const v1::ParallelConfig& par = job.parallel();
  if (!par.has_mtp_pipeline_rank()) return absl::OkStatus();
  const char* field = "parallel.mtp_pipeline_rank";
  const uint32_t rank = par.mtp_pipeline_rank();
  const std::string given = absl::StrCat(rank);
  if (job.model().mtp_num_layers() == 0) {
    return Invalid(field, "needs model.mtp_num_layers", given);
  }
  const uint32_t p = par.pipeline_parallel();
  if (rank >= p) {
    return Invalid(field,
                   absl::StrCat("must be below parallel.pipeline_parallel = ",
                                p),
                   given);
  }
  if (rank + 1 == p) return absl::OkStatus();  // beside the loss
  if (par.layers_per_stage().empty()) {
    return Invalid(field,
                   "off the last rank needs parallel.layers_per_stage, "
                   "with no transformer layer after the MTP layers' stage",
                   absl::StrCat(given, ", even stages"));
  }
  // The MTP stage is chunk v - 1 of `rank`: entry (v - 1) p + rank.
  const uint64_t v = std::max(1u, par.virtual_pipeline_stages());
  const uint64_t mtp_stage = (v - 1) * p + rank;
  for (uint64_t k = mtp_stage + 1;
       k < static_cast<uint64_t>(par.layers_per_stage_size()); ++k) {
    if (par.layers_per_stage(static_cast<int>(k)) > 0) {
      return Invalid(field,
                     absl::StrCat("puts the MTP layers in stage ", mtp_stage,
                                  " (rank ", rank, "'s last chunk), before "
                                  "stage ", k, "'s transformer layers; "
                                  "Megatron needs every transformer layer "
                                  "first"),
                     absl::StrCat(given, ", parallel.layers_per_stage[", k,
                                  "] = ",
                                  par.layers_per_stage(static_cast<int>(k))));
    }
  }
  return absl::OkStatus();
}

// Megatron's partial distributed optimizer (memory_model.cc [DO]): its
// rules, which parallel_state.py and the DDP wrapper assert.
absl::Status ValidateOptimizerInstances(const v1::Job& job, uint64_t d) {
  const v1::ParallelConfig& par = job.parallel();
  const uint64_t n = par.distributed_optimizer_instances();
  if (n <= 1) return absl::OkStatus();
  const char* field = "parallel.distributed_optimizer_instances";
  if (par.data_parallel_sharding() != v1::DATA_PARALLEL_SHARDING_UNSPECIFIED) {
    return Invalid(field,
                   "above 1 with Megatron-FSDP is hybrid FSDP (HSDP), which "
                   "is not modelled",
                   absl::StrCat(n));
  }
  if (!par.distributed_optimizer()) {
    return Invalid(field,
                   "above 1 needs parallel.distributed_optimizer (Megatron "
                   "asserts: partial DistOpt cannot be used without DistOpt)",
                   absl::StrCat(n));
  }
  // Megatron asserts against the fp32-accumulating reduce-scatter beside
  // instances, where it runs: not for bf16 with fp32 gradients, whose
  // reduction arguments.py already keeps in fp32 (and turns it off).
  const v1::TrainingConfig& tr = job.training();
  if (tr.reduce_scatter_fp32_accumulation() && !ReducesGradientsInFp32(tr)) {
    return Invalid(field,
                   "above 1 with training.reduce_scatter_fp32_accumulation "
                   "(Megatron asserts: RS with FP32 accumulation not "
                   "supported with several distributed-optimizer instances)",
                   absl::StrCat(n));
  }
  const uint64_t dc = d * par.context_parallel();
  if (dc % n != 0) {
    return Invalid(field,
                   absl::StrCat("must divide the data-parallel ranks d x c = ",
                                dc),
                   absl::StrCat(n));
  }
  if (job.model().has_moe()) {
    // World / (ETP x EP x PP) = t*c*d / (ETP x EP); ValidateExperts has
    // checked that EP x ETP x PP divides the GPUs.
    const uint64_t etp = par.expert_tensor_parallel() > 0
                             ? par.expert_tensor_parallel()
                             : par.tensor_parallel();
    const uint64_t expert_dp = job.num_gpus() / par.pipeline_parallel() /
                               (std::max(1u, par.expert_parallel()) * etp);
    if (expert_dp % n != 0) {
      return Invalid(field,
                     absl::StrCat("must divide the expert-data-parallel size "
                                  "GPUs / (EP x ETP x PP) = ",
                                  expert_dp),
                     absl::StrCat(n));
    }
  }
  return absl::OkStatus();
}

// Megatron's rules for the layers an fp8 run keeps in bf16
// (transformer_config.py __post_init__, ValueError): not with the delayed
// recipe, and at most num_layers // pipeline_parallel at either end.
absl::Status ValidateBf16Layers(const v1::Job& job) {
  const v1::Fp8& fp8 = job.training().fp8();
  if (fp8.bf16_first_layers() == 0 && fp8.bf16_last_layers() == 0) {
    return absl::OkStatus();
  }
  const char* first = "training.fp8.bf16_first_layers";
  const char* last = "training.fp8.bf16_last_layers";
  const char* field = fp8.bf16_first_layers() > 0 ? first : last;
  if (fp8.recipe() == v1::Fp8::RECIPE_DELAYED ||
      fp8.recipe() == v1::Fp8::RECIPE_UNSPECIFIED) {
    return Invalid(field,
                   "needs an fp8 recipe other than delayed (Megatron: delayed "
                   "scaling does not support first / last layers in bf16)",
                   absl::StrCat(fp8.bf16_first_layers() > 0
                                    ? fp8.bf16_first_layers()
                                    : fp8.bf16_last_layers()));
  }
  const uint64_t most = job.model().num_layers() /
                        job.parallel().pipeline_parallel();
  for (const auto& [name, value] :
       {std::pair<const char*, uint32_t>{first, fp8.bf16_first_layers()},
        {last, fp8.bf16_last_layers()}}) {
    if (value > most) {
      return Invalid(name,
                     absl::StrCat("must be at most num_layers / "
                                  "pipeline_parallel = ",
                                  most),
                     absl::StrCat(value));
    }
  }
  return absl::OkStatus();
}

// Megatron's --fp8-output-proj: transformer_config.py raises without the
// MXFP8 recipe; TELMHeadColumnParallelLinear (transformer_engine.py)
// raises where the head would skip its weight (tied embeddings on the
// stage that embeds: one stage) and with the deferred embedding wgrad.
// TransformerEngine runs a recipe only on GPUs with its GEMMs
// (quantization.py check_recipe_support, d0067d0): delayed and tensorwise
// scaling from sm89 (Ada, Hopper, Blackwell), blockwise from sm90 (and
// CUDA 12.9), MXFP8 on sm100 and sm103 only; it raises at the first fp8
// step otherwise. A GPU outside the catalog (a capacity given) and AMD's
// (TransformerEngine's ROCm port has rules of its own) are not checked.
absl::Status ValidateFp8Gpu(const v1::Job& job) {
  const GpuFamily family = FamilyOfAccelerator(job.accelerator().name());
  if (family == GpuFamily::kUnknown || family == GpuFamily::kCdna3) {
    return absl::OkStatus();
  }
  const v1::Fp8::Recipe recipe = job.training().fp8().recipe();
  const char* needs = nullptr;
  if (recipe == v1::Fp8::RECIPE_MXFP8 && !IsBlackwell(family)) {
    needs = "a Blackwell GPU (TransformerEngine: 'Device compute "
            "capability 10.0 or higher required for MXFP8 execution')";
  } else if (recipe == v1::Fp8::RECIPE_NVFP4 && !IsBlackwell(family)) {
    needs = "a Blackwell GPU (TransformerEngine: 'Device compute "
            "capability 10.0 or higher required for NVFP4 execution')";
  } else if (recipe == v1::Fp8::RECIPE_BLOCKWISE &&
             (family == GpuFamily::kAmpere || family == GpuFamily::kAda)) {
    needs = "a Hopper or Blackwell GPU (TransformerEngine: 'FP8 block "
            "scaled GEMM requires compute capability 9.0 or higher')";
  } else if (family == GpuFamily::kAmpere) {
    needs = "an Ada, Hopper or Blackwell GPU (TransformerEngine: 'Device "
            "compute capability 8.9 or higher required for FP8 "
            "execution')";
  }
  if (needs == nullptr) return absl::OkStatus();
  return Invalid("training.fp8.recipe",
                 absl::StrCat(recipe == v1::Fp8::RECIPE_UNSPECIFIED
                                  ? "fp8 (delayed scaling, the default)"
                                  : v1::Fp8::Recipe_Name(recipe),
                              " needs ", needs),
                 job.accelerator().name());
}

absl::Status ValidateFp8OutputProjection(const v1::Job& job) {
  const v1::TrainingConfig& tr = job.training();
  if (!tr.fp8().output_projection()) return absl::OkStatus();
  const char* field = "training.fp8.output_projection";
  if (tr.fp8().recipe() != v1::Fp8::RECIPE_MXFP8) {
    return Invalid(field, "needs the MXFP8 recipe (Megatron raises)",
                   v1::Fp8::Recipe_Name(tr.fp8().recipe()));
  }
  if (job.model().tie_word_embeddings() &&
      job.parallel().pipeline_parallel() == 1) {
    return Invalid(field,
                   "cannot share the embedding's weight on one stage "
                   "(Megatron raises: the MXFP8 head cannot skip its "
                   "weight); untie them or run PP > 1",
                   "model.tie_word_embeddings true");
  }
  if (tr.defer_embedding_wgrad()) {
    return Invalid(field,
                   "cannot defer the embedding's weight gradient (Megatron "
                   "raises)",
                   "training.defer_embedding_wgrad true");
  }
  return absl::OkStatus();
}

// Megatron's --cp-comm-type with TransformerEngine's rules
// (context_parallel.py): a2a scatters each TP rank's query and key heads
// over the CP ranks (it asserts both divide), a2a+p2p over its inner
// level, whose size divides c (arguments.py: the hierarchical sizes
// multiply to c). With c = 1 no exchange runs and the rules do not apply.
absl::Status ValidateContextParallelComm(const v1::Job& job) {
  const v1::ParallelConfig& par = job.parallel();
  const v1::ContextParallelComm comm = par.context_parallel_comm();
  if (!v1::ContextParallelComm_IsValid(comm)) {
    return Invalid("parallel.context_parallel_comm",
                   "must be a known exchange", absl::StrCat(comm));
  }
  const uint64_t a2a = par.context_parallel_a2a_size();
  const bool hierarchical = comm == v1::CONTEXT_PARALLEL_COMM_A2A_P2P;
  if (hierarchical != (a2a != 0)) {
    return Invalid("parallel.context_parallel_a2a_size",
                   "is given with context_parallel_comm "
                   "CONTEXT_PARALLEL_COMM_A2A_P2P, and only with it (the "
                   "first of Megatron's --hierarchical-context-parallel-"
                   "sizes)",
                   absl::StrCat(a2a, " with ",
                                v1::ContextParallelComm_Name(comm)));
  }
  const uint64_t c = par.context_parallel();
  if (c < 2) return absl::OkStatus();
  uint64_t scattered = 1;  // CP ranks each rank's heads are split over
  if (comm == v1::CONTEXT_PARALLEL_COMM_A2A) scattered = c;
  if (hierarchical) {
    MEMGATE_RETURN_IF_ERROR(RequireMultiple(
        "parallel.context_parallel", c, "parallel.context_parallel_a2a_size",
        a2a));
    scattered = a2a;
  }
  if (scattered < 2) return absl::OkStatus();
  const v1::ModelConfig& m = job.model();
  const uint64_t t = par.tensor_parallel();
  const uint64_t key_heads =
      m.has_mla() ? m.num_attention_heads() : m.num_query_groups();
  for (auto [field, heads] :
       {std::pair<const char*, uint64_t>{"model.num_attention_heads",
                                         m.num_attention_heads()},
        {m.has_mla() ? "model.num_attention_heads" : "model.num_query_groups",
         key_heads}}) {
    if ((heads / t) % scattered != 0) {
      return Invalid(
          "parallel.context_parallel_comm",
          absl::StrCat("its all-to-all scatters each tensor-parallel rank's "
                       "heads over ",
                       scattered, " ranks: ", field, " / tensor_parallel = ",
                       heads, " / ", t,
                       " must be a multiple of it (TransformerEngine "
                       "asserts it)"),
          v1::ContextParallelComm_Name(comm));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateParallel(const v1::Job& job) {
  const v1::ParallelConfig& par = job.parallel();
  const v1::ModelConfig& m = job.model();
  MEMGATE_RETURN_IF_ERROR(
      RequirePositive("parallel.tensor_parallel", par.tensor_parallel()));
  MEMGATE_RETURN_IF_ERROR(
      RequirePositive("parallel.pipeline_parallel", par.pipeline_parallel()));
  MEMGATE_RETURN_IF_ERROR(
      RequirePositive("parallel.context_parallel", par.context_parallel()));
  MEMGATE_RETURN_IF_ERROR(RequirePositive("num_gpus", job.num_gpus()));
  // The estimate lists every stage; no real pipeline comes near this.
  if (par.pipeline_parallel() > kMaxPipelineStages) {
    return Invalid("parallel.pipeline_parallel",
                   absl::StrCat("must be at most ", kMaxPipelineStages),
                   absl::StrCat(par.pipeline_parallel()));
  }

  // gpus must be a multiple of t*p*c; dividing step by step never overflows.
  const uint64_t t = par.tensor_parallel(), p = par.pipeline_parallel(),
                 c = par.context_parallel();
  const uint64_t gpus = job.num_gpus();
  if (gpus % t != 0 || (gpus / t) % p != 0 || (gpus / t / p) % c != 0) {
    return Invalid("num_gpus",
                   absl::StrCat("must be a multiple of tensor_parallel x "
                                "pipeline_parallel x context_parallel = ",
                                t, " x ", p, " x ", c),
                   absl::StrCat(gpus));
  }
  const uint64_t d = gpus / t / p / c;
  if (par.data_parallel() != 0 && par.data_parallel() != d) {
    return Invalid("parallel.data_parallel",
                   absl::StrCat("must equal num_gpus / (tensor x pipeline x "
                                "context) = ",
                                d),
                   absl::StrCat(par.data_parallel()));
  }
  MEMGATE_RETURN_IF_ERROR(ValidateStages(job));
  MEMGATE_RETURN_IF_ERROR(ValidateMtpPlacement(job));
  MEMGATE_RETURN_IF_ERROR(ValidateExperts(job));
  MEMGATE_RETURN_IF_ERROR(ValidateOptimizerInstances(job, d));
  // distributed_data_parallel_config.py asserts one of the two.
  if (par.ddp_num_buckets() > 0 && par.ddp_bucket_size() > 0) {
    return Invalid("parallel.ddp_num_buckets",
                   "cannot be given with parallel.ddp_bucket_size (Megatron "
                   "asserts: only one of the two)",
                   absl::StrCat(par.ddp_num_buckets()));
  }
  MEMGATE_RETURN_IF_ERROR(RequireMultiple("model.num_attention_heads",
                                          m.num_attention_heads(),
                                          "parallel.tensor_parallel", t));
  // The vocabulary-parallel embedding and output layer split an allocated
  // vocabulary over TP (tensor_parallel/layers.py: divide() asserts it);
  // with vocab_size_divisible_by the padding makes it a multiple.
  if (m.vocab_size_divisible_by() == 0) {
    MEMGATE_RETURN_IF_ERROR(RequireMultiple("model.vocab_size",
                                            m.vocab_size(),
                                            "parallel.tensor_parallel", t));
  }
  MEMGATE_RETURN_IF_ERROR(RequireMultiple("model.num_query_groups",
                                          m.num_query_groups(),
                                          "parallel.tensor_parallel", t));
  // The fused down projection's output, split over TP, is cut into the Q
  // and KV latents (multi_latent_attention.py FusedMLASelfAttention
  // _qkv_down_projection asserts both divide).
  if (m.has_mla() && m.mla().fused_down_projection()) {
    const v1::MlaConfig& mla = m.mla();
    MEMGATE_RETURN_IF_ERROR(RequireMultiple("model.mla.q_lora_rank",
                                            mla.q_lora_rank(),
                                            "parallel.tensor_parallel", t));
    MEMGATE_RETURN_IF_ERROR(RequireMultiple(
        "model.mla.kv_lora_rank + qk_pos_emb_head_dim",
        uint64_t{mla.kv_lora_rank()} + mla.qk_pos_emb_head_dim(),
        "parallel.tensor_parallel", t));
  }
  return ValidateContextParallelComm(job);
}

bool IsBf16(v1::Precision p) {
  return p == v1::PRECISION_BF16_FP32_GRADS ||
         p == v1::PRECISION_BF16_BF16_GRADS;
}

// Lion and Muon with the distributed optimizer [LW]: the release runs it
// (EmergingDistributedRunOf), and Megatron's layer-wise optimizer takes
// what the job asks of it (core/optimizer/__init__.py asserts one
// optimizer instance and no expert parameter outside its matrices:
// "Non-emerging expert-parallel param groups are not yet supported"),
// within the packing memgate bounds.
// `release`: the job's, where it names a well-formed one.
absl::Status ValidateLayerWise(const v1::Job& job,
                               const MegatronCoreRelease* release) {
  const v1::TrainingConfig& tr = job.training();
  const std::string name = v1::Optimizer_Name(tr.optimizer());
  const std::string& version = tr.megatron_core_version();
  if (release != nullptr) {
    const absl::StatusOr<EmergingDistributedRun> of =
        EmergingDistributedRunOf(tr.optimizer(), *release);
    if (!of.ok()) {
      return Invalid("parallel.distributed_optimizer", of.status().message(),
                     absl::StrCat("true with ", name, " and core ", version));
    }
    // 0.18.x's distributed optimizer takes Adam only (Lion came in with
    // main b4ad280d35, core 0.19): Muon's scalar Lion there asserts where
    // the release honours it (MuonReleaseOf: 0.18.2).
    const absl::StatusOr<MuonRelease> muon = MuonReleaseOf(*release);
    if (tr.optimizer() == v1::OPTIMIZER_MUON &&
        tr.muon().scalar_optimizer() == v1::OPTIMIZER_LION &&
        release->major == 0 && release->minor == 18 && muon.ok() &&
        muon->scalar_lion) {
      return Invalid("training.muon.scalar_optimizer",
                     "Lion for the parameters Muon leaves cannot run under "
                     "core 0.18's distributed optimizer (it asserts Adam "
                     "only)",
                     absl::StrCat("OPTIMIZER_LION with core ", version));
    }
  }
  if (job.parallel().distributed_optimizer_instances() > 1) {
    return Invalid("parallel.distributed_optimizer_instances",
                   absl::StrCat("must be 1 with ", name, ": Megatron's "
                                "layer-wise distributed optimizer asserts "
                                "it"),
                   absl::StrCat(
                       job.parallel().distributed_optimizer_instances()));
  }
  if (job.model().has_moe() && job.model().linear_bias()) {
    return Invalid("model.linear_bias",
                   absl::StrCat("experts' biases cannot train under ", name,
                                "'s layer-wise distributed optimizer "
                                "(Megatron asserts: no expert parameter "
                                "outside its matrices)"),
                   "true");
  }
  if (tr.has_fp8() && tr.fp8().param_gather()) {
    return Invalid("training.fp8.param_gather",
                   absl::StrCat("fp8 weights in the layer-wise distributed "
                                "optimizer's buffers are not modelled (",
                                name, ")"),
                   "true");
  }
  const double work =
      LayerWisePackingWork(ShapeOf(job.model()), LayoutOf(job));
  if (!(work <= double(kMaxLayerWisePackingWork))) {
    return Invalid(
        "parallel.distributed_optimizer",
        absl::StrCat(name, "'s layer-wise layout of this model over its "
                           "data-parallel ranks is more packing than memgate "
                           "bounds (",
                     kMaxLayerWisePackingWork, " matrix-rank steps)"),
        absl::StrCat(work, " steps"));
  }
  return absl::OkStatus();
}

// Lion and Muon, as Megatron-LM runs them: emerging optimizers
// (arguments.py turns --use-distributed-optimizer into its layer-wise
// distributed optimizer from core 0.18.0 on [LW], and asserts against
// Megatron-FSDP; core/optimizer/__init__.py raises under fp16), in the
// releases that have them (megatron_release.h).
absl::Status ValidateEmergingOptimizer(const v1::Job& job) {
  const v1::TrainingConfig& tr = job.training();
  const std::string name = v1::Optimizer_Name(tr.optimizer());
  const v1::ParallelConfig& par = job.parallel();
  const bool distributed =
      !par.has_distributed_optimizer() || par.distributed_optimizer();
  if (par.data_parallel_sharding() != v1::DATA_PARALLEL_SHARDING_UNSPECIFIED) {
    return Invalid("training.optimizer",
                   absl::StrCat(name, " cannot run under Megatron-FSDP "
                                      "(Megatron asserts)"),
                   v1::DataParallelSharding_Name(par.data_parallel_sharding()));
  }
  // The job's release (a malformed one is the resolver's to name).
  const std::string& version = tr.megatron_core_version();
  const absl::StatusOr<MegatronCoreRelease> release =
      ParseMegatronCoreRelease(version);
  const bool has_release = !version.empty() && release.ok();
  if (distributed) {
    MEMGATE_RETURN_IF_ERROR(
        ValidateLayerWise(job, has_release ? &*release : nullptr));
  }
  if (tr.precision() == v1::PRECISION_FP16) {
    return Invalid("training.optimizer",
                   absl::StrCat(name, " cannot train in fp16 (Megatron "
                                      "raises)"),
                   "PRECISION_FP16");
  }
  const v1::Muon& muon = tr.muon();
  if (tr.optimizer() == v1::OPTIMIZER_MUON) {
    if (!v1::Muon::TpMode_IsValid(muon.tp_mode())) {
      return Invalid("training.muon.tp_mode", "must be a known mode",
                     absl::StrCat(muon.tp_mode()));
    }
    if (muon.scalar_optimizer() != v1::OPTIMIZER_UNSPECIFIED &&
        muon.scalar_optimizer() != v1::OPTIMIZER_ADAM &&
        muon.scalar_optimizer() != v1::OPTIMIZER_LION) {
      return Invalid("training.muon.scalar_optimizer",
                     "must be OPTIMIZER_ADAM or OPTIMIZER_LION (Megatron's "
                     "--muon-scalar-optimizer choices)",
                     absl::StrCat(muon.scalar_optimizer()));
    }
  }
  // A release without the optimizer.
  if (!has_release) return absl::OkStatus();
  const absl::Status has_it =
      tr.optimizer() == v1::OPTIMIZER_LION
          ? LionScalarOptimizerOf(*release).status()
          : MuonReleaseOf(*release).status();
  if (!has_it.ok()) {
    return Invalid("training.optimizer", has_it.message(),
                   absl::StrCat(name, " with training.megatron_core_version ",
                                version));
  }
  if (tr.optimizer() == v1::OPTIMIZER_MUON &&
      muon.scalar_optimizer() == v1::OPTIMIZER_LION &&
      std::make_tuple(release->major, release->minor) <
          std::make_tuple(0u, 17u)) {
    return Invalid("training.muon.scalar_optimizer",
                   "core 0.16 has no --muon-scalar-optimizer (it came with "
                   "0.17.0)",
                   absl::StrCat("OPTIMIZER_LION with core ", version));
  }
  return absl::OkStatus();
}

// The precision-aware optimizer, CPU offload, fp8 and FSDP, with the
// rules Megatron-LM enforces for them (arguments.py, optimizer_config.py).
absl::Status ValidateOptimizerStorage(const v1::Job& job) {
  const v1::TrainingConfig& tr = job.training();
  if (tr.optimizer() == v1::OPTIMIZER_LION ||
      tr.optimizer() == v1::OPTIMIZER_MUON) {
    MEMGATE_RETURN_IF_ERROR(ValidateEmergingOptimizer(job));
  }
  if (tr.has_muon() && tr.optimizer() != v1::OPTIMIZER_MUON) {
    return Invalid("training.muon", "applies to OPTIMIZER_MUON only",
                   v1::Optimizer_Name(tr.optimizer()));
  }
  if (tr.has_precision_aware_optimizer()) {
    const v1::PrecisionAwareOptimizer& pa = tr.precision_aware_optimizer();
    if (tr.optimizer() != v1::OPTIMIZER_ADAM &&
        tr.optimizer() != v1::OPTIMIZER_UNSPECIFIED) {
      return Invalid("training.precision_aware_optimizer",
                     "needs Adam (Megatron: only supported with adam)",
                     v1::Optimizer_Name(tr.optimizer()));
    }
    if (!IsBf16(tr.precision())) {
      return Invalid("training.precision_aware_optimizer",
                     "is modelled with bf16 training only",
                     v1::Precision_Name(tr.precision()));
    }
    const auto one_of = [](v1::DType d, std::initializer_list<v1::DType> ok) {
      for (v1::DType x : ok) {
        if (d == x) return true;
      }
      return d == v1::DTYPE_UNSPECIFIED;
    };
    const struct {
      const char* field;
      v1::DType dtype;
      std::initializer_list<v1::DType> allowed;
      const char* rule;
    } dtypes[] = {
        {"training.precision_aware_optimizer.main_grads_dtype",
         pa.main_grads_dtype(), {v1::DTYPE_FP32, v1::DTYPE_BF16},
         "must be fp32 or bf16"},
        {"training.precision_aware_optimizer.main_params_dtype",
         pa.main_params_dtype(), {v1::DTYPE_FP32, v1::DTYPE_FP16},
         "must be fp32 or fp16"},
        {"training.precision_aware_optimizer.exp_avg_dtype",
         pa.exp_avg_dtype(),
         {v1::DTYPE_FP32, v1::DTYPE_BF16, v1::DTYPE_FP16, v1::DTYPE_FP8},
         "must be fp32, bf16, fp16 or fp8"},
        {"training.precision_aware_optimizer.exp_avg_sq_dtype",
         pa.exp_avg_sq_dtype(),
         {v1::DTYPE_FP32, v1::DTYPE_BF16, v1::DTYPE_FP16, v1::DTYPE_FP8},
         "must be fp32, bf16, fp16 or fp8"},
    };
    for (const auto& d : dtypes) {
      if (!one_of(d.dtype, d.allowed)) {
        return Invalid(d.field, d.rule, absl::StrCat(d.dtype));
      }
    }
  }
  const double offload = tr.optimizer_offload_fraction();
  if (!(offload >= 0 && offload <= 1)) {
    return Invalid("training.optimizer_offload_fraction",
                   "must be a fraction in [0, 1]", absl::StrCat(offload));
  }
  if (offload > 0 && !tr.has_precision_aware_optimizer()) {
    return Invalid("training.optimizer_offload_fraction",
                   "needs training.precision_aware_optimizer (Megatron: "
                   "--optimizer-cpu-offload needs "
                   "--use-precision-aware-optimizer)",
                   absl::StrCat(offload));
  }
  const v1::ParallelConfig& par = job.parallel();
  if (!v1::DataParallelSharding_IsValid(par.data_parallel_sharding())) {
    return Invalid("parallel.data_parallel_sharding",
                   "must be a known strategy",
                   absl::StrCat(par.data_parallel_sharding()));
  }
  // Megatron-FSDP shards over one pipeline stage's ranks only when there is
  // one stage: its adapter lays every rank of the world out as a
  // (DP x CP) x (EP x) TP mesh and asserts the mesh's rows are the DP
  // group (core/distributed/fsdp/mcore_fsdp_adapter.py _get_dp_tp_mesh,
  // from core 0.15.0 on), which with PP > 1 they are not, so wrapping the
  // model fails. Custom FSDP before it documented TP, EP and CP only
  // (docs custom_fsdp.md; NVIDIA/Megatron-LM#1455, "custom_fsdp compatible
  // with PP?", open), and no release tests FSDP with PP > 1. Such a launch
  // never trains; its estimate would be of a job that does not exist.
  if (par.data_parallel_sharding() != v1::DATA_PARALLEL_SHARDING_UNSPECIFIED &&
      par.pipeline_parallel() > 1) {
    return Invalid("parallel.data_parallel_sharding",
                   "needs parallel.pipeline_parallel 1: Megatron-FSDP does "
                   "not run with pipeline parallelism (its device mesh spans "
                   "DP x CP x TP ranks only)",
                   absl::StrCat("pipeline_parallel ", par.pipeline_parallel()));
  }
  // A communication unit beyond any model's size is a typo (and keeps the
  // count exact in a double).
  if (par.fsdp_communication_unit_size() > kMaxFsdpCommunicationUnit) {
    return Invalid("parallel.fsdp_communication_unit_size",
                   absl::StrCat("must be at most ", kMaxFsdpCommunicationUnit,
                                " parameters"),
                   absl::StrCat(par.fsdp_communication_unit_size()));
  }
  if (tr.has_fp8()) {
    if (!IsBf16(tr.precision()) && tr.precision() != v1::PRECISION_FP16) {
      return Invalid("training.fp8", "needs bf16 or fp16 training",
                     v1::Precision_Name(tr.precision()));
    }
    if (!v1::Fp8::Recipe_IsValid(tr.fp8().recipe())) {
      return Invalid("training.fp8.recipe", "must be a known recipe",
                     absl::StrCat(tr.fp8().recipe()));
    }
    MEMGATE_RETURN_IF_ERROR(ValidateFp8Gpu(job));
    if (tr.fp8().recipe() == v1::Fp8::RECIPE_NVFP4 &&
        tr.fp8().param_gather()) {
      return Invalid("training.fp8.param_gather",
                     "NVFP4 weights kept in fp4 (--fp4-param-gather: the "
                     "distributed optimizer's NVFP4 shards) are not "
                     "modelled",
                     "true");
    }
    MEMGATE_RETURN_IF_ERROR(ValidateBf16Layers(job));
    MEMGATE_RETURN_IF_ERROR(ValidateFp8OutputProjection(job));
    const auto sharding = par.data_parallel_sharding();
    if (tr.fp8().param_gather() && !par.distributed_optimizer() &&
        (sharding == v1::DATA_PARALLEL_SHARDING_UNSPECIFIED ||
         sharding == v1::DATA_PARALLEL_SHARDING_NO_SHARD)) {
      return Invalid("training.fp8.param_gather",
                     "needs the distributed optimizer or FSDP sharding (the "
                     "fp32 master weights live in the sharded optimizer)",
                     "true");
    }
  }
  return absl::OkStatus();
}

// Interleaved 1F1B's micro-batch groups, under the rules Megatron's
// forward_backward_pipelining_with_interleaving raises on (schedules.py):
// a chunk runs N micro-batches in a row, p <= N <= m, and the m % N left
// over for the last group is 0 or at least p (N defaults to p, so then m
// must be a multiple of p). A group set without interleaving is refused:
// Megatron would ignore it, and a job that names it meant something else.
absl::Status ValidateMicrobatchGroup(const v1::Job& job) {
  const v1::ParallelConfig& par = job.parallel();
  const uint64_t group = par.microbatch_group_size();
  const uint64_t p = par.pipeline_parallel();
  if (par.virtual_pipeline_stages() < 2) {
    if (group == 0) return absl::OkStatus();
    return Invalid("parallel.microbatch_group_size",
                   "needs parallel.virtual_pipeline_stages of 2 or more (it "
                   "groups interleaved 1F1B's micro-batches)",
                   absl::StrCat(group));
  }
  if (group != 0 && group < p) {
    return Invalid("parallel.microbatch_group_size",
                   absl::StrCat("must be at least parallel.pipeline_parallel "
                                "= ", p, " (Megatron's --microbatch-group-"
                                "size-per-virtual-pipeline-stage; its "
                                "schedules.py raises below)"),
                   absl::StrCat(group));
  }
  const v1::TrainingConfig& tr = job.training();
  if (tr.global_batch_size() == 0) return absl::OkStatus();
  const uint64_t d = job.num_gpus() / par.tensor_parallel() / p /
                     par.context_parallel();
  const uint64_t m = tr.global_batch_size() / tr.micro_batch_size() / d;
  const uint64_t n = group == 0 ? p : group;
  if (InterleavedGroupsRun(p, n, m)) return absl::OkStatus();
  const char* field = group == 0 ? "training.global_batch_size"
                                 : "parallel.microbatch_group_size";
  if (n > m) {
    return Invalid(
        field,
        absl::StrCat("interleaved 1F1B runs groups of ", n,
                     " micro-batches a chunk (parallel.microbatch_group_size, "
                     "default pipeline_parallel): the step's ", m,
                     " micro-batches must be at least that (Megatron's "
                     "schedules.py)"),
        absl::StrCat(group == 0 ? tr.global_batch_size() : group));
  }
  return Invalid(
      field,
      absl::StrCat("interleaved 1F1B's last group of micro-batches is the "
                   "step's ", m, " modulo the group of ", n, " = ", m % n,
                   ": it must be 0 or at least pipeline_parallel = ", p,
                   " (Megatron's schedules.py)"),
      absl::StrCat(group == 0 ? tr.global_batch_size() : group));
}

absl::Status ValidateTraining(const v1::Job& job) {
  const v1::TrainingConfig& tr = job.training();
  const v1::ParallelConfig& par = job.parallel();
  if (tr.local_layer_spec() &&
      tr.attention_kernel() != v1::ATTENTION_KERNEL_LOCAL) {
    // get_gpt_layer_local_submodules: DotProductAttention, always.
    return Invalid("training.local_layer_spec",
                   "needs training.attention_kernel ATTENTION_KERNEL_LOCAL "
                   "(the local spec's core attention is Megatron's own)",
                   v1::AttentionKernel_Name(tr.attention_kernel()));
  }
  MEMGATE_RETURN_IF_ERROR(
      RequirePositive("training.micro_batch_size", tr.micro_batch_size()));
  MEMGATE_RETURN_IF_ERROR(
      RequirePositive("training.seq_length", tr.seq_length()));
  const uint64_t c = par.context_parallel(), t = par.tensor_parallel();
  if (c > 1) {  // load-balanced CP splits the sequence into 2c chunks
    MEMGATE_RETURN_IF_ERROR(RequireMultiple(
        "training.seq_length", tr.seq_length(),
        "2 x parallel.context_parallel (context-parallel load balancing)",
        2 * c));
  }
  if (t > 1 && par.sequence_parallel()) {
    // Each context-parallel rank's s / c tokens are split over t.
    MEMGATE_RETURN_IF_ERROR(RequireMultiple(
        "training.seq_length", tr.seq_length(),
        "parallel.context_parallel x parallel.tensor_parallel (sequence "
        "parallelism splits each context-parallel rank's tokens over TP)",
        c * t));
  }
  if (tr.global_batch_size() != 0) {
    const uint64_t d = job.num_gpus() / t / par.pipeline_parallel() / c;
    const uint64_t gbs = tr.global_batch_size(), b = tr.micro_batch_size();
    if (gbs % b != 0 || (gbs / b) % d != 0) {
      return Invalid("training.global_batch_size",
                     absl::StrCat("must be a multiple of micro_batch_size x "
                                  "data_parallel = ",
                                  b, " x ", d),
                     absl::StrCat(gbs));
    }
  }
  MEMGATE_RETURN_IF_ERROR(ValidateMicrobatchGroup(job));
  if (tr.defer_embedding_wgrad()) {
    if (par.pipeline_parallel() < 2) {
      return Invalid("training.defer_embedding_wgrad",
                     "needs parallel.pipeline_parallel of 2 or more "
                     "(Megatron raises without pipelining)",
                     "true");
    }
    if (tr.global_batch_size() == 0 && tr.wgrad_deferral_limit() == 0) {
      return Invalid("training.defer_embedding_wgrad",
                     "needs training.global_batch_size or "
                     "training.wgrad_deferral_limit: every micro-batch of "
                     "the step is deferred",
                     "neither");
    }
  } else if (tr.wgrad_deferral_limit() != 0) {
    return Invalid("training.wgrad_deferral_limit",
                   "applies with training.defer_embedding_wgrad only",
                   absl::StrCat(tr.wgrad_deferral_limit()));
  }
  if (!v1::Precision_IsValid(tr.precision()) ||
      tr.precision() == v1::PRECISION_UNSPECIFIED) {
    return Invalid("training.precision", "must be a known precision",
                   absl::StrCat(tr.precision()));
  }
  for (auto [field, p] : {std::pair<const char*, float>{
                              "training.hidden_dropout", tr.hidden_dropout()},
                          {"training.attention_dropout",
                           tr.attention_dropout()}}) {
    if (!(p >= 0 && p < 1)) {
      return Invalid(field, "must be a probability in [0, 1)",
                     absl::StrCat(p));
    }
  }
  if (tr.has_sgd_momentum() &&
      !(tr.sgd_momentum() >= 0 && tr.sgd_momentum() < 1)) {
    return Invalid("training.sgd_momentum", "must lie in [0, 1)",
                   absl::StrCat(tr.sgd_momentum()));
  }
  if (!v1::Optimizer_IsValid(tr.optimizer())) {
    return Invalid("training.optimizer", "must be a known optimizer",
                   absl::StrCat(tr.optimizer()));
  }
  if (!v1::AttentionKernel_IsValid(tr.attention_kernel())) {
    return Invalid("training.attention_kernel", "must be a known kernel",
                   absl::StrCat(tr.attention_kernel()));
  }
  // What TransformerEngine can run (attention_backend.h): an unset kernel
  // resolved to it; an explicit FLASH that no fused kernel takes has no
  // backend at all.
  const std::string& gpu = job.accelerator().name();
  const TeSwitches switches = TeSwitchesOf(tr);
  const TeAttention te =
      TransformerEngineAttention(job.model(), tr.precision(), gpu, switches);
  if (tr.attention_kernel() == v1::ATTENTION_KERNEL_FLASH &&
      te == TeAttention::kUnfusedOnly) {
    return Invalid("training.attention_kernel",
                   absl::StrCat(WhyNoFusedAttention(job.model(),
                                                    tr.precision(), gpu,
                                                    switches),
                                ", so it runs the unfused attention "
                                "(ATTENTION_KERNEL_UNFUSED, what an unset "
                                "kernel resolves to)"),
                   "ATTENTION_KERNEL_FLASH");
  }
  if (te == TeAttention::kUnfusedUnlessFlex) {
    // Gemma 2's own attention, flex or not, raises at CP > 1; its flex
    // path runs only without a dataloader mask and attention dropout
    // (attention_backend.h).
    if (c > 1) {
      return Invalid("parallel.context_parallel",
                     absl::StrCat(WhyNoFusedAttention(job.model(),
                                                      tr.precision(), gpu),
                                  "; that attention raises at context "
                                  "parallel > 1"),
                     absl::StrCat(c));
    }
    if (tr.attention_kernel() == v1::ATTENTION_KERNEL_FLASH &&
        (tr.dataloader_attention_mask() || tr.attention_dropout() > 0)) {
      return Invalid(
          "training.attention_kernel",
          "FLASH for soft-capped scores is Megatron-Bridge's FlexAttention "
          "path, which falls back to the unfused attention where the "
          "dataloader sends a mask or attention dropout is on",
          tr.dataloader_attention_mask()
              ? "ATTENTION_KERNEL_FLASH with training.dataloader_attention_mask"
              : "ATTENTION_KERNEL_FLASH with training.attention_dropout > 0");
    }
  }
  if (!v1::SoftmaxType_IsValid(job.model().softmax_type())) {
    return Invalid("model.softmax_type", "must be a known softmax type",
                   absl::StrCat(job.model().softmax_type()));
  }
  if (job.model().softmax_type() != v1::SOFTMAX_TYPE_VANILLA) {
    // Attention sinks (transformer_engine.py softmax_type; TE's
    // dot_product_attention/utils.py "Filter: Softmax type"): no
    // FlashAttention; cuDNN's fused attention where the installed cuDNN
    // has them, TE's unfused attention otherwise. An unset kernel with
    // FlashAttention allowed (Megatron's --attention-backend auto) gets one
    // or the other by a library version memgate cannot see, and their
    // memory differs by the s x s scores: the job says which. FlashAttention
    // off (training.flash_attention_disabled, --attention-backend fused)
    // is cuDNN's; UNFUSED and LOCAL keep the scores; so does a
    // deterministic run, which TransformerEngine gives its unfused
    // attention (attention_backend.h: kUnfusedOnly, as an unset kernel
    // resolves).
    const std::string softmax =
        v1::SoftmaxType_Name(job.model().softmax_type());
    const bool fused_kernel =
        tr.attention_kernel() == v1::ATTENTION_KERNEL_UNSPECIFIED ||
        tr.attention_kernel() == v1::ATTENTION_KERNEL_FLASH;
    if (fused_kernel && !tr.flash_attention_disabled() &&
        te != TeAttention::kUnfusedOnly) {
      return Invalid("model.softmax_type",
                     "FlashAttention cannot run attention sinks, and "
                     "TransformerEngine runs them in cuDNN's fused attention "
                     "where the installed cuDNN has them (no s x s scores) "
                     "and in its unfused attention otherwise (the scores "
                     "kept), which memgate cannot tell apart: say which "
                     "(training.flash_attention_disabled: cuDNN's, "
                     "`--attention=fused`; or ATTENTION_KERNEL_UNFUSED, "
                     "`--attention=unfused`)",
                     absl::StrCat(softmax, " with ",
                                  v1::AttentionKernel_Name(
                                      tr.attention_kernel())));
    }
    if (fused_kernel && te != TeAttention::kUnfusedOnly && c > 1 &&
        par.context_parallel_comm() != v1::CONTEXT_PARALLEL_COMM_A2A) {
      return Invalid("parallel.context_parallel_comm",
                     "attention sinks (model.softmax_type) under context "
                     "parallelism run in TransformerEngine's fused attention "
                     "over an all-to-all only (CONTEXT_PARALLEL_COMM_A2A)",
                     v1::ContextParallelComm_Name(
                         par.context_parallel_comm()));
    }
  }
  // Sliding windows under context parallelism: TransformerEngine's
  // context_parallel.py asserts cp_comm_type a2a or all_gather ("Context
  // parallelism does not support sliding window attention with ...").
  const v1::ContextParallelComm comm = par.context_parallel_comm();
  if (job.model().sliding_window() && c > 1 &&
      comm != v1::CONTEXT_PARALLEL_COMM_A2A &&
      comm != v1::CONTEXT_PARALLEL_COMM_ALL_GATHER) {
    return Invalid("parallel.context_parallel_comm",
                   "sliding-window layers (model.sliding_window) under "
                   "context parallelism run over an all-to-all or an "
                   "all-gather only (TransformerEngine's context_parallel.py "
                   "asserts)",
                   v1::ContextParallelComm_Name(comm));
  }
  if ((tr.attention_kernel() == v1::ATTENTION_KERNEL_UNFUSED ||
       tr.attention_kernel() == v1::ATTENTION_KERNEL_LOCAL) &&
      c > 1) {
    const std::string why =
        WhyNoFusedAttention(job.model(), tr.precision(), gpu, switches);
    return Invalid("training.attention_kernel",
                   absl::StrCat(why.empty() ? "" : why + ", so ",
                                "unfused attention, which cannot run with "
                                "context parallelism (Megatron's CP needs "
                                "TransformerEngine's fused attention)"),
                   absl::StrCat(v1::AttentionKernel_Name(tr.attention_kernel()),
                                " with context_parallel > 1"));
  }
  const v1::MlpActivation act = job.model().mlp_activation();
  if (tr.fused_swiglu() && !IsSwigluMlp(job.model())) {
    return Invalid("training.fused_swiglu",
                   "applies to a SwiGLU MLP only (Megatron fuses no other "
                   "gated activation this way)",
                   absl::StrCat("model.mlp_activation ",
                                v1::MlpActivation_Name(act)));
  }
  if (tr.glu_linear_copy() &&
      (!IsSwigluMlp(job.model()) || tr.fused_swiglu())) {
    return Invalid("training.glu_linear_copy",
                   "applies to Megatron's unfused SwiGLU only (the fused "
                   "kernel and TransformerEngine's op make no copy; "
                   "quick-GeGLU and GeGLU count their own)",
                   tr.fused_swiglu() ? "fused_swiglu true"
                                     : absl::StrCat("model.mlp_activation ",
                                                    v1::MlpActivation_Name(
                                                        act)));
  }
  if (tr.activation_fp8_input_store() && !tr.fused_swiglu()) {
    return Invalid("training.activation_fp8_input_store",
                   "needs training.fused_swiglu: only an activation that "
                   "saves its input alone stores it in fp8 (Megatron's "
                   "unfused SwiGLU ignores the setting; it is SwiGLU's only)",
                   "fused_swiglu false");
  }
  if (tr.fp32_local_grad_accumulation()) {
    // bf16 training reduces its gradients in fp32 unless told otherwise
    // (arguments.py), and Megatron's DDP config then asserts.
    if (tr.precision() == v1::PRECISION_BF16_FP32_GRADS) {
      return Invalid("training.fp32_local_grad_accumulation",
                     "cannot be set with fp32 gradient reduction (Megatron "
                     "asserts grad_reduce_in_fp32 off: bf16 gradients, "
                     "--grad-reduce-in-bf16)",
                     "precision PRECISION_BF16_FP32_GRADS");
    }
    if (job.parallel().data_parallel_sharding() !=
        v1::DATA_PARALLEL_SHARDING_UNSPECIFIED) {
      return Invalid("training.fp32_local_grad_accumulation",
                     "is Megatron's DDP's; Megatron-FSDP keeps its own "
                     "gradient buffers and does not read it",
                     "parallel.data_parallel_sharding set");
    }
  }
  if (!v1::TrainingConfig::TpCommOverlap_IsValid(tr.tp_comm_overlap())) {
    return Invalid("training.tp_comm_overlap", "must be a known setting",
                   absl::StrCat(tr.tp_comm_overlap()));
  }
  // arguments.py: the overlap asserts sequence parallelism, which Megatron
  // turns off at TP 1.
  if (tr.tp_comm_overlap() != v1::TrainingConfig::TP_COMM_OVERLAP_OFF &&
      (job.parallel().tensor_parallel() < 2 ||
       !job.parallel().sequence_parallel())) {
    return Invalid("training.tp_comm_overlap",
                   "needs sequence parallelism with TP > 1 (Megatron "
                   "asserts --sequence-parallel with --tp-comm-overlap)",
                   absl::StrCat("TP ", job.parallel().tensor_parallel(),
                                job.parallel().sequence_parallel()
                                    ? " with"
                                    : " without",
                                " sequence parallelism"));
  }
  const v1::Recompute& r = tr.recompute();
  if (!v1::Recompute::Granularity_IsValid(r.granularity()) ||
      !v1::Recompute::Method_IsValid(r.method())) {
    return Invalid("training.recompute", "must name a known granularity and "
                   "method", r.ShortDebugString());
  }
  if (r.granularity() == v1::Recompute::GRANULARITY_FULL) {
    if (r.method() == v1::Recompute::METHOD_UNSPECIFIED) {
      return Invalid("training.recompute.method",
                     "must be METHOD_UNIFORM or METHOD_BLOCK with full "
                     "recomputation", "unset");
    }
    // METHOD_BLOCK of 0 layers a stage recomputes none (Megatron's
    // transformer_block.py); uniform groups need a layer.
    if (r.method() == v1::Recompute::METHOD_UNIFORM) {
      MEMGATE_RETURN_IF_ERROR(
          RequirePositive("training.recompute.num_layers", r.num_layers()));
    }
  } else if (r.method() != v1::Recompute::METHOD_UNSPECIFIED ||
             r.num_layers() != 0) {
    return Invalid("training.recompute",
                   "method and num_layers apply to GRANULARITY_FULL only",
                   r.ShortDebugString());
  }
  // Megatron-Core 0.14 on recomputes MTP layers one at a time under
  // uniform recomputation and asserts groups of one layer
  // (megatron_release.h RecomputesMtpLayers); memgate counts the MTP
  // layers' activations whole either way (an upper bound).
  if (job.model().mtp_num_layers() > 0 &&
      r.granularity() == v1::Recompute::GRANULARITY_FULL &&
      r.method() == v1::Recompute::METHOD_UNIFORM && r.num_layers() > 1) {
    const absl::StatusOr<MegatronCoreRelease> release =
        ParseMegatronCoreRelease(tr.megatron_core_version());
    if (tr.megatron_core_version().empty() || !release.ok() ||
        RecomputesMtpLayers(*release)) {
      return Invalid(
          "training.recompute.num_layers",
          "must be 1 under uniform recomputation with MTP layers "
          "(Megatron-Core 0.14 on asserts it, multi_token_prediction.py; "
          "an earlier release, named in training.megatron_core_version or "
          "memgate's --megatron-core, does not recompute them)",
          absl::StrCat(r.num_layers(), " with ", job.model().mtp_num_layers(),
                       " MTP layers"));
    }
  }
  // Megatron's rules for --distribute-saved-activations (arguments.py
  // asserts TP > 1 and full recomputation; transformer_config.py raises
  // beside sequence parallelism).
  if (r.distribute_saved_activations() &&
      (r.granularity() != v1::Recompute::GRANULARITY_FULL ||
       job.parallel().tensor_parallel() < 2 ||
       job.parallel().sequence_parallel())) {
    return Invalid("training.recompute.distribute_saved_activations",
                   "needs full recomputation and TP > 1 without sequence "
                   "parallelism (Megatron refuses it otherwise)",
                   absl::StrCat(v1::Recompute::Granularity_Name(
                                    r.granularity()),
                                ", TP ", job.parallel().tensor_parallel(),
                                job.parallel().sequence_parallel()
                                    ? " with"
                                    : " without",
                                " sequence parallelism"));
  }
  const v1::ModelConfig& m = job.model();
  // Recomputed modules Megatron refuses beside other settings
  // (transformer_config.py __post_init__, ValueError), as the launch
  // reader does: such a job never trains.
  const bool delayed_fp8 =
      tr.has_fp8() && (tr.fp8().recipe() == v1::Fp8::RECIPE_DELAYED ||
                       tr.fp8().recipe() == v1::Fp8::RECIPE_UNSPECIFIED);
  for (int module : r.modules()) {
    if (module == v1::Recompute::MODULE_MLA_UP_PROJ && !m.has_mla()) {
      return Invalid("training.recompute.modules",
                     "MODULE_MLA_UP_PROJ needs multi-latent attention "
                     "(Megatron refuses it otherwise)",
                     "no model.mla");
    }
    if (module == v1::Recompute::MODULE_MOE_ACT &&
        (m.moe().num_experts() == 0 || !m.moe().grouped_gemm())) {
      return Invalid("training.recompute.modules",
                     "MODULE_MOE_ACT needs routed experts with grouped GEMMs "
                     "(Megatron: 'moe_act in recompute_modules is only "
                     "supported with moe_grouped_gemm')",
                     m.moe().num_experts() == 0
                         ? "no model.moe.num_experts"
                         : "model.moe.grouped_gemm false");
    }
    if (delayed_fp8 && (module == v1::Recompute::MODULE_MOE_ACT ||
                        module == v1::Recompute::MODULE_LAYERNORM)) {
      return Invalid("training.recompute.modules",
                     "MODULE_MOE_ACT and MODULE_LAYERNORM need an fp8 recipe "
                     "other than delayed (Megatron: delayed scaling does not "
                     "support moe_act and layernorm recompute for fp8)",
                     v1::Recompute::Module_Name(
                         static_cast<v1::Recompute::Module>(module)));
    }
  }
  MEMGATE_RETURN_IF_ERROR(ValidateOptimizerStorage(job));
  if (m.position_embedding() == v1::POSITION_EMBEDDING_LEARNED_ABSOLUTE &&
      m.max_position_embeddings() != 0 &&
      m.max_position_embeddings() < tr.seq_length()) {
    return Invalid("model.max_position_embeddings",
                   absl::StrCat("must cover training.seq_length = ",
                                tr.seq_length()),
                   absl::StrCat(m.max_position_embeddings()));
  }
  return absl::OkStatus();
}

}  // namespace

// The flex dispatcher (DeepEP) over an ETP x EP group of `group` ranks:
// Megatron asserts TP x EP > 1 and refuses drop-and-pad with DeepEP
// (transformer_config.py); DeepEP has configs for a few group sizes only
// and runs on an even number of SMs (deepep_buffers.h).
// --overlap-moe-expert-parallel-comm under Megatron's own rules
// (transformer_config.py __post_init__ asserts), so that what is estimated
// is a job Megatron runs.
absl::Status ValidateExpertOverlap(const v1::Job& job, uint64_t ep) {
  if (!job.model().moe().overlap_expert_parallel_comm()) {
    return absl::OkStatus();
  }
  const char* field = "model.moe.overlap_expert_parallel_comm";
  const v1::ParallelConfig& par = job.parallel();
  const v1::TrainingConfig& tr = job.training();
  if (ep < 2) {
    return Invalid(field, "needs parallel.expert_parallel of 2 or more",
                   absl::StrCat(ep));
  }
  if (job.model().moe().token_dispatcher() ==
      v1::MoeConfig::DISPATCHER_ALLGATHER) {
    return Invalid(field, "needs the alltoall or flex dispatcher",
                   "allgather");
  }
  if (tr.precision() == v1::PRECISION_FP32) {
    return Invalid(field, "needs bf16 or fp16 training", "fp32");
  }
  if (par.pipeline_parallel() > 1 && par.virtual_pipeline_stages() < 2) {
    return Invalid(field,
                   "needs parallel.virtual_pipeline_stages when "
                   "pipeline_parallel > 1",
                   absl::StrCat(par.virtual_pipeline_stages()));
  }
  if (tr.recompute().granularity() == v1::Recompute::GRANULARITY_FULL) {
    return Invalid(field, "cannot be used with full recomputation", "full");
  }
  for (int module : tr.recompute().modules()) {
    if (module == v1::Recompute::MODULE_MOE) {
      return Invalid(field, "cannot be used with the moe module recomputed",
                     "moe");
    }
  }
  if (job.model().mtp_num_layers() > 1) {
    return Invalid(field, "allows at most one MTP layer",
                   absl::StrCat(job.model().mtp_num_layers()));
  }
  return absl::OkStatus();
}

absl::Status ValidateFlexDispatcher(const v1::MoeConfig& moe,
                                    uint64_t group) {
  if (moe.token_dispatcher() != v1::MoeConfig::DISPATCHER_FLEX) {
    if (moe.flex_dispatcher_num_sms() > 0) {
      return Invalid("model.moe.flex_dispatcher_num_sms",
                     "needs token_dispatcher DISPATCHER_FLEX",
                     absl::StrCat(moe.flex_dispatcher_num_sms()));
    }
    return absl::OkStatus();
  }
  if (group > UINT32_MAX || !DeepEpSupportsGroup(static_cast<uint32_t>(group))) {
    return Invalid("parallel.expert_parallel",
                   "x expert_tensor_parallel must be a group size DeepEP has "
                   "a config for with the flex dispatcher (2, 4, 8, 16, 24, "
                   "32, 48, 64, 96, 128, 144 or 160)",
                   absl::StrCat(group));
  }
  if (moe.pad_to_capacity()) {
    return Invalid("model.moe.pad_to_capacity",
                   "is not supported by the flex dispatcher with DeepEP "
                   "(Megatron refuses it)",
                   "true");
  }
  const uint32_t sms = moe.flex_dispatcher_num_sms();
  if (sms > 0 && (sms % 2 != 0 || sms > 1024)) {
    return Invalid("model.moe.flex_dispatcher_num_sms",
                   "must be even (DeepEP pairs SMs into channels) and at "
                   "most 1024",
                   absl::StrCat(sms));
  }
  return absl::OkStatus();
}

absl::Status ValidateJob(const v1::Job& job) {
  MEMGATE_RETURN_IF_ERROR(ValidateModel(job.model()));
  MEMGATE_RETURN_IF_ERROR(ValidateParallel(job));
  MEMGATE_RETURN_IF_ERROR(ValidateTraining(job));
  if (job.accelerator().memory_bytes() == 0) {
    return Invalid("accelerator.memory_bytes",
                   "must be set (or accelerator.name must name a known GPU)",
                   "0");
  }
  return absl::OkStatus();
}

absl::Status ValidateThreshold(double threshold) {
  if (std::isfinite(threshold) && threshold > 0 && threshold <= 1) {
    return absl::OkStatus();
  }
  return Invalid("threshold", "must be a fraction in (0, 1]",
                 absl::StrCat(threshold));
}

}  // namespace memgate
