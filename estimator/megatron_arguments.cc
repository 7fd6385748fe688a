#include "estimator/megatron_arguments.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace memgate {
namespace {

constexpr Handling M = Handling::kModelled;
constexpr Handling P = Handling::kPartly;
constexpr Handling R = Handling::kRefused;

}  // namespace

const std::vector<MegatronArgument>& MegatronMemoryArguments() {
  static const auto* table = new std::vector<MegatronArgument>{
      // ---- Model shape: parameters and activations ----
      {"num-layers", true, M, "", "L: parameters and activations per stage"},
      {"hidden-size", true, M, "", "h"},
      {"ffn-hidden-size", true, M, "4h (8h/3 rounded to 64 with --swiglu)",
       "h_ffn"},
      {"num-attention-heads", true, M, "", "a"},
      {"group-query-attention", false, M, "", "enables --num-query-groups"},
      {"num-query-groups", true, M, "a", "k: K and V widths"},
      {"kv-channels", true, M, "h / a",
       "head_dim d: Q, K, V, output widths (parameters and activations)"},
      {"vocab-size", true, M, "from the tokenizer",
       "v, padded to --make-vocab-size-divisible-by x TP"},
      {"make-vocab-size-divisible-by", true, M, "128", "vocabulary padding"},
      {"untie-embeddings-and-output-weights", false, M, "tied",
       "a separate LM head matrix on the last stage"},
      {"swiglu", false, M, "GeLU MLP",
       "SwiGLU (3 matrices, 8h_ffn/h activations) instead of GeLU (2, 4)"},
      {"normalization", true, P, "LayerNorm",
       "LayerNorm (weight + bias) or RMSNorm (weight); others refused"},
      {"disable-bias-linear", false, M, "biases on",
       "without it every linear layer has a bias"},
      {"add-qkv-bias", false, M, "off", "a bias on the QKV projection"},
      {"position-embedding-type", true, P, "learned_absolute",
       "learned_absolute (max_position_embeddings x h on the first stage) "
       "or rope / none (no parameters); others refused"},
      {"use-rotary-position-embeddings", false, M, "",
       "legacy spelling of --position-embedding-type rope"},
      {"max-position-embeddings", true, M, "seq-length",
       "rows of the learned position embedding"},
      {"seq-length", true, M, "", "s"},
      {"tokenizer-type", true, M, "", "the vocabulary when --vocab-size is absent"},
      {"tokenizer-model", true, M, "", "the vocabulary when --vocab-size is absent"},
      // ---- Precision ----
      {"bf16", false, M, "fp32",
       "bf16 weights (2 B), fp32 gradients (4 B), fp32 master + Adam (12 B); "
       "2-byte activations"},
      {"fp16", false, M, "fp32",
       "fp16 weights and gradients (2 + 2 B), fp32 master, gradient copy "
       "and Adam (16 B); 2-byte activations"},
      {"grad-reduce-in-bf16", false, M, "off", "bf16 gradients (2 B)"},
      {"accumulate-allreduce-grads-in-fp32", false, P, "off (on with bf16)",
       "implied by --bf16; with --fp16 refused (not modelled)"},
      {"main-grads-dtype", true, P, "fp32", "fp32 only; others refused"},
      {"main-params-dtype", true, P, "fp32", "fp32 only; others refused"},
      {"exp-avg-dtype", true, P, "fp32", "fp32 only; others refused"},
      {"exp-avg-sq-dtype", true, P, "fp32", "fp32 only; others refused"},
      {"use-precision-aware-optimizer", false, R, "off",
       "reduced-precision optimizer states are not modelled"},
      {"fp8-format", true, R, "off",
       "fp8 (TransformerEngine) adds fp8 weight copies and changes saved "
       "activations: not modelled"},
      {"fp8", true, R, "off", "see --fp8-format"},
      {"fp8-param-gather", false, R, "off", "fp8 parameters: not modelled"},
      {"fp8-recipe", true, R, "delayed", "fp8: not modelled"},
      {"first-last-layers-bf16", false, R, "off", "fp8: not modelled"},
      {"fp4-format", true, R, "off", "fp4: not modelled"},
      // ---- Parallelism and sharding ----
      {"tensor-model-parallel-size", true, M, "1", "t"},
      {"pipeline-model-parallel-size", true, M, "1", "p"},
      {"context-parallel-size", true, M, "1", "c"},
      {"sequence-parallel", false, M, "off",
       "splits the hidden-sized activations over t"},
      {"use-distributed-optimizer", false, M, "off",
       "shards optimizer states over d x c"},
      {"decoder-first-pipeline-num-layers", true, M, "even split",
       "layers of the first stage"},
      {"decoder-last-pipeline-num-layers", true, M, "even split",
       "layers of the last stage"},
      {"num-layers-per-virtual-pipeline-stage", true, M, "off",
       "interleaved 1F1B: v = L / (p x N) model chunks per rank, each "
       "rank holding 2(p - r - 1) + (v - 1)p + 1 chunks in flight"},
      {"num-virtual-stages-per-pipeline-rank", true, M, "off",
       "interleaved 1F1B with v model chunks per rank"},
      {"pipeline-model-parallel-layout", true, R, "off",
       "custom stage layouts are not modelled yet"},
      {"account-for-embedding-in-pipeline-split", false, M, "off",
       "the embedding counts as a layer: (L + 1 [+ 1]) / p a stage, the "
       "first stage one transformer layer fewer"},
      {"account-for-loss-in-pipeline-split", false, M, "off",
       "the loss counts as a layer: the last stage one transformer layer "
       "fewer"},
      {"cp-comm-type", true, P, "p2p",
       "p2p only; a2a / allgather hold other buffers (refused)"},
      {"hierarchical-context-parallel-sizes", true, R, "off",
       "not modelled"},
      {"use-torch-fsdp2", false, R, "off",
       "FSDP shards parameters and gradients: not modelled"},
      {"use-custom-fsdp", false, R, "off", "FSDP: not modelled"},
      {"data-parallel-sharding-strategy", true, R, "no_shard",
       "FSDP sharding: not modelled"},
      {"num-distributed-optimizer-instances", true, R, "1",
       "partial optimizer sharding: not modelled"},
      {"optimizer-cpu-offload", false, R, "off",
       "optimizer states off the GPU: not modelled"},
      {"optimizer-offload-fraction", true, R, "1.0", "not modelled"},
      {"tp-comm-overlap", false, R, "off",
       "TransformerEngine userbuffers add communication buffers: not "
       "modelled"},
      {"distribute-saved-activations", false, R, "off",
       "not modelled"},
      // ---- Activations ----
      {"micro-batch-size", true, M, "1", "b"},
      {"global-batch-size", true, M, "", "m = gbs / (b x d) caps the "
       "micro-batches a stage holds"},
      {"hidden-dropout", true, M, "0.1",
       "above 0: 1-byte masks after attention, MLP and embedding"},
      {"attention-dropout", true, M, "0.1",
       "above 0 without FlashAttention: the a*s^2*b mask and output"},
      {"attention-backend", true, M, "auto",
       "flash / fused / auto: no s^2 term; unfused / local: the softmax "
       "output is stored"},
      {"transformer-impl", true, M, "transformer_engine",
       "local: unfused core attention"},
      {"use-flash-attn", false, M, "", "FlashAttention (no s^2 term)"},
      {"attention-softmax-in-fp32", false, P, "off",
       "with unfused attention refused (fp32 scores not modelled)"},
      {"apply-query-key-layer-scaling", false, P, "off",
       "with unfused attention refused (fp32 scores not modelled)"},
      {"recompute-activations", false, M, "off",
       "selective recomputation of core attention"},
      {"recompute-granularity", true, M, "off",
       "selective: drops the s^2 terms; full: stores only layer inputs"},
      {"recompute-method", true, M, "",
       "uniform: one input per group of N layers; block: the first N "
       "layers"},
      {"recompute-num-layers", true, M, "", "N"},
      {"recompute-modules", true, P, "core_attn",
       "core_attn only; other modules refused"},
      {"rampup-batch-size", true, P, "off",
       "estimated at the final --global-batch-size (the largest m)"},
      // ---- Optimizer ----
      {"optimizer", true, P, "adam",
       "adam (m, v: 8 B) or sgd (momentum: 4 B); others refused"},
      {"sgd-momentum", true, M, "0.9", "0: SGD keeps no state"},
      // ---- Refused: architectures memgate does not model yet ----
      {"num-experts", true, R, "dense",
       "mixture of experts is not modelled yet"},
      {"expert-model-parallel-size", true, R, "1", "MoE: not modelled yet"},
      {"expert-tensor-parallel-size", true, R, "", "MoE: not modelled yet"},
      {"moe-layer-recompute", false, R, "off", "MoE: not modelled yet"},
      {"multi-latent-attention", false, R, "off",
       "MLA is not modelled yet"},
      {"mtp-num-layers", true, R, "off",
       "multi-token prediction is not modelled yet"},
      {"qk-layernorm", false, M, "off",
       "norms on Q and K: 2d parameters a layer, their inputs stored"},
      {"squared-relu", false, R, "off", "not modelled"},
      {"encoder-num-layers", true, R, "", "encoder-decoder: not modelled"},
      {"heterogeneous-layers-config-path", true, R, "",
       "per-layer shapes: not modelled"},
      {"spec", true, R, "", "a custom layer spec: not modelled"},
      {"yaml-cfg", true, R, "",
       "the arguments are in a file memgate cannot read: pass them on the "
       "command line"},
  };
  return *table;
}

const MegatronArgument* FindMegatronArgument(absl::string_view name) {
  const std::string dashed = absl::StrReplaceAll(name, {{"_", "-"}});
  for (const MegatronArgument& a : MegatronMemoryArguments()) {
    if (dashed == a.name) return &a;
  }
  return nullptr;
}

std::string MegatronArgumentsMarkdown() {
  std::string out =
      "# Megatron-LM arguments that change per-GPU memory\n\n"
      "Generated from `estimator/megatron_arguments.cc` by `bazel run "
      "//estimator:megatron_arguments_doc`; a test keeps the two equal.\n\n"
      "memgate reads launches of Megatron-LM (core_r0.12 and later). Every "
      "argument below changes per-GPU memory: it is **modelled** (the term "
      "it changes), **partly** modelled (the values named; others are "
      "refused), or **refused** with an error naming it, so that no "
      "memory-relevant setting is read past. Arguments not listed do not "
      "change per-GPU memory and are ignored. Where a launch leaves an "
      "argument out, Megatron's default applies (fp32 without `--bf16` / "
      "`--fp16`, dropout 0.1, LayerNorm, biases, learned absolute "
      "positions, a GeLU MLP without `--swiglu`) and memgate says so in a "
      "note.\n\n"
      "| argument | Megatron's default | memgate | effect |\n"
      "| --- | --- | --- | --- |\n";
  for (const MegatronArgument& a : MegatronMemoryArguments()) {
    const char* handling = a.handling == Handling::kModelled ? "modelled"
                           : a.handling == Handling::kPartly ? "partly"
                                                             : "**refused**";
    absl::StrAppend(&out, "| `--", a.name, a.takes_value ? " X" : "", "` | ",
                    a.megatron_default, " | ", handling, " | ", a.effect,
                    " |\n");
  }
  return out;
}

}  // namespace memgate
