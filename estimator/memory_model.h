#ifndef MEMGATE_ESTIMATOR_MEMORY_MODEL_H_
#define MEMGATE_ESTIMATOR_MEMORY_MODEL_H_

// The equations, on plain numbers: no protos, no allocation, so the planner
// can evaluate millions of layouts. Callers validate first (ValidateJob);
// here every input is assumed valid. One function per memory term in
// memory_model.cc, each with its source: the paper (sections 3-4) for its
// Llama setting, and Megatron-LM / Korthikanti et al. 2022 for the settings
// beyond it. Every setting left at its zero value is the paper's, so the
// paper's cells are reproduced exactly.

#include <cstdint>
#include <vector>

#include "proto/memgate.pb.h"

namespace memgate {

// Model dimensions as doubles: every product below is taken in floating
// point, so absurd sizes give large finite numbers, never an overflow.
struct ModelShape {
  double layers = 0;      // L
  double hidden = 0;      // h
  double ffn_hidden = 0;  // h_ffn
  double heads = 0;       // a
  double kv_heads = 0;    // k
  double vocab = 0;       // v
  double head_dim = 0;    // d; 0 means h / a
  bool tied_embeddings = false;
  bool gelu_mlp = false;         // GPT's 2-matrix MLP instead of SwiGLU
  bool layernorm = false;        // LayerNorm (weight + bias) vs RMSNorm
  bool linear_bias = false;      // biases on every linear layer
  bool qkv_bias = false;         // a bias on the QKV projection only
  bool qk_norm = false;          // norms on Q and K over the head dim
  bool sandwich_norms = false;   // Gemma 2/3: 4 norms a layer, not 2
  bool logit_softcapping = false;  // Gemma 2: tanh of the logits stored
  double learned_positions = 0;  // rows of a learned position embedding
};

enum class RecomputeKind { kNone, kSelective, kFullUniform, kFullBlock };

// Megatron-FSDP's --data-parallel-sharding-strategy (ZeRO stages); kNone
// is no FSDP (the distributed optimizer decides on optimizer states).
enum class FsdpSharding { kNone, kNoShard, kOptim, kOptimGrads,
                          kOptimGradsParams };

struct Layout {
  double tensor = 1;    // t
  double pipeline = 1;  // p
  double context = 1;   // c
  double data = 1;      // d
  double micro_batch = 1;  // b
  double seq_length = 1;   // s
  // m = gbs / (b*d): micro-batches per step, which caps those in flight;
  // 0 when the global batch is not known (no cap).
  double microbatches = 0;
  // v: model chunks per rank under interleaved 1F1B; 1 means plain 1F1B.
  double virtual_stages = 1;
  bool sequence_parallel = true;
  bool distributed_optimizer = true;
  v1::Precision precision = v1::PRECISION_BF16_FP32_GRADS;
  v1::Optimizer optimizer = v1::OPTIMIZER_ADAM;
  double sgd_momentum = 0.9;
  double hidden_dropout = 0;
  double attention_dropout = 0;
  bool unfused_attention = false;
  RecomputeKind recompute = RecomputeKind::kNone;
  double recompute_layers = 0;  // N of full recomputation
  // --use-precision-aware-optimizer: bytes a parameter's main gradient,
  // master weight and Adam states take (resolved by LayoutOf).
  bool precision_aware = false;
  double main_grad_bytes = 4;
  double master_bytes = 4;
  double exp_avg_bytes = 4;
  double exp_avg_sq_bytes = 4;
  // Share of the optimizer held in host memory (--optimizer-offload-fraction).
  double optimizer_offload = 0;
  // TransformerEngine fp8: fp8 weight copies and fp8-saved GEMM inputs.
  bool fp8 = false;
  bool fp8_param_gather = false;
  double fp8_scale_bytes = 0;  // per fp8 element: 1/32 for MXFP8, else 0
  FsdpSharding sharding = FsdpSharding::kNone;
};

struct StageFigures {
  double parameters = 0;
  double weight_bytes = 0;
  double gradient_bytes = 0;
  double optimizer_bytes = 0;
  double activation_bytes = 0;
  double total_bytes() const {
    return weight_bytes + gradient_bytes + optimizer_bytes + activation_bytes;
  }
};

ModelShape ShapeOf(const v1::ModelConfig& model);
Layout LayoutOf(const v1::Job& resolved_job);

// Parameters of the whole, unsharded model (the paper's equation 3,
// generalized to head_dim, GeLU, LayerNorm, biases, learned positions).
double TotalParameters(const ModelShape& m);

// Micro-batches whose activations pipeline stage `stage` holds at its
// peak: p - stage under 1F1B (the paper), at most m (Megatron's 1F1B runs
// min(p - stage - 1, m) warm-up forwards, then one more). Under interleaved
// 1F1B: the model chunks (micro-batch x chunk) in flight on that rank.
double MicrobatchesInFlight(const Layout& l, uint32_t stage);

// Memory of one GPU of pipeline stage `stage` (0-based) holding
// `stage_layers` transformer layers, under the 1F1B schedule.
StageFigures StageMemoryOf(const ModelShape& m, const Layout& l,
                           uint32_t stage, double stage_layers);

// The same under interleaving with model chunks of different sizes
// (Megatron's --pipeline-model-parallel-layout): chunk_layers[j] is the
// layers of this rank's chunk j, j < v. Each chunk's micro-batches in
// flight are counted from the schedule's order (groups of p micro-batches
// per chunk, chunk by chunk).
StageFigures StageMemoryOfChunks(const ModelShape& m, const Layout& l,
                                 uint32_t stage,
                                 const std::vector<double>& chunk_layers);

// The largest stage total for an even split (L/p layers a stage). Under
// 1F1B it is always a stage that holds the embedding or the LM head, so only
// those are evaluated.
double PeakBytesEvenStages(const ModelShape& m, const Layout& l);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_MEMORY_MODEL_H_
