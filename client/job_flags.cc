#include "client/job_flags.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/user_path.h"
#include "estimator/catalog.h"
#include "estimator/job_resolver.h"
#include "estimator/megatron_names.h"
#include "estimator/pipeline_layout.h"
#include "estimator/units.h"
#include "readers/hf_config.h"

namespace memgate::cli {
namespace {

absl::Status Required(absl::string_view flag, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, ": required (", what, ")"));
}

struct FlagForField {
  const char* field;
  const char* flag;
};

constexpr FlagForField kFlagForField[] = {
    {"model.num_layers", "--layers"},
    {"model.hidden_size", "--hidden"},
    {"model.ffn_hidden_size", "--ffn-hidden"},
    {"model.num_attention_heads", "--heads"},
    {"model.num_query_groups", "--kv-heads"},
    {"model.vocab_size", "--vocab"},
    {"model.name", "--model"},
    {"accelerator.name", "--gpu"},
    {"accelerator.memory_bytes", "--gpu-memory-gib"},
    {"parallel.tensor_parallel", "--tp"},
    {"parallel.pipeline_parallel", "--pp"},
    {"parallel.context_parallel", "--cp"},
    {"parallel.data_parallel", "--dp"},
    {"parallel.expert_parallel", "--ep"},
    {"parallel.expert_tensor_parallel", "--etp"},
    {"parallel.virtual_pipeline_stages", "--vp"},
    {"parallel.layers_per_stage", "--pipeline-layout"},
    {"parallel.mtp_pipeline_rank", "--pipeline-layout"},
    {"training.recompute.method", "--recompute-method"},
    {"training.recompute.num_layers", "--recompute-layers"},
    {"training.recompute.modules", "--recompute-modules"},
    {"training.recompute", "--recompute"},
    {"parallel.distributed_optimizer_instances",
     "--distributed-optimizer-instances"},
    {"parallel.context_parallel_comm", "--cp-comm-type"},
    {"parallel.context_parallel_a2a_size", "--cp-a2a-size"},
    {"training.micro_batch_size", "--mbs"},
    {"training.seq_length", "--seq"},
    {"training.global_batch_size", "--gbs"},
    {"training.precision", "--precision"},
    {"training.megatron_core_version", "--megatron-core"},
    {"training.fused_swiglu", "--fused-swiglu"},
    {"training.attention_kernel", "--attention"},
    {"training.attention_softmax_in_fp32", "--attention-softmax-in-fp32"},
    {"training.tp_comm_overlap", "--tp-comm-overlap"},
    {"num_gpus", "--gpus"},
    {"threshold", "--threshold"},
};

}  // namespace

absl::StatusOr<v1::Precision> ParsePrecision(const std::string& text) {
  const std::string p = absl::AsciiStrToLower(text);
  if (p == "bf16") return v1::PRECISION_BF16_FP32_GRADS;
  if (p == "bf16-bf16-grads") return v1::PRECISION_BF16_BF16_GRADS;
  if (p == "fp32") return v1::PRECISION_FP32;
  if (p == "fp16") return v1::PRECISION_FP16;
  return absl::InvalidArgumentError(absl::StrCat(
      "--precision: must be bf16, bf16-bf16-grads, fp16 or fp32 (got '", text,
      "')"));
}

absl::StatusOr<v1::AttentionKernel> ParseAttentionKernel(
    const std::string& text) {
  const std::string k = absl::AsciiStrToLower(text);
  if (k == "flash" || k == "fused") return v1::ATTENTION_KERNEL_FLASH;
  if (k == "unfused") return v1::ATTENTION_KERNEL_UNFUSED;
  if (k == "local") return v1::ATTENTION_KERNEL_LOCAL;
  return absl::InvalidArgumentError(absl::StrCat(
      "--attention: must be flash, fused, unfused or local (got '",
      text.substr(0, 32), "')"));
}

absl::Status ApplyAttentionFlag(const std::string& text,
                                bool refuse_conflicts,
                                v1::TrainingConfig& t) {
  absl::StatusOr<v1::AttentionKernel> kernel = ParseAttentionKernel(text);
  if (!kernel.ok()) return kernel.status();
  // A launch's --attention-backend decides; the flag may only agree.
  if (refuse_conflicts &&
      t.attention_kernel() != v1::ATTENTION_KERNEL_UNSPECIFIED &&
      t.attention_kernel() != *kernel) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--attention=", text, " contradicts the launch command, which runs ",
        v1::AttentionKernel_Name(t.attention_kernel())));
  }
  // local's layer spec keeps the QKV output under a QK-norm
  // (memory_model.cc [QN]).
  if (*kernel == v1::ATTENTION_KERNEL_LOCAL &&
      t.attention_kernel() != v1::ATTENTION_KERNEL_LOCAL) {
    t.set_local_layer_spec(true);
  }
  t.set_attention_kernel(*kernel);
  if (absl::AsciiStrToLower(text) == "fused") {
    t.set_flash_attention_disabled(true);
  }
  return absl::OkStatus();
}

void JobFlags::Register(FlagSet& f) {
  f.String("model", "NAME",
           "catalog model (llama-2-7b/13b/70b, llama-3-8b/70b, "
           "llama-3.1-8b/70b/405b, nemotron-4-340b, mixtral-8x7b/8x22b, "
           "qwen3-30b-a3b/235b-a22b, deepseek-v3, gpt-oss-20b/120b)",
           &model);
  f.String("model-config", "FILE",
           "Hugging Face config.json of the model (or the model's "
           "directory, which holds it)",
           &model_config);
  f.Uint32("layers", "transformer layers L (overrides --model)", &layers);
  f.Uint32("hidden", "hidden size h", &hidden);
  f.Uint32("ffn-hidden", "FFN hidden size h_ffn", &ffn_hidden);
  f.Uint32("heads", "attention heads a", &heads);
  f.Uint32("kv-heads", "key-value heads k (query groups)", &kv_heads);
  f.Uint32("vocab", "vocabulary size v (as padded by the trainer)", &vocab);
  f.Bool("tie-embeddings", "embedding and LM head share weights",
         &tie_embeddings);
  f.String("gpu", "NAME",
           absl::StrCat("catalog GPU (",
                        absl::StrJoin(AcceleratorNames(), ", "), ")"),
           &gpu);
  f.Double("gpu-memory-gib", "GIB", "GPU memory in GiB (overrides --gpu)",
           &gpu_memory_gib);
  f.Uint32("gpus-per-node", "GPUs per node (overrides --gpu)",
           &gpus_per_node);
  f.Uint32("gpus", "GPUs in the job (required)", &gpus);
  f.Uint32("tp", "tensor-parallel size (default 1)", &tp);
  f.Uint32("cp", "context-parallel size (default 1)", &cp);
  f.Uint32("pp", "pipeline-parallel size (default 1)", &pp);
  f.Uint32("dp", "data-parallel size; checked against gpus/(tp*cp*pp)", &dp);
  f.Uint32("ep", "expert-parallel size, MoE models (default 1)", &ep);
  f.Uint32("etp", "expert-tensor-parallel size, MoE models (default: tp)",
           &etp);
  f.Uint32("vp",
           "model chunks a pipeline rank under interleaved 1F1B (Megatron's "
           "--num-virtual-stages-per-pipeline-rank; default 1: plain 1F1B)",
           &vp);
  f.String("pipeline-layout", "LAYOUT",
           "uneven stages, as Megatron's --pipeline-model-parallel-layout: "
           "stages separated by '|', E the embedding, t a layer, m an MTP "
           "layer, L the loss, (X)*n and x*n repeat; PP x chunks stages, "
           "stage k being chunk k / PP of rank k % PP (e.g. "
           "\"Et*7|(t*8|)*14t*7L\": Llama-3.1-405B over 16 stages, one "
           "layer fewer on the first and last)",
           &pipeline_layout);
  f.String("recompute", "KIND",
           "activation recomputation: none (default), selective (Megatron's "
           "--recompute-granularity selective: --recompute-modules, core "
           "attention by default) or full (with --recompute-method and "
           "--recompute-layers)",
           &recompute);
  f.String("recompute-method", "METHOD",
           "with --recompute=full: uniform (groups of --recompute-layers "
           "layers keep only their input) or block (the first "
           "--recompute-layers layers of each stage recomputed)",
           &recompute_method);
  f.Uint32("recompute-layers",
           "with --recompute=full: Megatron's --recompute-num-layers",
           &recompute_layers);
  f.String("recompute-modules", "LIST",
           "with --recompute=selective: Megatron's --recompute-modules, "
           "comma-separated (core_attn, mlp, moe, moe_act, shared_experts, "
           "layernorm, mla_up_proj)",
           &recompute_modules);
  f.Uint32("mbs", "micro-batch size (default 1)", &mbs);
  f.Uint32("seq", "sequence length (required)", &seq);
  f.Uint32("gbs", "global batch size; checked to be a multiple of mbs*dp",
           &gbs);
  f.Bool("sequence-parallel",
         "sequence parallelism (default on; --no-sequence-parallel)",
         &sequence_parallel);
  f.Bool("distributed-optimizer",
         "optimizer states sharded over DP*CP (default on; "
         "--no-distributed-optimizer)",
         &distributed_optimizer);
  f.String("precision", "P",
           "bf16 (fp32 gradients, the paper's; default), bf16-bf16-grads, "
           "fp16 or fp32 (Megatron without --bf16)",
           &precision);
  RegisterRelease(f);
}

void JobFlags::RegisterRelease(FlagSet& f) {
  f.String("megatron-core", "VERSION",
           "the Megatron-Core release the job runs (0.13.0, core_v0.12.0): "
           "MoE layers apply the routing probabilities as it does (default: "
           "unknown, the larger term counted)",
           &megatron_core);
  f.Bool("fused-swiglu",
         "SwiGLU models: Megatron's fused kernel (its default with --swiglu) "
         "keeps 6 bytes a unit of FFN width for backward where the paper's "
         "unfused count (the default by name) keeps 8",
         &fused_swiglu);
  f.Bool("tp-comm-overlap",
         "Megatron's --tp-comm-overlap: TransformerEngine's userbuffers, 12 "
         "buffers of (s x b / c) x h on every GPU (needs TP > 1 with "
         "sequence parallelism)",
         &tp_comm_overlap);
  f.Uint32("distributed-optimizer-instances",
           "Megatron's --num-distributed-optimizer-instances N: N copies of "
           "the distributed optimizer, each sharding the optimizer states "
           "over DP*CP/N GPUs (default 1)",
           &optimizer_instances);
  f.String("cp-comm-type", "TYPE",
           "Megatron's --cp-comm-type with context parallelism: p2p "
           "(default), all_gather (the whole sequence's K and V held while a "
           "layer runs backward), a2a (Ulysses: the attention output kept "
           "twice a layer; TP rank's heads divisible by CP) or a2a+p2p (with "
           "--cp-a2a-size)",
           &cp_comm_type);
  f.Uint32("cp-a2a-size",
           "a2a+p2p: the all-to-all level's size, the first of Megatron's "
           "--hierarchical-context-parallel-sizes (divides CP)",
           &cp_a2a_size);
  f.String("attention", "KERNEL",
           "the attention kernel that runs: flash (FlashAttention or "
           "cuDNN's fused attention: no s x s scores; for Gemma 2's "
           "soft-capped scores Megatron-Bridge's FlexAttention), fused "
           "(cuDNN's alone, FlashAttention off: refused where cuDNN does not "
           "train the heads on the GPU), unfused (TransformerEngine's: the "
           "scores kept) or local (Megatron's own, --transformer-impl "
           "local); default: what Megatron's --attention-backend auto picks "
           "for the precision, head dimensions and GPU, and unfused for "
           "soft-capped scores",
           &attention);
  f.Bool("attention-softmax-in-fp32",
         "Megatron's --attention-softmax-in-fp32: with --attention=local, "
         "its softmax's fp32 output kept where Megatron's kernel cannot run "
         "(s > 4096); no change with any other kernel",
         &softmax_in_fp32);
}

absl::Status JobFlags::ApplyContextParallelComm(v1::ParallelConfig& par,
                                                bool refuse_conflicts) const {
  if (!cp_comm_type) {
    if (cp_a2a_size) {
      return absl::InvalidArgumentError(
          "--cp-a2a-size: applies with --cp-comm-type=a2a+p2p only");
    }
    return absl::OkStatus();
  }
  const std::optional<v1::ContextParallelComm> comm =
      CpCommTypeNamed(*cp_comm_type);
  if (!comm) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--cp-comm-type: must be p2p, all_gather, a2a or a2a+p2p (got '",
        *cp_comm_type, "')"));
  }
  const bool hierarchical = *comm == v1::CONTEXT_PARALLEL_COMM_A2A_P2P;
  if (hierarchical != (cp_a2a_size.has_value() && *cp_a2a_size > 0)) {
    return absl::InvalidArgumentError(
        "--cp-a2a-size: a2a+p2p needs it (at least 1), and only a2a+p2p "
        "takes it");
  }
  const v1::ContextParallelComm current = par.context_parallel_comm();
  if (refuse_conflicts && current != v1::CONTEXT_PARALLEL_COMM_UNSPECIFIED &&
      (current != *comm ||
       (hierarchical && par.context_parallel_a2a_size() != *cp_a2a_size))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--cp-comm-type=", *cp_comm_type,
        " contradicts the launch command, which says ",
        CpCommTypeName(current)));
  }
  par.set_context_parallel_comm(*comm);
  par.set_context_parallel_a2a_size(hierarchical ? *cp_a2a_size : 0);
  return absl::OkStatus();
}

absl::StatusOr<std::optional<v1::ModelConfig>> JobFlags::ModelToFill(
    std::vector<std::string>* notes) const {
  if (model_config) {
    absl::StatusOr<v1::ModelConfig> from_file =
        ReadHuggingFaceConfig(UserPath(*model_config), notes,
                              refuse_unreviewed);
    if (!from_file.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--model-config: ", from_file.status().message()));
    }
    if (model) from_file->set_name(*model);
    return std::optional<v1::ModelConfig>(*from_file);
  }
  if (model) {
    absl::StatusOr<v1::ModelConfig> known = FindModel(*model);
    if (!known.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--model: ", known.status().message()));
    }
    return std::optional<v1::ModelConfig>(*known);
  }
  return std::optional<v1::ModelConfig>();
}

absl::StatusOr<v1::Job> JobFlags::ToJob(
    std::vector<std::string>* notes) const {
  if (!model && !model_config && !layers && !hidden) {
    return Required("model", "or --model-config, or the dimensions "
                             "--layers --hidden --ffn-hidden --heads "
                             "--kv-heads --vocab");
  }
  if (!model && !model_config) {
    // A model by its dimensions alone: each one is the user's (no catalog
    // fills a gap, and no default stands in for one), so a missing one is
    // named as missing rather than refused by validation as 0.
    const std::pair<const char*, bool> given[] = {
        {"layers", layers.has_value()},     {"hidden", hidden.has_value()},
        {"ffn-hidden", ffn_hidden.has_value()}, {"heads", heads.has_value()},
        {"kv-heads", kv_heads.has_value()}, {"vocab", vocab.has_value()}};
    std::vector<std::string> missing;
    for (const auto& [flag, has] : given) {
      if (!has) missing.push_back(absl::StrCat("--", flag));
    }
    if (!missing.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          absl::StrJoin(missing, ", "),
          ": required without --model or --model-config (a model given by "
          "its dimensions gives all of --layers --hidden --ffn-hidden "
          "--heads --kv-heads --vocab; --kv-heads equal to --heads for "
          "multi-head attention)"));
    }
  }
  if (!gpu && !gpu_memory_gib) return Required("gpu", "or --gpu-memory-gib");
  if (!gpus) return Required("gpus", "the number of GPUs in the job");
  if (!seq) return Required("seq", "the sequence length");
  v1::Job job;
  if (model_config) {
    absl::StatusOr<std::optional<v1::ModelConfig>> from_file =
        ModelToFill(notes);
    if (!from_file.ok()) return from_file.status();
    *job.mutable_model() = **from_file;
  }
  job.mutable_parallel()->set_tensor_parallel(1);
  job.mutable_parallel()->set_context_parallel(1);
  job.mutable_parallel()->set_pipeline_parallel(1);
  job.mutable_training()->set_micro_batch_size(1);
  if (absl::Status s = ApplyTo(job, false); !s.ok()) return s;
  return job;
}

namespace {

// Sets `field` to `flag`'s value; with `refuse`, a different non-zero value
// already there is a contradiction.
absl::Status Set(const char* flag, const std::optional<uint32_t>& value,
                 bool refuse, uint32_t current,
                 const std::function<void(uint32_t)>& set) {
  if (!value) return absl::OkStatus();
  if (refuse && current != 0 && current != *value) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, "=", *value,
                     " contradicts the launch command, which says ", current));
  }
  set(*value);
  return absl::OkStatus();
}

// --precision's value for `p`, and the launch's arguments that give it.
std::string PrecisionFlagValue(v1::Precision p) {
  switch (p) {
    case v1::PRECISION_BF16_FP32_GRADS:
      return "bf16 (--bf16)";
    case v1::PRECISION_BF16_BF16_GRADS:
      return "bf16-bf16-grads (--bf16 with bf16 gradients)";
    case v1::PRECISION_FP16:
      return "fp16 (--fp16)";
    case v1::PRECISION_FP32:
      return "fp32 (no --bf16 or --fp16)";
    default:
      return v1::Precision_Name(p);
  }
}

}  // namespace

void SetTpCommOverlap(bool on, v1::TrainingConfig& t) {
  if (!on) {
    t.set_tp_comm_overlap(v1::TrainingConfig::TP_COMM_OVERLAP_OFF);
  } else if (t.tp_comm_overlap() == v1::TrainingConfig::TP_COMM_OVERLAP_OFF) {
    t.set_tp_comm_overlap(v1::TrainingConfig::TP_COMM_OVERLAP_DEFAULT);
  }
}

absl::Status JobFlags::ApplyRecompute(bool refuse_conflicts,
                                      v1::Recompute& out) const {
  if (!recompute && !recompute_method && !recompute_layers &&
      !recompute_modules) {
    return absl::OkStatus();
  }
  if (!recompute) {
    return absl::InvalidArgumentError(
        "--recompute-method, --recompute-layers and --recompute-modules "
        "need --recompute=full or selective");
  }
  v1::Recompute parsed;
  const std::string kind = absl::AsciiStrToLower(*recompute);
  // Megatron's --recompute-granularity names, and none.
  const std::optional<v1::Recompute::Granularity> granularity =
      kind == "none" ? v1::Recompute::GRANULARITY_NONE
                     : RecomputeGranularityNamed(kind);
  if (!granularity) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--recompute: must be none, selective or full (got '",
        recompute->substr(0, 32), "')"));
  }
  parsed.set_granularity(*granularity);
  if ((recompute_method || recompute_layers) && kind != "full") {
    return absl::InvalidArgumentError(
        "--recompute-method and --recompute-layers: with --recompute=full "
        "only");
  }
  if (recompute_modules && kind != "selective") {
    return absl::InvalidArgumentError(
        "--recompute-modules: with --recompute=selective only");
  }
  if (recompute_method) {
    const std::optional<v1::Recompute::Method> method =
        RecomputeMethodNamed(absl::AsciiStrToLower(*recompute_method));
    if (!method) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--recompute-method: must be uniform or block (got '",
          recompute_method->substr(0, 32), "')"));
    }
    parsed.set_method(*method);
  }
  if (recompute_layers) parsed.set_num_layers(*recompute_layers);
  if (recompute_modules) {
    // At most one module of each kind: the list is bounded by the names.
    for (absl::string_view name : absl::StrSplit(*recompute_modules, ',')) {
      const std::optional<v1::Recompute::Module> module =
          RecomputeModuleNamed(absl::StripAsciiWhitespace(name));
      if (!module) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--recompute-modules: '", name.substr(0, 32),
            "' is not one of core_attn, mlp, moe, moe_act, shared_experts, "
            "layernorm, mla_up_proj"));
      }
      if (std::find(parsed.modules().begin(), parsed.modules().end(),
                    *module) == parsed.modules().end()) {
        parsed.add_modules(*module);
      }
    }
  }
  // A launch that says its recomputation is not overridden by another.
  const bool same =
      out.granularity() == parsed.granularity() &&
      out.method() == parsed.method() &&
      out.num_layers() == parsed.num_layers() &&
      std::is_permutation(out.modules().begin(), out.modules().end(),
                          parsed.modules().begin(), parsed.modules().end());
  if (refuse_conflicts &&
      out.granularity() != v1::Recompute::GRANULARITY_UNSPECIFIED && !same) {
    return absl::InvalidArgumentError(
        "--recompute: contradicts the launch command's "
        "--recompute-granularity, --recompute-method, "
        "--recompute-num-layers or --recompute-modules");
  }
  parsed.set_distribute_saved_activations(out.distribute_saved_activations());
  out = parsed;
  return absl::OkStatus();
}

absl::Status SwitchAgreesWithLaunch(absl::string_view name,
                                    const std::optional<bool>& flag,
                                    bool launch_says,
                                    absl::string_view argument) {
  if (!flag || *flag == launch_says) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--", *flag ? "" : "no-", name, " contradicts the launch command, ",
      launch_says ? "which gives " : "which does not give ", argument));
}

absl::Status JobFlags::FusedSwigluAgreesWithLaunch(
    const v1::TrainingConfig& launched) const {
  return SwitchAgreesWithLaunch(
      "fused-swiglu", fused_swiglu, launched.fused_swiglu(),
      "--swiglu with Megatron's fused kernel (without "
      "--no-bias-swiglu-fusion)");
}

absl::Status JobFlags::TpCommOverlapAgreesWithLaunch(
    const v1::TrainingConfig& launched) const {
  return SwitchAgreesWithLaunch(
      "tp-comm-overlap", tp_comm_overlap,
      launched.tp_comm_overlap() != v1::TrainingConfig::TP_COMM_OVERLAP_OFF,
      "--tp-comm-overlap");
}

absl::Status JobFlags::ApplyTo(v1::Job& job, bool refuse_conflicts) const {
  v1::ModelConfig& m = *job.mutable_model();
  if (model) m.set_name(*model);
  v1::ParallelConfig& p = *job.mutable_parallel();
  v1::TrainingConfig& t = *job.mutable_training();
  const bool r = refuse_conflicts;
  // clang-format off
  const struct {
    const char* flag;
    const std::optional<uint32_t>& value;
    uint32_t current;
    std::function<void(uint32_t)> set;
  } numbers[] = {
      {"layers", layers, m.num_layers(), [&](uint32_t v) { m.set_num_layers(v); }},
      {"hidden", hidden, m.hidden_size(), [&](uint32_t v) { m.set_hidden_size(v); }},
      {"ffn-hidden", ffn_hidden, m.ffn_hidden_size(), [&](uint32_t v) { m.set_ffn_hidden_size(v); }},
      {"heads", heads, m.num_attention_heads(), [&](uint32_t v) { m.set_num_attention_heads(v); }},
      {"kv-heads", kv_heads, m.num_query_groups(), [&](uint32_t v) { m.set_num_query_groups(v); }},
      {"vocab", vocab, m.vocab_size(), [&](uint32_t v) { m.set_vocab_size(v); }},
      {"tp", tp, p.tensor_parallel(), [&](uint32_t v) { p.set_tensor_parallel(v); }},
      {"cp", cp, p.context_parallel(), [&](uint32_t v) { p.set_context_parallel(v); }},
      {"pp", pp, p.pipeline_parallel(), [&](uint32_t v) { p.set_pipeline_parallel(v); }},
      {"dp", dp, p.data_parallel(), [&](uint32_t v) { p.set_data_parallel(v); }},
      {"ep", ep, p.expert_parallel(), [&](uint32_t v) { p.set_expert_parallel(v); }},
      {"etp", etp, p.expert_tensor_parallel(), [&](uint32_t v) { p.set_expert_tensor_parallel(v); }},
      {"vp", vp, p.virtual_pipeline_stages(), [&](uint32_t v) { p.set_virtual_pipeline_stages(v); }},
      {"distributed-optimizer-instances", optimizer_instances, p.distributed_optimizer_instances(), [&](uint32_t v) { p.set_distributed_optimizer_instances(v); }},
      {"mbs", mbs, t.micro_batch_size(), [&](uint32_t v) { t.set_micro_batch_size(v); }},
      {"seq", seq, t.seq_length(), [&](uint32_t v) { t.set_seq_length(v); }},
      {"gbs", gbs, t.global_batch_size(), [&](uint32_t v) { t.set_global_batch_size(v); }},
      {"gpus", gpus, 0, [&](uint32_t v) { job.set_num_gpus(v); }},
  };
  // clang-format on
  for (const auto& n : numbers) {
    if (absl::Status s = Set(n.flag, n.value, r, n.current, n.set); !s.ok()) {
      return s;
    }
  }
  if (r && tie_embeddings && *tie_embeddings != m.tie_word_embeddings()) {
    // The launch ties them unless it gives
    // --untie-embeddings-and-output-weights (or, giving no dimensions,
    // as the model it fills from does).
    return absl::InvalidArgumentError(absl::StrCat(
        "--", *tie_embeddings ? "" : "no-",
        "tie-embeddings contradicts the launch command, which runs its "
        "embedding and output layer ",
        m.tie_word_embeddings() ? "tied" : "untied"));
  }
  if (tie_embeddings) m.set_tie_word_embeddings(*tie_embeddings);
  if (pipeline_layout) {
    if (absl::Status s = ApplyPipelineLayout(*pipeline_layout, r, job);
        !s.ok()) {
      return s;
    }
  }

  v1::Accelerator& a = *job.mutable_accelerator();
  if (gpu) a.set_name(*gpu);
  if (gpu_memory_gib) {
    // 2^64 bytes is 1.7e10 GiB: anything near that is not a GPU.
    if (!(*gpu_memory_gib > 0) || *gpu_memory_gib > 1e9) {
      return absl::InvalidArgumentError(
          absl::StrCat("--gpu-memory-gib: must be above 0 and at most 1e9 "
                       "(got ",
                       *gpu_memory_gib, ")"));
    }
    a.set_memory_bytes(
        static_cast<uint64_t>(std::llround(*gpu_memory_gib * kBytesPerGiB)));
  }
  if (gpus_per_node) a.set_gpus_per_node(*gpus_per_node);

  // A switch that says otherwise than the launch, which sets each of them
  // (as given or by Megatron's default): the estimate would be of a job
  // the launch does not run.
  if (r) {
    for (absl::Status s :
         {SwitchAgreesWithLaunch("sequence-parallel", sequence_parallel,
                                 p.sequence_parallel(), "--sequence-parallel"),
          SwitchAgreesWithLaunch("distributed-optimizer",
                                 distributed_optimizer,
                                 p.distributed_optimizer(),
                                 "--use-distributed-optimizer"),
          FusedSwigluAgreesWithLaunch(t), TpCommOverlapAgreesWithLaunch(t)}) {
      if (!s.ok()) return s;
    }
  }
  if (sequence_parallel) p.set_sequence_parallel(*sequence_parallel);
  if (distributed_optimizer) {
    p.set_distributed_optimizer(*distributed_optimizer);
  }
  if (precision) {
    absl::StatusOr<v1::Precision> parsed = ParsePrecision(*precision);
    if (!parsed.ok()) return parsed.status();
    if (r && t.precision() != v1::PRECISION_UNSPECIFIED &&
        t.precision() != *parsed) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--precision=", *precision,
          " contradicts the launch command, which trains in ",
          PrecisionFlagValue(t.precision())));
    }
    t.set_precision(*parsed);
  }
  if (absl::Status s = ApplyRecompute(r, *t.mutable_recompute()); !s.ok()) {
    return s;
  }
  if (megatron_core) t.set_megatron_core_version(*megatron_core);
  if (fused_swiglu) t.set_fused_swiglu(*fused_swiglu);
  if (tp_comm_overlap) SetTpCommOverlap(*tp_comm_overlap, t);
  if (attention) {
    if (absl::Status s = ApplyAttentionFlag(*attention, r, t); !s.ok()) {
      return s;
    }
  }
  if (softmax_in_fp32) {
    if (r && t.attention_softmax_in_fp32() != *softmax_in_fp32) {
      return absl::InvalidArgumentError(
          "--attention-softmax-in-fp32 contradicts the launch command, which "
          "says it itself (--attention-softmax-in-fp32 or "
          "--apply-query-key-layer-scaling)");
    }
    t.set_attention_softmax_in_fp32(*softmax_in_fp32);
  }
  return ApplyContextParallelComm(p, r);
}

absl::Status JobFlags::ApplyPipelineLayout(const std::string& text,
                                           bool from_launch,
                                           v1::Job& job) const {
  auto invalid = [](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("--pipeline-layout: ", why));
  };
  // A launch says its split as Megatron does; one place for it.
  if (from_launch) {
    return invalid(
        "a launch gives its stages itself: put Megatron's "
        "--pipeline-model-parallel-layout in the launch");
  }
  // The layers and MTP layers the layout must hold: the job's model as it
  // will be resolved (a name alone says them); as given where the name is
  // not the catalog's (the estimate names what is missing).
  absl::StatusOr<v1::ModelConfig> resolved = ResolveModel(job.model());
  const v1::ModelConfig& m = resolved.ok() ? *resolved : job.model();
  const uint32_t layers = m.num_layers(), mtp = m.mtp_num_layers();
  if (layers == 0) {
    return invalid("needs the model's layer count (--model or --layers)");
  }
  v1::ParallelConfig& p = *job.mutable_parallel();
  absl::StatusOr<PipelineLayout> layout =
      ParsePipelineLayout(text, p.pipeline_parallel(), layers, mtp);
  if (!layout.ok()) {
    // The parser names Megatron's argument; this flag says it instead.
    return invalid(absl::StripPrefix(layout.status().message(),
                                     "--pipeline-model-parallel-layout: "));
  }
  if (layout->virtual_stages > 1 && p.pipeline_parallel() < 2) {
    // Megatron interleaves only a pipeline (validation says so by --vp).
    return invalid(absl::StrCat(
        "its ", layout->layers.size(), " stages need --pp: with PP 1 they "
        "would be chunks of one rank, which Megatron does not interleave"));
  }
  const uint32_t chunks = std::max(1u, p.virtual_pipeline_stages());
  if (vp && chunks != layout->virtual_stages) {
    return invalid(absl::StrCat(
        "its ", layout->layers.size(), " stages over PP ",
        p.pipeline_parallel(), " are ", layout->virtual_stages,
        " chunks a rank, --vp says ", chunks));
  }
  memgate::ApplyPipelineLayout(*layout, p);
  return absl::OkStatus();
}

std::string WithFlagHint(const std::string& message) {
  std::string out = message;
  for (const FlagForField& f : kFlagForField) {
    const std::string prefix = absl::StrCat(f.field, ":");
    if (absl::StartsWith(message, prefix)) {
      out = absl::StrCat(f.field, " (", f.flag, "):",
                         message.substr(prefix.size()));
      break;
    }
  }
  // Uneven stages: --pipeline-layout, or a launch that says them as
  // Megatron does (the planner prints such launches).
  if (absl::StrContains(message, "give parallel.layers_per_stage")) {
    absl::StrAppend(&out,
                    "; give them with --pipeline-layout (Megatron's "
                    "--pipeline-model-parallel-layout syntax), in a "
                    "Megatron-LM launch after `--` "
                    "(--decoder-first-pipeline-num-layers, "
                    "--decoder-last-pipeline-num-layers, "
                    "--pipeline-model-parallel-layout) or a --job file; "
                    "`memgate plan --format=megatron-args` prints layouts "
                    "that fit as such arguments");
  }
  return out;
}

namespace {

// The Hugging Face config key each model field is read from
// (readers/hf_config.cc), and the flag that overrides it.
struct ConfigKeyForField {
  const char* field;
  const char* key;
  std::optional<uint32_t> JobFlags::*flag;
};

constexpr ConfigKeyForField kConfigKeyForField[] = {
    {"model.num_layers", "num_hidden_layers", &JobFlags::layers},
    {"model.hidden_size", "hidden_size", &JobFlags::hidden},
    {"model.ffn_hidden_size", "intermediate_size", &JobFlags::ffn_hidden},
    {"model.num_attention_heads", "num_attention_heads", &JobFlags::heads},
    {"model.num_query_groups", "num_key_value_heads", &JobFlags::kv_heads},
    {"model.vocab_size", "vocab_size", &JobFlags::vocab},
};

// `text` with each whole mention of a field in `keys` followed by its
// config key: "model.num_query_groups (num_key_value_heads)".
std::string WithConfigKeys(
    absl::string_view text,
    const std::vector<const ConfigKeyForField*>& keys) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const ConfigKeyForField* found = nullptr;
    for (const ConfigKeyForField* k : keys) {
      const absl::string_view field = k->field;
      const size_t end = i + field.size();
      const bool whole =
          end >= text.size() ||
          !(absl::ascii_isalnum(text[end]) || text[end] == '_');
      if (text.substr(i, field.size()) == field && whole) found = k;
    }
    if (found == nullptr) {
      out.push_back(text[i++]);
      continue;
    }
    absl::StrAppend(&out, found->field, " (", found->key, ")");
    i += strlen(found->field);
  }
  return out;
}

}  // namespace

namespace {

// The Megatron-LM argument that sets each field a launch gives
// (readers/megatron_args.cc reads them).
constexpr FlagForField kLaunchArgumentForField[] = {
    {"model.num_layers", "--num-layers"},
    {"model.hidden_size", "--hidden-size"},
    {"model.ffn_hidden_size", "--ffn-hidden-size"},
    {"model.num_attention_heads", "--num-attention-heads"},
    {"model.num_query_groups", "--num-query-groups"},
    {"model.vocab_size", "--vocab-size"},
    {"parallel.tensor_parallel", "--tensor-model-parallel-size"},
    {"parallel.pipeline_parallel", "--pipeline-model-parallel-size"},
    {"parallel.context_parallel", "--context-parallel-size"},
    {"parallel.expert_parallel", "--expert-model-parallel-size"},
    {"parallel.expert_tensor_parallel", "--expert-tensor-parallel-size"},
    {"parallel.sequence_parallel", "--sequence-parallel"},
    {"parallel.virtual_pipeline_stages",
     "--num-layers-per-virtual-pipeline-stage or "
     "--num-virtual-stages-per-pipeline-rank"},
    {"parallel.distributed_optimizer_instances",
     "--num-distributed-optimizer-instances"},
    {"training.recompute.distribute_saved_activations",
     "--distribute-saved-activations"},
    {"training.recompute.method", "--recompute-method"},
    {"training.recompute.num_layers", "--recompute-num-layers"},
    {"training.recompute.modules", "--recompute-modules"},
    {"training.recompute", "--recompute-granularity"},
    {"training.micro_batch_size", "--micro-batch-size"},
    {"training.seq_length", "--seq-length"},
    {"training.global_batch_size", "--global-batch-size"},
    {"training.tp_comm_overlap", "--tp-comm-overlap"},
    {"training.precision", "--bf16 / --fp16, fp32 without either"},
    {"training.attention_kernel", "--attention-backend"},
    {"training.fp8.bf16_first_layers", "--num-layers-at-start-in-bf16"},
    {"training.fp8.bf16_last_layers", "--num-layers-at-end-in-bf16"},
    {"num_gpus", "torchrun --nnodes x --nproc-per-node, or --gpus"},
};

// Whether the launch's words give the argument that sets `field`
// ("--num-layers 32" or "--num-layers=32"; Megatron's parser takes no
// abbreviations).
bool LaunchGivesArgument(const std::vector<std::string>& launch,
                         absl::string_view field) {
  for (const FlagForField& f : kLaunchArgumentForField) {
    if (f.field != field) continue;
    const std::string with_value = absl::StrCat(f.flag, "=");
    for (const std::string& word : launch) {
      if (word == f.flag || absl::StartsWith(word, with_value)) return true;
    }
  }
  return false;
}

}  // namespace

std::string WithLaunchHint(const std::string& message) {
  for (const FlagForField& f : kLaunchArgumentForField) {
    const std::string prefix = absl::StrCat(f.field, ":");
    if (!absl::StartsWith(message, prefix)) continue;
    std::string out = absl::StrCat(f.field, " (", f.flag, "):",
                                   message.substr(prefix.size()));
    if (absl::StrContains(message, "give parallel.layers_per_stage")) {
      absl::StrAppend(&out,
                      "; for uneven stages give "
                      "--decoder-first-pipeline-num-layers and "
                      "--decoder-last-pipeline-num-layers, or "
                      "--pipeline-model-parallel-layout");
    }
    return out;
  }
  return WithFlagHint(message);
}

std::string JobFlags::WithHint(const std::string& message,
                               const std::vector<std::string>& launch) const {
  auto plain = [&](const std::string& text) {
    return launch.empty() ? WithFlagHint(text) : WithLaunchHint(text);
  };
  const size_t colon = message.find(':');
  if (!model_config || colon == std::string::npos) return plain(message);
  // The fields read from the file: those no flag overrides and the launch,
  // if any, does not give.
  std::vector<const ConfigKeyForField*> from_file;
  for (const ConfigKeyForField& f : kConfigKeyForField) {
    if (!(this->*f.flag).has_value() && !LaunchGivesArgument(launch, f.field)) {
      from_file.push_back(&f);
    }
  }
  const std::string field = message.substr(0, colon);
  const std::string rule =
      WithConfigKeys(absl::string_view(message).substr(colon), from_file);
  for (const ConfigKeyForField* f : from_file) {
    if (field == f->field) {
      return absl::StrCat(field, " (", f->key, " in ", *model_config, ")",
                          rule);
    }
  }
  return plain(field + rule);
}

}  // namespace memgate::cli
