#ifndef MEMGATE_CLIENT_JOB_FLAGS_H_
#define MEMGATE_CLIENT_JOB_FLAGS_H_

// The flags that describe one training job, shared by `estimate` and the
// commands that judge a job, and their translation into a v1::Job.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/flags.h"
#include "proto/memgate.pb.h"

namespace memgate::cli {

struct JobFlags {
  // Model: a catalog name, a Hugging Face config.json, and/or dimensions
  // (dimensions override what the name or file gives).
  std::optional<std::string> model, model_config;
  std::optional<uint32_t> layers, hidden, ffn_hidden, heads, kv_heads, vocab;
  std::optional<bool> tie_embeddings;
  // GPU: a catalog name and/or an explicit capacity.
  std::optional<std::string> gpu;
  std::optional<double> gpu_memory_gib;
  std::optional<uint32_t> gpus_per_node;
  // Parallelism and batch.
  std::optional<uint32_t> gpus, tp, cp, pp, dp, mbs, seq, gbs, ep, etp;
  // Interleaved 1F1B's model chunks a pipeline rank
  // (ParallelConfig.virtual_pipeline_stages).
  std::optional<uint32_t> vp;
  // Uneven stages in Megatron's --pipeline-model-parallel-layout syntax
  // (ParallelConfig.layers_per_stage; the layout fixes the chunks a rank).
  std::optional<std::string> pipeline_layout;
  std::optional<bool> sequence_parallel, distributed_optimizer;
  // Activation recomputation (TrainingConfig.recompute): "none",
  // "selective" or "full"; with full, "uniform" or "block" and the layers;
  // with selective, Megatron's module names, comma-separated.
  std::optional<std::string> recompute, recompute_method, recompute_modules;
  std::optional<uint32_t> recompute_layers;
  std::optional<std::string> precision;
  // The Megatron-Core release (TrainingConfig.megatron_core_version).
  std::optional<std::string> megatron_core;
  // Megatron's fused SwiGLU kernel (TrainingConfig.fused_swiglu): unset is
  // the paper's unfused count, a launch's own setting, or the job file's.
  std::optional<bool> fused_swiglu;
  // Megatron's --tp-comm-overlap (TrainingConfig.tp_comm_overlap, in
  // TransformerEngine's default configuration).
  std::optional<bool> tp_comm_overlap;
  // Megatron's --num-distributed-optimizer-instances
  // (ParallelConfig.distributed_optimizer_instances).
  std::optional<uint32_t> optimizer_instances;
  // Megatron's --cp-comm-type and a2a+p2p's inner size
  // (ParallelConfig.context_parallel_comm, context_parallel_a2a_size).
  std::optional<std::string> cp_comm_type;
  std::optional<uint32_t> cp_a2a_size;
  // The attention kernel that runs (TrainingConfig.attention_kernel):
  // "flash", "unfused" or "local"; unset, what Megatron's auto picks.
  std::optional<std::string> attention;
  // Megatron's --attention-softmax-in-fp32
  // (TrainingConfig.attention_softmax_in_fp32): with --attention=local.
  std::optional<bool> softmax_in_fp32;
  // Set by commands that judge a job (check --refuse-unreviewed): a
  // --model-config key memgate has not reviewed is an error, not a note.
  bool refuse_unreviewed = false;

  void Register(FlagSet& flags);
  // --pipeline-layout into `job`'s layers_per_stage and chunks a rank:
  // parsed against the job's pipeline size and its (or its catalog
  // model's) layer and MTP counts; INVALID_ARGUMENT names the flag and the
  // rule, beside a launch (which says its own split) or a --vp it
  // contradicts.
  absl::Status ApplyPipelineLayout(const std::string& text, bool from_launch,
                                   v1::Job& job) const;
  // --megatron-core, --fused-swiglu, --tp-comm-overlap,
  // --distributed-optimizer-instances, --cp-comm-type, --cp-a2a-size,
  // --attention and --attention-softmax-in-fp32,
  // the settings `plan` takes too (it registers the model flags one by
  // one).
  void RegisterRelease(FlagSet& flags);

  // --fused-swiglu and --tp-comm-overlap, where given, against a
  // launch's `launched` settings: INVALID_ARGUMENT where one says
  // otherwise (SwitchAgreesWithLaunch).
  absl::Status FusedSwigluAgreesWithLaunch(
      const v1::TrainingConfig& launched) const;
  absl::Status TpCommOverlapAgreesWithLaunch(
      const v1::TrainingConfig& launched) const;

  // --recompute, --recompute-method, --recompute-layers and
  // --recompute-modules into `out` (left as it is without them).
  // INVALID_ARGUMENT names the flag: an unknown kind, method or module, a
  // method or layer count without full, modules without selective, or,
  // with `refuse_conflicts`, a setting other than the one `out` has.
  absl::Status ApplyRecompute(bool refuse_conflicts, v1::Recompute& out) const;

  // --cp-comm-type and --cp-a2a-size into `par`'s fields (left as they are
  // without the flags). INVALID_ARGUMENT names the flag: an unknown type,
  // a size without a2a+p2p or a2a+p2p without one, or, with
  // `refuse_conflicts`, a type other than the one `par` already has.
  absl::Status ApplyContextParallelComm(v1::ParallelConfig& par,
                                        bool refuse_conflicts) const;

  // A job from these flags alone: TP, CP, PP and MBS default to 1; the
  // model, GPU, GPU count and sequence length are required.
  // INVALID_ARGUMENT names the flag. Semantic rules (divisibility...) are
  // the estimator's: see ValidateJob.
  // With `notes`, appends what reading the model said (a --model-config's
  // unreviewed keys).
  absl::StatusOr<v1::Job> ToJob(
      std::vector<std::string>* notes = nullptr) const;

  // Sets on `job` what the flags give (a job file's or a launch's values are
  // overridden). With `refuse_conflicts`, a flag that disagrees with a value
  // `job` already has is an error naming both; the GPU count never
  // conflicts: --gpus is how a user overrides torchrun's.
  absl::Status ApplyTo(v1::Job& job, bool refuse_conflicts) const;

  // WithFlagHint's message (WithLaunchHint's for a job read from
  // `launch`, when not empty), except that a model field read from
  // --model-config, which neither its flag nor the launch's argument
  // gives, is named by the config's key ("model.num_query_groups
  // (num_key_value_heads in config.json): ..."): the user wrote the file,
  // not the flag or the argument.
  std::string WithHint(const std::string& message,
                       const std::vector<std::string>& launch = {}) const;

  // The model --model-config or --model names, if any: what a launch line
  // leaves out is filled from it.
  absl::StatusOr<std::optional<v1::ModelConfig>> ModelToFill(
      std::vector<std::string>* notes = nullptr) const;
};

// OK unless the switch --NAME (--no-NAME) is given as `flag` and says
// otherwise than the launch, which runs with `argument` where
// `launch_says`: INVALID_ARGUMENT "--no-NAME contradicts the launch
// command, which gives ARGUMENT".
absl::Status SwitchAgreesWithLaunch(absl::string_view name,
                                    const std::optional<bool>& flag,
                                    bool launch_says,
                                    absl::string_view argument);

// "parallel.tensor_parallel: ..." -> "parallel.tensor_parallel (--tp): ...",
// so a CLI user sees the flag that sets the field the estimator names.
std::string WithFlagHint(const std::string& message);

// The same for a job read from a Megatron-LM launch: the launch's argument
// ("model.num_layers (--num-layers): ..."); fields a launch does not give
// (the GPU, ...) keep WithFlagHint's flag.
std::string WithLaunchHint(const std::string& message);

// --tp-comm-overlap on (TransformerEngine's default buffers, unless `t`
// already has a launch's configuration) or off.
void SetTpCommOverlap(bool on, v1::TrainingConfig& t);

// --attention's values: flash (FlashAttention, cuDNN's fused attention, or
// for soft-capped scores Megatron-Bridge's FlexAttention), unfused
// (TransformerEngine's) or local (Megatron's own).
absl::StatusOr<v1::AttentionKernel> ParseAttentionKernel(
    const std::string& text);

// --attention=`text` onto `t`, for estimate, check and plan alike: the
// kernel; fused is cuDNN's alone (FlashAttention off); local is
// --transformer-impl local, its layer spec too, unless `t` already runs
// the local kernel (a launch's --attention-backend local keeps TE's spec).
// With `refuse_conflicts`, a kernel `t` already runs (a launch's) may only
// be repeated.
absl::Status ApplyAttentionFlag(const std::string& text,
                                bool refuse_conflicts, v1::TrainingConfig& t);

// --precision's values: bf16 (fp32 gradients), bf16-bf16-grads, fp16, fp32.
absl::StatusOr<v1::Precision> ParsePrecision(const std::string& text);

}  // namespace memgate::cli

#endif  // MEMGATE_CLIENT_JOB_FLAGS_H_
