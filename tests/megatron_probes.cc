#include "tests/megatron_probes.h"

#include <map>
#include <string>
#include <vector>

namespace memgate::testing {

// A Llama launch, every architecture switch explicit: TP 4, PP 2 with
// sequence parallelism and the distributed optimizer, bf16, no dropout.
std::vector<std::string> LlamaLaunch() {
  return {"torchrun",
          "--nproc-per-node",
          "8",
          "pretrain_gpt.py",
          "--num-layers",
          "32",
          "--hidden-size",
          "4096",
          "--ffn-hidden-size",
          "14336",
          "--num-attention-heads",
          "32",
          "--group-query-attention",
          "--num-query-groups",
          "8",
          "--vocab-size",
          "128256",
          "--untie-embeddings-and-output-weights",
          "--swiglu",
          "--normalization",
          "RMSNorm",
          "--disable-bias-linear",
          "--position-embedding-type",
          "rope",
          "--hidden-dropout",
          "0",
          "--attention-dropout",
          "0",
          "--tensor-model-parallel-size",
          "4",
          "--pipeline-model-parallel-size",
          "2",
          "--sequence-parallel",
          "--use-distributed-optimizer",
          "--micro-batch-size",
          "1",
          "--global-batch-size",
          "1024",
          "--seq-length",
          "8192",
          "--bf16"};
}

std::vector<std::string> With(std::vector<std::string> argv,
                              const std::vector<std::string>& more) {
  argv.insert(argv.end(), more.begin(), more.end());
  return argv;
}

// LlamaLaunch with 8 routed experts (top 2, grouped GEMMs) over EP 2.
std::vector<std::string> MoeLaunch() {
  return With(
      LlamaLaunch(),
      {"--num-experts", "8", "--moe-router-topk", "2",
       "--expert-model-parallel-size", "2", "--expert-tensor-parallel-size",
       "1", "--moe-grouped-gemm", "--moe-token-dispatcher-type", "alltoall"});
}

// MoeLaunch with multi-latent attention in place of grouped queries.
std::vector<std::string> MlaLaunch() {
  std::vector<std::string> argv;
  const std::vector<std::string> moe = MoeLaunch();
  for (size_t i = 0; i < moe.size(); ++i) {
    if (moe[i] == "--group-query-attention") continue;
    if (moe[i] == "--num-query-groups") {
      ++i;
      continue;
    }
    argv.push_back(moe[i]);
  }
  return With(argv, {"--multi-latent-attention", "--q-lora-rank", "512",
                     "--kv-lora-rank", "256", "--qk-head-dim", "64",
                     "--qk-pos-emb-head-dim", "32", "--v-head-dim", "64"});
}

namespace {

// Removes `flag` (and its value when `has_value`) from `argv`.
std::vector<std::string> Without(std::vector<std::string> argv,
                                 const std::string& flag,
                                 bool has_value = false) {
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] != flag) continue;
    argv.erase(argv.begin() + i, argv.begin() + i + (has_value ? 2 : 1));
    break;
  }
  return argv;
}

// `argv` with `flag`'s value replaced by `value`.
std::vector<std::string> Replaced(std::vector<std::string> argv,
                                  const std::string& flag,
                                  const std::string& value) {
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == flag) argv[i + 1] = value;
  }
  return argv;
}

Probe Adding(const std::vector<std::string>& base,
             const std::vector<std::string>& added) {
  return Probe{base, With(base, added)};
}

}  // namespace

// Arguments that change nothing in the launch they are probed in, and why
// (the table's words).
const std::map<std::string, std::string>& UnchangedArguments() {
  static const auto* unchanged = new std::map<std::string, std::string>{
      {"no-use-layer-wise-param-layout",
       "adam's distributed optimizer has no layer-wise layout"},
      {"moe-single-grouped-weight",
       "adam keeps the same elements in one grouped parameter"},
      {"no-bias-dropout-fusion",
       "the bias-dropout-add keeps its mask fused or not"},
      {"no-clone-scatter-output-in-embedding",
       "RoPE: the embedding reduce-scatters a shard of its own"},
      {"disable-clone-scatter-output-in-embedding",
       "RoPE: the embedding reduce-scatters a shard of its own"},
      {"accumulate-allreduce-grads-in-fp32", "implied by --bf16"},
      {"keep-fp8-transpose-cache",
       "the transpose fp8 copies are counted under fp8 either way"},
      {"keep-fp8-transpose-cache-when-using-custom-fsdp",
       "the transpose fp8 copies are counted under fp8 either way"},
      {"output-logit-dtype",
       "the cross-entropy's fp32 softmax is counted either way"},
      {"fp16-lm-cross-entropy",
       "the cross-entropy's softmax is counted in fp32 either way"},
      {"tensor-parallel-num-weight-shards", "as many shards as TP: plain TP"},
      {"megatron-fsdp-version", "version 1, the one modelled"},
      {"megatron-fsdp-main-params-dtype", "fp32, Megatron-FSDP's default"},
      {"outer-dp-sharding-strategy", "no_shard, the default"},
      {"cuda-graph-impl", "none, the default"},
      {"fp4-recipe", "nvfp4, the default"},
      {"moe-router-enable-expert-bias",
       "two buffers of E fp32 a layer; its score-function rule is checked"},
      {"moe-permute-fusion",
       "one bound covers TransformerEngine's row map and the unfused "
       "argsort"},
      {"rampup-batch-size",
       "estimated at the final global batch, the most micro-batches"},
      {"flash-attention-version", "FlashAttention 2, the default"},
      {"use-flash-attn", "the legacy switch Megatron-Core ignores"},
      {"no-masked-softmax-fusion", "TransformerEngine's attention ignores it"},
      {"delay-wgrad-compute", "the weight gradients' inputs are kept anyway"},
      {"moe-router-dtype", "fp32, as the router's scores are counted"},
      {"no-position-embedding",
       "beside RoPE, the only type Megatron allows it with, there is no "
       "position embedding to drop"},
      {"qk-clip", "the unfused attention named keeps its scores either way"},
      {"log-max-attention-logit",
       "the unfused attention named keeps its scores either way"},
      {"moe-enable-deepep",
       "the older spelling of deepep, the flex dispatcher's default"},
  };
  return *unchanged;
}

// How each argument is probed where the default (added to LlamaLaunch,
// MoeLaunch for MoE and expert arguments, a switch alone or a value
// argument with "2") does not apply.
const std::map<std::string, Probe>& ArgumentProbes() {
  static const auto* probes = [] {
    const std::vector<std::string> llama = LlamaLaunch();
    const std::vector<std::string> moe = MoeLaunch();
    const std::vector<std::string> mla = MlaLaunch();
    const std::vector<std::string> gelu = Without(llama, "--swiglu");
    const std::vector<std::string> learned =
        With(Replaced(llama, "--position-embedding-type", "learned_absolute"),
             {"--max-position-embeddings", "8192"});
    const std::vector<std::string> fp8 = With(llama, {"--fp8-format", "e4m3"});
    const std::vector<std::string> fp8_tensorwise =
        With(fp8, {"--fp8-recipe", "tensorwise"});
    const std::vector<std::string> pao =
        With(llama, {"--use-precision-aware-optimizer"});
    const std::vector<std::string> fsdp =
        With(Replaced(llama, "--pipeline-model-parallel-size", "1"),
             {"--use-megatron-fsdp", "--data-parallel-sharding-strategy",
              "optim_grads"});
    const std::vector<std::string> cp =
        With(llama, {"--context-parallel-size", "2"});
    const std::vector<std::string> full =
        With(llama, {"--recompute-granularity", "full", "--recompute-method",
                     "uniform", "--recompute-num-layers", "1"});
    const std::vector<std::string> bf16_grads =
        With(llama, {"--grad-reduce-in-bf16"});
    const std::vector<std::string> flex =
        Replaced(moe, "--moe-token-dispatcher-type", "flex");
    const std::vector<std::string> odd_layers =
        Replaced(llama, "--num-layers", "31");
    // Muon, which Megatron runs so without the distributed optimizer.
    const std::vector<std::string> muon =
        With(Without(llama, "--use-distributed-optimizer"),
             {"--optimizer", "muon"});
    auto* p = new std::map<std::string, Probe>{
        {"group-query-attention",
         Adding(Without(Without(llama, "--group-query-attention"),
                        "--num-query-groups", true),
                {"--group-query-attention", "--num-query-groups", "8"})},
        {"num-query-groups",
         Probe{llama, Replaced(llama, "--num-query-groups", "4")}},
        {"num-layers", Probe{llama, Replaced(llama, "--num-layers", "16")}},
        {"hidden-size", Probe{llama, Replaced(llama, "--hidden-size", "2048")}},
        {"ffn-hidden-size",
         Probe{llama, Replaced(llama, "--ffn-hidden-size", "8192")}},
        {"num-attention-heads",
         Probe{llama, Replaced(llama, "--num-attention-heads", "16")}},
        {"vocab-size", Probe{llama, Replaced(llama, "--vocab-size", "64000")}},
        {"kv-channels", Adding(llama, {"--kv-channels", "64"})},
        {"make-vocab-size-divisible-by",
         Adding(llama, {"--make-vocab-size-divisible-by", "1000"})},
        {"padded-vocab-size", Adding(llama, {"--padded-vocab-size", "130048"})},
        {"untie-embeddings-and-output-weights",
         Adding(Without(llama, "--untie-embeddings-and-output-weights"),
                {"--untie-embeddings-and-output-weights"})},
        {"swiglu", Adding(gelu, {"--swiglu"})},
        {"quick-geglu", Adding(gelu, {"--quick-geglu"})},
        {"squared-relu", Adding(gelu, {"--squared-relu"})},
        {"use-fused-weighted-squared-relu",
         Adding(With(Without(moe, "--swiglu"), {"--squared-relu"}),
                {"--use-fused-weighted-squared-relu"})},
        // Quick-GeGLU experts with biases run glu() unfused without it.
        {"no-bias-gelu-fusion",
         Adding(With(Without(Without(moe, "--swiglu"), "--disable-bias-linear"),
                     {"--quick-geglu", "--no-bias-dropout-fusion"}),
                {"--no-bias-gelu-fusion"})},
        {"normalization",
         Probe{llama, Replaced(llama, "--normalization", "LayerNorm")}},
        {"disable-bias-linear", Adding(Without(llama, "--disable-bias-linear"),
                                       {"--disable-bias-linear"})},
        {"add-qkv-bias", Adding(llama, {"--add-qkv-bias"})},
        {"position-embedding-type",
         Probe{llama, With(Replaced(llama, "--position-embedding-type",
                                    "learned_absolute"),
                           {"--max-position-embeddings", "8192"})}},
        {"use-rotary-position-embeddings",
         Adding(Without(learned, "--position-embedding-type", true),
                {"--use-rotary-position-embeddings"})},
        {"no-position-embedding", Adding(llama, {"--no-position-embedding"})},
        {"max-position-embeddings",
         Probe{learned,
               Replaced(learned, "--max-position-embeddings", "16384")}},
        {"seq-length", Probe{llama, Replaced(llama, "--seq-length", "4096")}},
        {"encoder-seq-length",
         Probe{llama, With(Without(llama, "--seq-length", true),
                           {"--encoder-seq-length", "4096"})}},
        {"tokenizer-type",
         Probe{Without(llama, "--vocab-size", true),
               With(Without(llama, "--vocab-size", true),
                    {"--tokenizer-type", "Llama2Tokenizer"})}},
        {"tokenizer-model",
         Adding(llama, {"--tokenizer-type", "HuggingFaceTokenizer",
                        "--tokenizer-model", "meta-llama/Llama-2-7b-hf"})},
        {"legacy-tokenizer", Adding(llama, {"--tokenizer-type", "NullTokenizer",
                                            "--legacy-tokenizer"})},
        {"bf16", Adding(Without(llama, "--bf16"), {"--bf16"})},
        {"fp16", Adding(Without(llama, "--bf16"), {"--fp16"})},
        {"grad-reduce-in-bf16", Adding(llama, {"--grad-reduce-in-bf16"})},
        {"use-precision-aware-optimizer",
         Adding(llama, {"--use-precision-aware-optimizer"})},
        {"main-grads-dtype", Adding(pao, {"--main-grads-dtype", "bf16"})},
        {"main-params-dtype", Adding(pao, {"--main-params-dtype", "fp16"})},
        {"exp-avg-dtype", Adding(pao, {"--exp-avg-dtype", "bf16"})},
        {"exp-avg-sq-dtype", Adding(pao, {"--exp-avg-sq-dtype", "bf16"})},
        {"fp4-format", Adding(llama, {"--fp4-format", "e2m1"})},
        {"fp4", Adding(llama, {"--fp4", "e2m1"})},
        {"fp4-recipe", Adding(With(llama, {"--fp4-format", "e2m1"}),
                              {"--fp4-recipe", "nvfp4"})},
        {"fp8-format", Adding(llama, {"--fp8-format", "e4m3"})},
        {"fp8", Adding(llama, {"--fp8", "e4m3"})},
        {"fp8-recipe", Adding(fp8, {"--fp8-recipe", "mxfp8"})},
        {"fp8-amax-history-len",
         Adding(fp8, {"--fp8-amax-history-len", "1024"})},
        {"fp8-param-gather", Adding(fp8, {"--fp8-param-gather"})},
        {"fp8-output-proj",
         Adding(With(fp8, {"--fp8-recipe", "mxfp8"}), {"--fp8-output-proj"})},
        {"first-last-layers-bf16",
         Adding(fp8_tensorwise, {"--first-last-layers-bf16"})},
        {"num-layers-at-start-in-bf16",
         Adding(With(fp8_tensorwise, {"--first-last-layers-bf16"}),
                {"--num-layers-at-start-in-bf16", "2"})},
        {"num-layers-at-end-in-bf16",
         Adding(With(fp8_tensorwise, {"--first-last-layers-bf16"}),
                {"--num-layers-at-end-in-bf16", "2"})},
        {"keep-fp8-transpose-cache",
         Adding(fp8, {"--keep-fp8-transpose-cache"})},
        {"keep-fp8-transpose-cache-when-using-custom-fsdp",
         Adding(fp8, {"--keep-fp8-transpose-cache-when-using-custom-fsdp"})},
        {"output-logit-dtype", Adding(llama, {"--output-logit-dtype", "fp32"})},
        {"cross-entropy-fusion-impl",
         Adding(With(llama, {"--cross-entropy-loss-fusion"}),
                {"--cross-entropy-fusion-impl", "te"})},
        {"tensor-model-parallel-size",
         Probe{llama, Replaced(llama, "--tensor-model-parallel-size", "2")}},
        {"pipeline-model-parallel-size",
         Probe{llama, Replaced(llama, "--pipeline-model-parallel-size", "4")}},
        {"tensor-parallel-num-weight-shards",
         Adding(llama, {"--tensor-parallel-num-weight-shards", "4"})},
        {"sequence-parallel", Adding(Without(llama, "--sequence-parallel"),
                                     {"--sequence-parallel"})},
        {"tp-comm-overlap", Adding(llama, {"--tp-comm-overlap"})},
        {"tp-comm-overlap-cfg", Adding(With(llama, {"--tp-comm-overlap"}),
                                       {"--tp-comm-overlap-cfg", "ub.yaml"})},
        {"use-distributed-optimizer",
         Adding(Without(llama, "--use-distributed-optimizer"),
                {"--use-distributed-optimizer"})},
        {"decoder-first-pipeline-num-layers",
         Adding(llama, {"--decoder-first-pipeline-num-layers", "15"})},
        {"decoder-last-pipeline-num-layers",
         Adding(llama, {"--decoder-last-pipeline-num-layers", "15"})},
        {"num-layers-per-virtual-pipeline-stage",
         Adding(llama, {"--num-layers-per-virtual-pipeline-stage", "4"})},
        {"num-virtual-stages-per-pipeline-rank",
         Adding(llama, {"--num-virtual-stages-per-pipeline-rank", "2"})},
        {"microbatch-group-size-per-virtual-pipeline-stage",
         Adding(With(llama, {"--num-virtual-stages-per-pipeline-rank", "2"}),
                {"--microbatch-group-size-per-virtual-pipeline-stage", "4"})},
        {"pipeline-model-parallel-layout",
         Adding(llama, {"--pipeline-model-parallel-layout", "Et*15|t*17L"})},
        {"account-for-embedding-in-pipeline-split",
         Adding(odd_layers, {"--account-for-embedding-in-pipeline-split"})},
        {"account-for-loss-in-pipeline-split",
         Adding(odd_layers, {"--account-for-loss-in-pipeline-split"})},
        {"context-parallel-size",
         Adding(llama, {"--context-parallel-size", "2"})},
        {"cp-comm-type", Adding(cp, {"--cp-comm-type", "a2a"})},
        {"hierarchical-context-parallel-sizes",
         Probe{With(Replaced(cp, "--context-parallel-size", "4"),
                    {"--cp-comm-type", "a2a+p2p",
                     "--hierarchical-context-parallel-sizes", "2", "2"}),
               With(Replaced(cp, "--context-parallel-size", "4"),
                    {"--cp-comm-type", "a2a+p2p",
                     "--hierarchical-context-parallel-sizes", "1", "4"})}},
        {"use-megatron-fsdp",
         Adding(Replaced(llama, "--pipeline-model-parallel-size", "1"),
                {"--use-megatron-fsdp", "--data-parallel-sharding-strategy",
                 "optim_grads"})},
        {"use-custom-fsdp",
         Adding(Replaced(llama, "--pipeline-model-parallel-size", "1"),
                {"--use-custom-fsdp", "--data-parallel-sharding-strategy",
                 "optim_grads"})},
        {"data-parallel-sharding-strategy",
         Probe{fsdp, Replaced(fsdp, "--data-parallel-sharding-strategy",
                              "optim_grads_params")}},
        {"fsdp-double-buffer", Adding(fsdp, {"--fsdp-double-buffer"})},
        {"megatron-fsdp-max-pool-double-buffer",
         Adding(fsdp, {"--fsdp-double-buffer",
                       "--megatron-fsdp-max-pool-double-buffer"})},
        {"use-nccl-ub", Adding(fsdp, {"--use-nccl-ub"})},
        {"megatron-fsdp-version",
         Adding(fsdp, {"--megatron-fsdp-version", "1"})},
        {"suggested-communication-unit-size",
         Adding(fsdp, {"--suggested-communication-unit-size", "100000000"})},
        {"megatron-fsdp-main-params-dtype",
         Adding(fsdp, {"--megatron-fsdp-main-params-dtype", "fp32"})},
        {"megatron-fsdp-main-grads-dtype",
         Adding(
             With(Without(fsdp, "--bf16"), {"--bf16", "--grad-reduce-in-bf16"}),
             {"--megatron-fsdp-main-grads-dtype", "fp32"})},
        {"megatron-fsdp-grad-comm-dtype",
         Adding(With(fsdp, {"--grad-reduce-in-bf16"}),
                {"--megatron-fsdp-grad-comm-dtype", "fp32"})},
        {"ddp-param-name-patterns-for-fp32-local-accumulation",
         Adding(
             bf16_grads,
             {"--ddp-param-name-patterns-for-fp32-local-accumulation", ".*"})},
        {"ddp-reduce-scatter-with-fp32-accumulation",
         Adding(bf16_grads, {"--ddp-reduce-scatter-with-fp32-accumulation"})},
        {"outer-dp-sharding-strategy",
         Adding(llama, {"--outer-dp-sharding-strategy", "no_shard"})},
        {"ddp-bucket-size", Adding(llama, {"--ddp-bucket-size", "100000000"})},
        {"ddp-num-buckets", Adding(llama, {"--ddp-num-buckets", "100"})},
        {"ddp-pad-buckets-for-high-nccl-busbw",
         Adding(llama, {"--ddp-pad-buckets-for-high-nccl-busbw"})},
        {"num-distributed-optimizer-instances",
         Adding(llama, {"--num-distributed-optimizer-instances", "2"})},
        {"optimizer-cpu-offload", Adding(pao, {"--optimizer-cpu-offload"})},
        {"optimizer-offload-fraction",
         Adding(With(pao, {"--optimizer-cpu-offload"}),
                {"--optimizer-offload-fraction", "0.5"})},
        {"distribute-saved-activations",
         Adding(Without(full, "--sequence-parallel"),
                {"--distribute-saved-activations"})},
        {"cuda-graph-impl", Adding(llama, {"--cuda-graph-impl", "none"})},
        {"micro-batch-size",
         Probe{llama, Replaced(llama, "--micro-batch-size", "2")}},
        {"eval-micro-batch-size",
         Adding(llama, {"--eval-micro-batch-size", "4"})},
        {"eval-iters", Adding(llama, {"--eval-iters", "0"})},
        {"full-validation",
         Adding(With(llama, {"--eval-iters", "0"}), {"--full-validation"})},
        {"global-batch-size",
         Probe{llama, Replaced(llama, "--global-batch-size", "8")}},
        {"step-batch-size-schedule",
         Probe{llama, With(Without(llama, "--global-batch-size", true),
                           {"--step-batch-size-schedule", "0:768"})}},
        {"decrease-batch-size-if-needed",
         Adding(llama, {"--decrease-batch-size-if-needed"})},
        {"rampup-batch-size",
         Adding(llama, {"--rampup-batch-size", "256", "256", "1000"})},
        {"hidden-dropout",
         Probe{llama, Replaced(llama, "--hidden-dropout", "0.1")}},
        {"attention-dropout",
         Probe{llama, Replaced(llama, "--attention-dropout", "0.1")}},
        {"attention-backend",
         Adding(llama, {"--attention-backend", "unfused"})},
        {"flash-attention-version",
         Adding(llama, {"--flash-attention-version", "2"})},
        {"softmax-type", Adding(With(llama, {"--attention-backend", "fused"}),
                                {"--softmax-type", "learnable"})},
        {"qk-clip", Adding(With(llama, {"--attention-backend", "unfused"}),
                           {"--qk-clip"})},
        {"log-max-attention-logit",
         Adding(With(llama, {"--attention-backend", "unfused"}),
                {"--log-max-attention-logit"})},
        {"transformer-impl",
         Adding(With(llama, {"--attention-backend", "local"}),
                {"--transformer-impl", "local"})},
        {"attention-softmax-in-fp32",
         Adding(With(llama, {"--attention-backend", "local",
                             "--transformer-impl", "local"}),
                {"--attention-softmax-in-fp32"})},
        {"recompute-granularity",
         Adding(llama, {"--recompute-granularity", "selective"})},
        {"recompute-method",
         Probe{full, Replaced(full, "--recompute-method", "block")}},
        {"recompute-num-layers",
         Probe{full, Replaced(full, "--recompute-num-layers", "2")}},
        {"recompute-modules",
         Adding(With(llama, {"--recompute-granularity", "selective"}),
                {"--recompute-modules", "mlp"})},
        {"optimizer", Adding(llama, {"--optimizer", "sgd"})},
        {"sgd-momentum",
         Adding(With(llama, {"--optimizer", "sgd"}), {"--sgd-momentum", "0"})},
        {"no-use-layer-wise-param-layout",
         Adding(llama, {"--no-use-layer-wise-param-layout"})},
        {"moe-single-grouped-weight",
         Adding(With(moe, {"--moe-grouped-gemm", "--moe-use-grouped-tensor"}),
                {"--moe-single-grouped-weight"})},
        {"muon-tp-mode", Adding(muon, {"--muon-tp-mode", "blockwise"})},
        {"muon-fp32-matmul-prec",
         Adding(muon, {"--muon-fp32-matmul-prec", "high"})},
        {"muon-nesterov", Adding(muon, {"--muon-nesterov"})},
        {"muon-no-split-qkv", Adding(muon, {"--muon-no-split-qkv"})},
        {"muon-scalar-optimizer",
         Adding(muon, {"--muon-scalar-optimizer", "lion"})},
        {"num-experts", Probe{moe, Replaced(moe, "--num-experts", "16")}},
        {"moe-router-topk",
         Probe{moe, Replaced(moe, "--moe-router-topk", "4")}},
        {"moe-ffn-hidden-size", Adding(moe, {"--moe-ffn-hidden-size", "2048"})},
        {"moe-layer-freq", Adding(moe, {"--moe-layer-freq", "2"})},
        {"moe-shared-expert-intermediate-size",
         Adding(moe, {"--moe-shared-expert-intermediate-size", "2048"})},
        {"moe-shared-expert-overlap",
         Adding(With(moe, {"--moe-shared-expert-intermediate-size", "2048"}),
                {"--moe-shared-expert-overlap"})},
        {"moe-shared-expert-gate",
         Adding(With(moe, {"--moe-shared-expert-intermediate-size", "2048"}),
                {"--moe-shared-expert-gate"})},
        {"moe-input-jitter-eps",
         Adding(moe, {"--moe-input-jitter-eps", "0.01"})},
        {"moe-router-score-function",
         Adding(moe, {"--moe-router-score-function", "sigmoid"})},
        {"moe-router-pre-softmax", Adding(moe, {"--moe-router-pre-softmax"})},
        {"moe-router-fusion", Adding(moe, {"--moe-router-fusion"})},
        {"moe-router-num-groups",
         Adding(moe, {"--moe-router-num-groups", "4"})},
        {"moe-router-group-topk",
         Adding(With(moe, {"--moe-router-num-groups", "4"}),
                {"--moe-router-group-topk", "2"})},
        {"moe-router-load-balancing-type",
         Adding(With(moe, {"--moe-aux-loss-coeff", "0.01"}),
                {"--moe-router-load-balancing-type", "none"})},
        {"moe-aux-loss-coeff", Adding(moe, {"--moe-aux-loss-coeff", "0.01"})},
        {"moe-z-loss-coeff", Adding(moe, {"--moe-z-loss-coeff", "0.001"})},
        {"moe-router-enable-expert-bias",
         Adding(With(moe, {"--moe-router-score-function", "sigmoid"}),
                {"--moe-router-enable-expert-bias"})},
        {"moe-permute-fusion", Adding(moe, {"--moe-permute-fusion"})},
        {"expert-model-parallel-size",
         Probe{moe, Replaced(moe, "--expert-model-parallel-size", "4")}},
        {"expert-tensor-parallel-size",
         Probe{moe, Replaced(moe, "--expert-tensor-parallel-size", "2")}},
        {"expert-tensor-parallel-num-weight-shards",
         Adding(moe, {"--expert-tensor-parallel-num-weight-shards", "1"})},
        {"moe-token-dispatcher-type",
         Probe{moe, Replaced(moe, "--moe-token-dispatcher-type", "allgather")}},
        {"moe-flex-dispatcher-backend",
         Adding(flex,
                {"--moe-flex-dispatcher-backend", "deepep"})},  // dates it
        {"moe-enable-deepep",
         Adding(Replaced(moe, "--moe-token-dispatcher-type", "flex"),
                {"--moe-enable-deepep"})},
        {"moe-flex-dispatcher-num-sms",
         Adding(flex, {"--moe-flex-dispatcher-num-sms", "24"})},
        {"moe-deepep-num-sms", Adding(flex, {"--moe-deepep-num-sms", "24"})},
        {"moe-expert-capacity-factor",
         Adding(moe, {"--moe-expert-capacity-factor", "1.0"})},
        {"moe-pad-expert-input-to-capacity",
         Adding(With(moe, {"--moe-expert-capacity-factor", "2.0"}),
                {"--moe-pad-expert-input-to-capacity"})},
        {"moe-router-dtype", Adding(moe, {"--moe-router-dtype", "fp32"})},
        {"moe-mlp-glu-interleave-size",
         Adding(moe, {"--moe-mlp-glu-interleave-size", "32"})},
        {"use-te-activation-func",
         Adding(With(moe, {"--no-bias-swiglu-fusion"}),
                {"--use-te-activation-func"})},
        // Top-1 routing only (Megatron asserts), which a softmax before
        // the top-k needs (Megatron raises).
        {"moe-apply-probs-on-input",
         Adding(With(Replaced(moe, "--moe-router-topk", "1"),
                     {"--moe-router-pre-softmax"}),
                {"--moe-apply-probs-on-input"})},
        {"moe-grouped-gemm",
         Adding(Without(moe, "--moe-grouped-gemm"), {"--moe-grouped-gemm"})},
        {"moe-use-grouped-tensor", Adding(moe, {"--moe-use-grouped-tensor"})},
        {"use-transformer-engine-op-fuser",
         Adding(moe, {"--use-transformer-engine-op-fuser"})},
        {"activation-func-clamp-value",
         Adding(With(moe, {"--no-bias-swiglu-fusion"}),
                {"--activation-func-clamp-value", "7"})},
        {"overlap-moe-expert-parallel-comm",
         Adding(With(moe, {"--num-virtual-stages-per-pipeline-rank", "2"}),
                {"--overlap-moe-expert-parallel-comm"})},
        {"wgrad-deferral-limit",
         Adding(With(llama, {"--defer-embedding-wgrad-compute"}),
                {"--wgrad-deferral-limit", "2"})},
        {"multi-latent-attention", Probe{moe, mla}},
        {"q-lora-rank", Probe{mla, Replaced(mla, "--q-lora-rank", "1024")}},
        {"kv-lora-rank", Probe{mla, Replaced(mla, "--kv-lora-rank", "512")}},
        {"qk-head-dim", Probe{mla, Replaced(mla, "--qk-head-dim", "128")}},
        {"qk-pos-emb-head-dim",
         Probe{mla, Replaced(mla, "--qk-pos-emb-head-dim", "64")}},
        {"v-head-dim", Probe{mla, Replaced(mla, "--v-head-dim", "128")}},
        {"mla-down-proj-fusion", Adding(mla, {"--mla-down-proj-fusion"})},
        {"rope-type", Adding(mla, {"--rope-type", "yarn"})},
        {"mtp-num-layers", Adding(moe, {"--mtp-num-layers", "1"})},
        {"mtp-use-repeated-layer", Adding(With(moe, {"--mtp-num-layers", "2"}),
                                          {"--mtp-use-repeated-layer"})},
        {"mtp-hsm",
         Adding(With(moe, {"--mtp-num-layers", "2"}), {"--mtp-hsm"})},
        {"qk-layernorm", Adding(llama, {"--qk-layernorm"})},
        {"qk-l2-norm", Adding(llama, {"--qk-l2-norm"})},
        {"window-size", Adding(llama, {"--window-size", "127,0"})},
        // Every layer but every 2nd: windowed against none (freq 1).
        {"window-attn-skip-freq",
         {With(llama, {"--window-size", "127,0", "--window-attn-skip-freq",
                       "1"}),
          With(llama, {"--window-size", "127,0", "--window-attn-skip-freq",
                       "2"})}},
    };
    return p;
  }();
  return *probes;
}

Probe ProbeFor(const MegatronArgument& a) {
  const auto it = ArgumentProbes().find(a.name);
  if (it != ArgumentProbes().end()) return it->second;
  const std::string name = a.name;
  const bool expert =
      name.rfind("moe-", 0) == 0 || name.find("expert") != std::string::npos;
  std::vector<std::string> added = {"--" + name};
  if (a.takes_value) added.push_back("2");
  return Adding(expert ? MoeLaunch() : LlamaLaunch(), added);
}

}  // namespace memgate::testing
