#include "estimator/job_resolver.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "estimator/attention_backend.h"
#include "estimator/catalog.h"
#include "estimator/megatron_release.h"

namespace memgate {
namespace {

bool HasAllDimensions(const v1::ModelConfig& m) {
  return m.num_layers() && m.hidden_size() && m.ffn_hidden_size() &&
         m.num_attention_heads() && m.num_query_groups() && m.vocab_size();
}

// Copies into `into` the catalog model's architecture it leaves unset:
// the MLP's activation and the norm (unset reads as the paper's SwiGLU and
// RMSNorm, which Nemotron-4 is not), experts, MLA, MTP, head_dim, QK-norm,
// and gpt-oss's biases, clamped activation, attention sinks and YaRN
// positions (unset read as none: a job naming gpt-oss was estimated
// without sinks, admitted where the plan asked which kernel runs them).
// Every field a catalog entry sets is copied (job_resolver_test
// ANameAloneResolvesToItsCatalogModel). A proto3 MergeFrom copies only the
// fields set to other than 0.
void FillArchitectureGaps(const v1::ModelConfig& from,
                          v1::ModelConfig& into) {
  if (into.mlp_activation() == v1::MLP_ACTIVATION_UNSPECIFIED) {
    into.set_mlp_activation(from.mlp_activation());
  }
  if (into.normalization() == v1::NORMALIZATION_UNSPECIFIED) {
    into.set_normalization(from.normalization());
  }
  if (from.has_moe() && into.moe().num_experts() == 0) {
    // A job naming a catalog MoE model may set expert settings (grouped
    // GEMMs, the dispatcher, a plan candidate's) without the experts
    // themselves: they apply over the catalog's experts, never replace
    // them with none.
    v1::MoeConfig merged = from.moe();
    if (into.moe().layer_pattern_size() > 0) merged.clear_layer_pattern();
    merged.MergeFrom(into.moe());
    *into.mutable_moe() = merged;
  }
  // Likewise MLA settings (the fused down projection) without the
  // latents: over the catalog's MLA (kv_lora_rank 0 is no latent at all).
  if (from.has_mla() && into.mla().kv_lora_rank() == 0) {
    v1::MlaConfig merged = from.mla();
    merged.MergeFrom(into.mla());
    *into.mutable_mla() = merged;
  }
  if (!into.mtp_num_layers()) into.set_mtp_num_layers(from.mtp_num_layers());
  if (!into.head_dim()) into.set_head_dim(from.head_dim());
  if (!into.qk_norm() && !into.qk_l2_norm()) {
    into.set_qk_norm(from.qk_norm());
    into.set_qk_l2_norm(from.qk_l2_norm());
  }
  // A bool left false cannot say "none": the named model's stands.
  if (!into.linear_bias()) into.set_linear_bias(from.linear_bias());
  if (!into.activation_clamp()) {
    into.set_activation_clamp(from.activation_clamp());
  }
  if (into.softmax_type() == v1::SOFTMAX_TYPE_VANILLA) {
    into.set_softmax_type(from.softmax_type());
  }
  if (into.position_embedding() == v1::POSITION_EMBEDDING_UNSPECIFIED) {
    into.set_position_embedding(from.position_embedding());
  }
  if (!into.sliding_window()) into.set_sliding_window(from.sliding_window());
}

// Copies into `into` every dimension it leaves at 0.
void FillModelGaps(const v1::ModelConfig& from, v1::ModelConfig& into) {
  if (!into.num_layers()) into.set_num_layers(from.num_layers());
  if (!into.hidden_size()) into.set_hidden_size(from.hidden_size());
  if (!into.ffn_hidden_size()) into.set_ffn_hidden_size(from.ffn_hidden_size());
  if (!into.num_attention_heads())
    into.set_num_attention_heads(from.num_attention_heads());
  if (!into.num_query_groups())
    into.set_num_query_groups(from.num_query_groups());
  if (!into.vocab_size()) into.set_vocab_size(from.vocab_size());
  FillArchitectureGaps(from, into);
}

absl::Status ResolveModelInPlace(v1::ModelConfig& model) {
  if (model.name().empty()) return absl::OkStatus();  // validation names gaps
  if (HasAllDimensions(model)) {
    // A catalog name still brings what a dimension list cannot say: a
    // job naming deepseek-v3 is never estimated as a dense model.
    if (const v1::ModelConfig* known = LookupModel(model.name())) {
      FillArchitectureGaps(*known, model);
    }
    return absl::OkStatus();
  }
  const v1::ModelConfig* known = LookupModel(model.name());
  if (known == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        FindModel(model.name()).status().message(),
        "; give every dimension explicitly for a model not in the catalog"));
  }
  FillModelGaps(*known, model);
  if (model.name() != known->name()) model.set_name(known->name());
  return absl::OkStatus();
}

absl::Status ResolveAccelerator(v1::Accelerator& gpu) {
  if (gpu.name().empty()) return absl::OkStatus();
  const v1::Accelerator* known = LookupAccelerator(gpu.name());
  if (known == nullptr) {
    if (gpu.memory_bytes() != 0) return absl::OkStatus();  // a custom GPU
    return absl::InvalidArgumentError(absl::StrCat(
        FindAccelerator(gpu.name()).status().message(),
        "; or give accelerator.memory_bytes for a GPU not in the catalog"));
  }
  if (gpu.memory_bytes() == 0) gpu.set_memory_bytes(known->memory_bytes());
  if (gpu.gpus_per_node() == 0) gpu.set_gpus_per_node(known->gpus_per_node());
  if (gpu.name() != known->name()) gpu.set_name(known->name());
  return absl::OkStatus();
}

// training.megatron_core_version sets what the release decides and the
// job leaves unset: where MoE layers apply the routing probabilities. A
// job that says otherwise is refused by field, so that a release cannot
// quietly undo what a launch's arguments dated (megatron_moe_args.cc).
absl::Status ResolveRelease(v1::Job& job) {
  const std::string& version = job.training().megatron_core_version();
  if (version.empty()) return absl::OkStatus();
  auto invalid = [](const absl::Status& s) {
    return absl::InvalidArgumentError(
        absl::StrCat("training.megatron_core_version: ", s.message()));
  };
  const absl::StatusOr<MegatronCoreRelease> release =
      ParseMegatronCoreRelease(version);
  if (!release.ok()) return invalid(release.status());
  const absl::StatusOr<v1::MoeConfig::ProbsApplied> applied =
      RoutingProbsAppliedBy(*release);
  if (!applied.ok()) return invalid(applied.status());
  if (!job.model().has_moe()) return absl::OkStatus();
  v1::MoeConfig& moe = *job.mutable_model()->mutable_moe();
  switch (moe.routing_probs_applied()) {
    case v1::MoeConfig::PROBS_APPLIED_UNSPECIFIED:
      moe.set_routing_probs_applied(*applied);
      return absl::OkStatus();
    case v1::MoeConfig::PROBS_APPLIED_ON_INPUT:
      return absl::OkStatus();
    default:
      if (moe.routing_probs_applied() == *applied) return absl::OkStatus();
      // An unknown enum value is validation's to name.
      if (!v1::MoeConfig::ProbsApplied_IsValid(moe.routing_probs_applied())) {
        return absl::OkStatus();
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "training.megatron_core_version: core ", version, " applies the "
          "routing probabilities ",
          *applied == v1::MoeConfig::PROBS_APPLIED_AT_UNPERMUTE
              ? "at unpermute"
              : "in the experts",
          ", but model.moe.routing_probs_applied is ",
          v1::MoeConfig::ProbsApplied_Name(moe.routing_probs_applied()),
          " (the job sets it or a launch's arguments date it): they "
          "disagree"));
  }
}

}  // namespace

absl::StatusOr<v1::ModelConfig> ResolveModel(const v1::ModelConfig& model) {
  v1::ModelConfig resolved = model;
  if (absl::Status s = ResolveModelInPlace(resolved); !s.ok()) return s;
  return resolved;
}

absl::StatusOr<v1::Job> ResolveJob(const v1::Job& job) {
  v1::Job resolved = job;
  if (absl::Status s = ResolveJobInPlace(resolved); !s.ok()) return s;
  return resolved;
}

absl::Status ResolveJobInPlace(v1::Job& resolved) {
  if (absl::Status s = ResolveModelInPlace(*resolved.mutable_model());
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ResolveAccelerator(*resolved.mutable_accelerator());
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ResolveRelease(resolved); !s.ok()) return s;
  v1::ParallelConfig& parallel = *resolved.mutable_parallel();
  if (!parallel.has_sequence_parallel()) parallel.set_sequence_parallel(true);
  if (!parallel.has_distributed_optimizer()) {
    parallel.set_distributed_optimizer(true);
  }
  v1::TrainingConfig& training = *resolved.mutable_training();
  if (training.precision() == v1::PRECISION_UNSPECIFIED) {
    training.set_precision(v1::PRECISION_BF16_FP32_GRADS);
  }
  // An unset kernel is what Megatron's --attention-backend auto runs
  // (attention_backend.h): TransformerEngine's unfused attention where no
  // FlashAttention 2 or cuDNN fused kernel takes the precision, head
  // dimensions and GPU (fp32; over 256, over 192 on an L40S;
  // FlashAttention 3 aside, not multiples of 8; with FlashAttention
  // disabled, what cuDNN does not train). An explicit FLASH TE cannot run
  // is refused (validation.cc).
  if (training.attention_kernel() == v1::ATTENTION_KERNEL_UNSPECIFIED &&
      TransformerEngineAttention(resolved.model(), training.precision(),
                                 resolved.accelerator().name(),
                                 TeSwitchesOf(training)) !=
          TeAttention::kFlashOrFused) {
    training.set_attention_kernel(v1::ATTENTION_KERNEL_UNFUSED);
  }
  v1::ModelConfig& model = *resolved.mutable_model();
  if (model.position_embedding() ==
          v1::POSITION_EMBEDDING_LEARNED_ABSOLUTE &&
      model.max_position_embeddings() == 0) {
    // Megatron: max_position_embeddings defaults to seq_length.
    model.set_max_position_embeddings(training.seq_length());
  }
  return absl::OkStatus();
}

}  // namespace memgate
