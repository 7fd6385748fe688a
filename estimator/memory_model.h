#ifndef MEMGATE_ESTIMATOR_MEMORY_MODEL_H_
#define MEMGATE_ESTIMATOR_MEMORY_MODEL_H_

// The equations, on plain numbers: no protos, no allocation, so the planner
// can evaluate millions of layouts. Callers validate first (ValidateJob);
// here every input is assumed valid. One function per memory term in
// memory_model.cc, each with its source: the paper (sections 3-4) for its
// Llama setting, and Megatron-LM / Korthikanti et al. 2022 for the settings
// beyond it. Every setting left at its zero value is the paper's, so the
// paper's cells are reproduced exactly.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "estimator/deepep_buffers.h"
#include "estimator/megatron_release.h"
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
  double vocab = 0;       // v (or the tokenizer's: vocab_multiple)
  // Megatron pads v to a multiple of vocab_multiple x t per layout
  // (VocabRows); 0: v is already padded.
  double vocab_multiple = 0;
  double head_dim = 0;    // d; 0 means h / a
  bool tied_embeddings = false;
  bool ungated_mlp = false;      // GeLU or squared ReLU: 2 matrices, not 3
  bool quick_geglu = false;      // gated, unfused (MlpWidthBytes)
  bool geglu = false;            // Gemma's gated tanh-GeLU, unfused
  bool activation_clamp = false;  // ModelConfig.activation_clamp
  bool layernorm = false;        // LayerNorm (weight + bias) vs RMSNorm
  bool linear_bias = false;      // biases on every linear layer
  bool learnable_softmax = false;  // a learned sink logit a head
  bool attention_sinks = false;    // off-by-one or learnable: [SK]
  bool rotary_positions = false;   // RoPE of any kind
  bool rope_always_unfused = false;  // YaRN, mRoPE [RU]
  bool rope_per_sample = false;    // mRoPE: tables [s, b, 1, d] [RU]
  // One MTP layer applied mtp_layers times (ModelConfig.
  // mtp_repeated_layer): MtpBuiltLayers.
  bool mtp_repeated_layer = false;
  // MTP hidden-state mixing (ModelConfig.mtp_hidden_state_mixing).
  bool mtp_hidden_state_mixing = false;
  bool qkv_bias = false;         // a bias on the QKV projection only
  bool qk_norm = false;          // norms on Q and K over the head dim
  bool qk_l2_norm = false;       // those norms are L2Norm: no weights [QN]
  bool sandwich_norms = false;   // Gemma 2/3: 4 norms a layer, not 2
  bool logit_softcapping = false;  // Gemma 2: tanh of the logits stored
  // Gemma 2: tanh of the attention scores stored, in Megatron-Bridge's own
  // unfused attention (UnfusedAttentionKeeps).
  bool attention_softcapping = false;
  double learned_positions = 0;  // rows of a learned position embedding
  // Mixture of experts (moe_terms.cc); experts == 0 is a dense model.
  double experts = 0;        // E
  double topk = 0;           // k
  double expert_ffn = 0;     // each routed expert's FFN width
  double shared_ffn = 0;     // shared experts' FFN width (0: none)
  bool shared_gate = false;  // a sigmoid gate on the shared experts
  // MoeConfig.grouped_gemm: TEGroupedMLP (each local expert's FC1, then
  // each one's FC2) rather than SequentialMLP (expert by expert): the
  // order the layer-wise optimizer's buckets meet them [LW].
  bool grouped_experts = false;
  bool shared_overlap = false;  // MoeConfig.shared_expert_overlap
  bool input_jitter = false;    // MoeConfig.input_jitter
  double router_bytes = 4;   // bytes of a router logit (fp32 by default)
  // What the router keeps (MoeConfig's router fields, moe_terms.cc [RS]);
  // the defaults are unknown settings, counted at their largest.
  int router_score = 0;       // MoeConfig.RouterScore
  int router_fusion = -1;     // 1 fused, 0 unfused, -1 unknown
  double router_groups = 0;   // group-limited routing's groups (0: none)
  double router_group_topk = 0;
  bool aux_loss = true;
  bool z_loss = true;
  // Which layers are MoE: moe_prefix[i] is how many of layers 0..i-1 are
  // (size L + 1); empty with experts == 0.
  std::vector<uint32_t> moe_prefix;
  // Dense layers before the first MoE layer (DeepSeek-V3: 3); the layer
  // count when none is MoE, 0 without experts.
  double leading_dense = 0;
  // A dense layer after an MoE one (Megatron's --moe-layer-freq above 1, or
  // a list with dense layers past its first MoE one: Llama 4's alternating
  // layers): which pipeline rank peaks depends on where its layers are.
  bool moe_irregular = false;
  // Multi-latent attention (mla == false: grouped-query attention).
  bool mla = false;
  double q_lora = 0, kv_lora = 0, qk_nope = 0, qk_rope = 0, v_head = 0;
  // MlaConfig.fused_down_projection: the down projections split over TP.
  bool mla_fused_down_projection = false;
  double mtp_layers = 0;  // multi-token prediction layers, last stage
  // MoE: where the routing probabilities weight the expert outputs (what the
  // Megatron-Core release keeps: MoeMlpActivations); unspecified counts
  // the larger of its two releases' terms.
  v1::MoeConfig::ProbsApplied probs_applied =
      v1::MoeConfig::PROBS_APPLIED_UNSPECIFIED;
  bool expert_activation_unfused = false;  // separate activation ops
  bool expert_glu_linear_copy = false;     // MoeConfig's: glu()'s own copy
  bool expert_activation_te_op = false;    // TransformerEngine's op
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
  // N: micro-batches a chunk runs in a row under interleaving
  // (ParallelConfig.microbatch_group_size); 0 means p, Megatron's default.
  double microbatch_group = 0;
  bool sequence_parallel = true;
  bool distributed_optimizer = true;
  // N: distributed-optimizer instances (ParallelConfig.distributed_
  // optimizer_instances); each holds the optimizer states sharded over
  // d*c/N ranks. 1: one instance.
  double optimizer_instances = 1;
  // DDP's buckets under the distributed optimizer [BP]: the first chunk
  // of the first rank in buckets of how many elements (0: Megatron's
  // default) or how many (0: by size), and whether each ends on a
  // multiple of 2^16 too.
  double ddp_bucket_size = 0;
  double ddp_num_buckets = 0;
  bool pad_buckets_for_high_busbw = false;
  // Context parallelism's exchange (ParallelConfig.context_parallel_comm)
  // and a2a+p2p's inner all-to-all size; they matter only with c > 1
  // (ContextParallelKeepsOutputTwice, ContextParallelGatherWorkingSet).
  v1::ContextParallelComm cp_comm = v1::CONTEXT_PARALLEL_COMM_P2P;
  double cp_a2a_size = 1;
  // Standalone MTP (ParallelConfig.mtp_pipeline_rank): the pipeline rank
  // before the last whose last chunk holds the MTP layers; -1: they sit
  // beside the loss on the last rank (HoldsMtp).
  double mtp_rank = -1;
  v1::Precision precision = v1::PRECISION_BF16_FP32_GRADS;
  v1::Optimizer optimizer = v1::OPTIMIZER_ADAM;
  double sgd_momentum = 0.9;
  // Under Lion, the optimizer of the parameters that are not matrices and
  // of the word embeddings and LM head, by the job's Megatron release
  // (LionScalarOptimizerOf; kEither without one: the larger of both).
  LionScalarOptimizer lion_scalars = LionScalarOptimizer::kEither;
  // Muon (TrainingConfig.muon; muon_terms.cc [MU]): the Newton-Schulz
  // mode (unset: the release's default, duplicated without one), fp32
  // iteration, Nesterov's blend, QKV split, and whether the parameters it
  // leaves are Lion's (else Adam's; MuonReleaseOf).
  v1::Muon::TpMode muon_tp_mode = v1::Muon::TP_MODE_DUPLICATED;
  bool muon_fp32_iteration = false;
  bool muon_nesterov = false;
  bool muon_split_qkv = true;
  bool muon_scalar_lion = false;
  // [LW] Lion or Muon with the distributed optimizer, as the job's
  // release runs it (EmergingDistributedRunOf; without a release both
  // ways, the larger): the layer-wise distributed optimizer packed by
  // elements (core 0.18, 0.19) or by Newton-Schulz cost (later). Both
  // false: no layer-wise optimizer.
  bool layer_wise_by_elements = false;
  bool layer_wise_by_cost = false;
  bool layer_wise() const {
    return layer_wise_by_elements || layer_wise_by_cost;
  }
  double hidden_dropout = 0;
  double attention_dropout = 0;
  bool unfused_attention = false;
  // Of an unfused attention: Megatron's own (ATTENTION_KERNEL_LOCAL), whose
  // softmax keeps an fp32 output only with softmax_in_fp32
  // (TrainingConfig.attention_softmax_in_fp32; memory_model.cc [UA]).
  bool local_attention = false;
  // Megatron's local layer spec (TrainingConfig.local_layer_spec): torch's
  // norms, apart from the linear layers (memory_model.cc [QN], [LN]).
  bool local_layer_spec = false;
  // TrainingConfig.rope_fusion_disabled: RoPE unfused [RU].
  bool rope_fusion_disabled = false;
  // TrainingConfig.cross_entropy_new_gradient: the native fused loss's
  // fp32 gradient of the logits [CE].
  bool cross_entropy_new_gradient = false;
  // TrainingConfig.gradient_accumulation_unfused: weight gradients are new
  // tensors, the output layer's the last stage's transient [OW].
  bool gradient_accumulation_unfused = false;
  // Megatron's jit_fuser functions run eagerly (TrainingConfig.
  // jit_fuser_disabled; moe_terms.cc [QG]).
  bool eager_jit_functions = false;
  bool softmax_in_fp32 = false;
  // TransformerEngine's unfused attention without its fused softmax
  // (TrainingConfig.te_masked_softmax_fusion_disabled): the fp32 output
  // kept at every length (memory_model.cc [TS]).
  bool te_softmax_kernel_off = false;
  // A SwiGLU activation that saves only its input (Megatron's fused kernel
  // or TransformerEngine's op, TrainingConfig.fused_swiglu): the dense MLP
  // and shared experts keep 6 B a unit of FFN width, not 8; with that
  // input in fp8 (TrainingConfig.activation_fp8_input_store) 4
  // (DenseMlpBytes).
  bool fused_swiglu = false;
  // The unfused SwiGLU's x_linear + offset (TrainingConfig.glu_linear_copy).
  bool glu_linear_copy = false;
  // TrainingConfig.fp32_local_grad_accumulation: an fp32 gradient of every
  // parameter beside the 16-bit buffer.
  bool fp32_local_grads = false;
  bool activation_fp8_input_store = false;
  // Megatron's deferred output-layer weight gradient
  // (TrainingConfig.defer_embedding_wgrad, DeferredEmbeddingWgradBytes):
  // at most wgrad_deferral_limit entries (0: every call of the step).
  bool defer_embedding_wgrad = false;
  // TrainingConfig.reduce_scatter_fp32_accumulation where Megatron runs it
  // (the distributed optimizer's 16-bit, or fp32 training's, gradients
  // reduce-scattered by DDP) [RSA in memory_model.cc].
  bool rs_fp32_accumulation = false;
  double wgrad_deferral_limit = 0;
  // Megatron's dataloader attention mask (b x s x s bool) on the stages
  // that read data (DataloaderMaskBytes in memory_model.cc).
  bool dataloader_mask = false;
  RecomputeKind recompute = RecomputeKind::kNone;
  double recompute_layers = 0;  // N of full recomputation
  // Full recomputation's stored inputs split over TP without sequence
  // parallelism (Recompute.distribute_saved_activations).
  bool distribute_saved_inputs = false;
  // Selective recomputation of modules beyond core attention [MT]: the
  // dense MLP, the whole MoE block, the experts' activation function, the
  // shared experts: each keeps only its input.
  bool recompute_core_attn = true;  // with kSelective
  bool recompute_mlp = false;
  bool recompute_moe = false;
  bool recompute_moe_act = false;
  bool recompute_layernorm = false;
  bool recompute_shared_experts = false;
  bool recompute_mla_up_proj = false;
  // --use-precision-aware-optimizer: bytes a parameter's main gradient,
  // master weight and Adam states take (resolved by LayoutOf).
  bool precision_aware = false;
  double main_grad_bytes = 4;
  double master_bytes = 4;
  double exp_avg_bytes = 4;
  double exp_avg_sq_bytes = 4;
  // The precision-aware optimizer hands the optimizer the gradient buffer
  // itself (decoupled_grad) rather than an fp32 copy: Megatron's
  // use_precision_aware_optimizer_no_fp8_or_ds_fp8 (optimizer_config.py)
  // [OS].
  bool decoupled_grads = false;
  // An evaluation's micro-batch (TrainingConfig.eval_micro_batch_size, or
  // the training's); 0: no evaluation (evaluation_off) [EV].
  double eval_micro_batch = 0;
  // Share of the optimizer held in host memory (--optimizer-offload-fraction).
  double optimizer_offload = 0;
  // TransformerEngine fp8: fp8 weight copies and fp8-saved GEMM inputs.
  bool fp8 = false;
  // Fp8.RECIPE_NVFP4: fp8's counts [F4], but Megatron's fp8 is off, so
  // what it sizes by --fp8-format (TE's userbuffers) stays unquantized.
  bool nvfp4 = false;
  bool fp8_param_gather = false;
  // Fp8.output_projection: the LM head's MXFP8 weight copies [TE].
  bool fp8_output_projection = false;
  // Scale bytes an fp8 element carries [TE recipes]: MXFP8 one E8M0 byte
  // per 32 elements of activations and weights; blockwise one fp32 scale
  // per 1 x 128 tile of an activation and per 128 x 128 block of a weight;
  // the per-tensor recipes (delayed, tensorwise) none to speak of.
  double fp8_scale_bytes = 0;         // of a saved activation element
  double fp8_weight_scale_bytes = 0;  // of a weight element
  // Rows every local expert's tokens are padded to under fp8
  // (fp8_utils.py get_fp8_align_size): 16, 32 for MXFP8.
  double fp8_align = 16;
  // Rows of the amax history each delayed-scaling quantizer keeps
  // (Fp8.amax_history_len, at least 1); 0 under the other recipes [DS].
  double fp8_amax_history = 0;
  // Fp8.bf16_first_layers / bf16_last_layers: the model's first and last
  // layers that run outside fp8 [F8L in memory_model.cc]; 0 without fp8.
  double bf16_first_layers = 0;
  double bf16_last_layers = 0;
  // MoeConfig.grouped_tensor: 256-row padding in any precision.
  bool grouped_tensor = false;
  // MoeConfig.fused_grouped_mlp: only expert TP 1 runs (planner).
  bool fused_grouped_mlp = false;
  FsdpSharding sharding = FsdpSharding::kNone;
  // Megatron-FSDP's double buffer (two units un-sharded at most) and its
  // communication unit in parameters (0: Megatron's default).
  bool fsdp_double_buffer = false;
  double fsdp_unit_size = 0;
  // Expert parallelism: routed experts over ep ranks, each split over etp.
  double expert_parallel = 1;  // EP
  double expert_tensor = 1;    // ETP
  bool allgather_dispatcher = false;
  // --moe-token-dispatcher-type flex (DeepEP): its buffers on every GPU
  // of a stage with MoE layers (deepep_buffers.h), with this many SMs.
  bool deepep_dispatcher = false;
  double deepep_sms = kDefaultDeepEpSms;
  // --overlap-moe-expert-parallel-comm: one more micro-batch (under
  // interleaving, chunk) in flight (MicrobatchesInFlight).
  bool ep_overlap = false;
  // --tp-comm-overlap: TransformerEngine's userbuffers on every GPU
  // (te_userbuffers.h); custom: --tp-comm-overlap-cfg's upper bound.
  bool tp_comm_overlap = false;
  bool tp_comm_overlap_custom = false;
  double capacity_factor = 0;  // 0: dropless
  bool pad_to_capacity = false;
  // Token copies the most loaded expert-parallel rank receives, as a
  // multiple of its balanced share (1 when estimating the balanced load).
  double expert_load = 1;
  double load_imbalance = 1.25;  // what admission assumes (dropless)
};

// Rows every local expert's tokens are padded to (0: none): 256 on
// TransformerEngine's GroupedTensor path (moe_utils.py
// get_align_size_for_quantization checks it first), else fp8's.
inline double ExpertRowAlign(const Layout& l) {
  if (l.grouped_tensor) return 256;
  return l.fp8 ? l.fp8_align : 0;
}

// Bytes of one fp8-saved activation element with its share of scales.
inline double Fp8ElementBytes(const Layout& l) {
  return 1 + l.fp8_scale_bytes;
}

struct StageFigures {
  double parameters = 0;
  // Elements of padding the distributed optimizer lays out in the
  // gradient and parameter buffers beside the parameters [BP], counted in
  // weight_bytes and gradient_bytes at their bytes an element.
  double padding_elements = 0;
  double weight_bytes = 0;
  double gradient_bytes = 0;
  double optimizer_bytes = 0;
  double activation_bytes = 0;
  // MoE: what the most loaded expert-parallel rank adds above the balanced
  // load (Layout::load_imbalance); not in total_bytes, in admission_bytes.
  double imbalance_bytes = 0;
  // Fixed communication buffers outside the activations (DeepEP's and
  // TransformerEngine's userbuffers)...
  double buffer_bytes = 0;
  // ...of which the userbuffers (Layout::tp_comm_overlap)...
  double te_userbuffer_bytes = 0;
  // ...and the fp32-accumulating reduce-scatter's scratch above the
  // activations it outlives (Layout::rs_fp32_accumulation).
  double gradient_scratch_bytes = 0;
  // The last stage's 16-bit copy of the logits' gradient at the loss's
  // backward (memory_model.cc [CE] LossGradientCastBytes): a transient,
  // not in total_bytes; the zone checks it fits beside admission_bytes.
  double loss_gradient_cast_bytes = 0;
  // Without gradient-accumulation fusion, the output layer's weight
  // gradient and its input's gradient at its backward ([OW]
  // OutputWeightGradientBytes): the last stage's other transient.
  double output_weight_gradient_bytes = 0;
  // The first stage: the embedding's dense weight gradient at its backward,
  // less the micro-batch's activations freed by then ([EG]
  // EmbeddingGradientBytes).
  double embedding_gradient_bytes = 0;
  // The optimizer step's fp32 gradient copies and Lion's update or Muon's
  // Newton-Schulz copies, less the activations freed before it ([OS]
  // Fp32GradientCopyBytes, LionUpdateBytes; [MU] MuonStepBytes).
  double optimizer_step_bytes = 0;
  // An evaluation's no-grad forward beside those copies, less the training
  // peak's activations ([EV] EvaluationActivations).
  double evaluation_bytes = 0;
  double total_bytes() const {
    return weight_bytes + gradient_bytes + optimizer_bytes +
           activation_bytes + buffer_bytes;
  }
  double admission_bytes() const { return total_bytes() + imbalance_bytes; }
  // The transients come one after the other (the loss's backward, the
  // output layer's, the embedding's, the optimizer step, an evaluation):
  // the largest sits beside the stage.
  double transient_bytes() const {
    return std::max({loss_gradient_cast_bytes, output_weight_gradient_bytes,
                     embedding_gradient_bytes, optimizer_step_bytes,
                     evaluation_bytes});
  }
  // [UA] [GA] Megatron's own attention keeps one layer's scores in its
  // global memory buffer for the run: outside the total (the 80% rule's
  // headroom holds it, as the measured local steps show), beside the
  // stage and its transients where they must fit in the GPU.
  double score_buffer_bytes = 0;
  double transient_peak_bytes() const {
    return admission_bytes() + score_buffer_bytes + transient_bytes();
  }
};

// At one global batch a larger micro-batch can lower a stage's figures a
// little (fewer micro-batches in flight than the pipeline is deep hold
// the same tokens, and a larger freed micro-batch covers more of the
// embedding's gradient [EG]): less than this share of either, at 2 to 16
// times the micro-batch (3.2% at most in 180,000 sampled jobs), except
// under Megatron's own attention
// (Layout::unfused_attention), where the fused softmax kernel's batch rule
// can drop its fp32 scores (monotonic_estimates_test). The planner
// carries a smaller micro-batch's misses to larger ones only where they
// missed by more.
inline constexpr double kMicroBatchFall = 0.05;

// The largest admission figure of the stages given, and the largest
// admission figure plus transient: what the zone (estimate.h AdmissionZone)
// is decided on.
struct StagePeak {
  double admission = 0;
  double transient = 0;
  // The largest weights, gradients and optimizer states of the stages:
  // what no recomputation can lower (a floor under `admission` for the
  // planner's search).
  double model_states = 0;
  void Add(const StageFigures& f) {
    admission = std::max(admission, f.admission_bytes());
    transient = std::max(transient, f.transient_peak_bytes());
    model_states = std::max(
        model_states, f.weight_bytes + f.gradient_bytes + f.optimizer_bytes);
  }
};

ModelShape ShapeOf(const v1::ModelConfig& model);

// Is the multi-token-prediction layer an MoE layer: as the model's last
// layer is [TM in moe_terms.cc].
bool MtpLayerIsMoe(const ModelShape& m);
// The MTP layers that hold parameters: every one, or the one a repeated
// layer applies mtp_layers times (multi_token_prediction.py
// mtp_use_repeated_layer).
double MtpBuiltLayers(const ModelShape& m);

// d, and the width of the attention projections a*d (= h in the paper's
// Llama).
double HeadDim(const ModelShape& m);
double QueryWidth(const ModelShape& m);
Layout LayoutOf(const v1::Job& resolved_job);

// What Megatron's unfused RoPE keeps a layer: its cos and sin tables for Q
// and for K (memory_model.cc [RU]); 0 under TE's fused RoPE.
double UnfusedRopeTables(const ModelShape& m, const Layout& l);

// The bytes of a parameter's gradient in the gradient buffer (or Megatron-
// FSDP's) that `training` keeps: the precision-aware optimizer's
// --main-grads-dtype [PA], else 2 with bf16 gradients or fp16 training,
// else 4. (The readers widen it to fp32 where Megatron does.)
double GradientBytesPerParameter(const v1::TrainingConfig& training);

// What Megatron's unfused core attention keeps for backward in a layer
// beyond Q, K, V and its output (memory_model.cc [K eq. 1], [UA]); all
// false with FlashAttention. One decision for the activation term and the
// estimate's assumptions.
struct UnfusedAttentionKept {
  bool scores = false;        // softmax output (dropout's mask and output)
  bool expanded_kv = false;   // K and V expanded to the a query heads
  bool qkv_output = false;    // the whole QKV output, through V's view
  bool causal_masks = false;  // an s x s bool mask a layer
  // In 16-bit training, where the fused softmax kernel cannot run: the
  // softmax in fp32, its output kept too (memory_model.cc [TS], [GA]).
  bool fp32_softmax = false;
  // Gemma 2's soft-capped scores [GA]: tanh's output a layer.
  bool capped_scores = false;
  // Megatron's own attention [UA] [GA]: one layer's scores in its global
  // buffer, held once a GPU: outside the stage's total, checked beside it
  // with its transients (StageFigures::score_buffer_bytes).
  bool scores_buffer = false;
};
UnfusedAttentionKept UnfusedAttentionKeeps(const ModelShape& m,
                                           const Layout& l);

// Parameters of the whole, unsharded model (the paper's equation 3,
// generalized to head_dim, GeLU, LayerNorm, biases, learned positions),
// with the vocabulary padded as at TP `tensor`.
double TotalParameters(const ModelShape& m, double tensor = 1);

// The vocabulary's rows as Megatron allocates them at TP `tensor`: v
// rounded up to a multiple of vocab_multiple x t
// (core/tokenizers/utils/build_tokenizer.py _set_padded_vocab_size), or v
// when it is already padded.
double VocabRows(const ModelShape& m, double tensor);

// Whether an fp8 layout runs its first or last layers outside fp8
// (--first-last-layers-bf16 [F8L]): where they sit decides which ranks
// can peak.
bool HasBf16Layers(const Layout& l);

// Micro-batches whose activations pipeline stage `stage` holds at its
// peak: p - stage under 1F1B (the paper), at most m (Megatron's 1F1B runs
// min(p - stage - 1, m) warm-up forwards, then one more). Under interleaved
// 1F1B: the model chunks (micro-batch x chunk) in flight on that rank,
// 2(p - stage - 1) + (v - 1)N + 1 with N = MicrobatchGroup, at most m v.
// With the EP all-to-all overlap, one more of either.
double MicrobatchesInFlight(const Layout& l, uint32_t stage);

// N, the micro-batches a model chunk runs in a row under interleaving:
// the layout's microbatch_group, or p (Megatron's default).
double MicrobatchGroup(const Layout& l);

// Whether a micro-batch keeps the dataloader's attention mask for backward
// (checkpointed layers or core attention save it as an argument; unfused
// attention masks its scores in place), rather than only during its
// forward [DL in memory_model.cc].
bool DataloaderMaskIsSaved(const Layout& l);

// Megatron's accumulate_allreduce_grads_in_fp32 (training/arguments.py):
// bf16 training whose main gradients are fp32 (no --grad-reduce-in-bf16,
// no bf16 --main-grads-dtype) reduces them in fp32, and so turns
// --ddp-reduce-scatter-with-fp32-accumulation off. fp32 and fp16 training
// keep it on. One rule for the reader, validation and the term [RSA].
bool ReducesGradientsInFp32(const v1::TrainingConfig& t);

// Whether context parallelism exchanges by all-to-all (a2a, or a2a+p2p
// with an inner level of 2 or more) at c > 1: the attention output is
// then kept twice unless core attention is recomputed [CPX]. One rule for
// the term and the assumption it states.
bool ContextParallelAllToAll(const Layout& l);

// Dense and MoE transformer layers of a stage or chunk.
struct LayerMix {
  double dense = 0;
  double moe = 0;
  double total() const { return dense + moe; }
};

// A rank's model chunks as LayoutStages::Chunks reads them (ChunkMixOf):
// each chunk's dense and MoE layers and its first layer. They depend on
// the split and the model, not on the layout: the planner makes them once
// a pipeline shape rather than once a layout it estimates.
struct ChunkMix {
  std::vector<LayerMix> chunks;
  std::vector<double> first;  // chunk j's first layer (0 where not given)
  LayerMix stage;             // the chunks' sum
};
ChunkMix ChunkMixOf(const ModelShape& m,
                    const std::vector<double>& chunk_layers,
                    const std::vector<double>& chunk_first = {});

// One layer of one kind (dense or MoE) under one layout, as every stage
// of the layout counts it (memory_model.cc LayerCache). Kept by
// LayoutStages; `known` once worked out.
struct LayerKindFigures {
  bool known = false;
  double full = 0;        // LayerActivationsFull
  double bf16_extra = 0;  // what the layer keeps run in bf16 [F8L]
  double selective = 0;   // what its recomputed modules remake [SR]
  // The layer's parameters (LayerParameters, and an MoE layer's routed
  // experts apart: RoutedExpertParameters), worked out apart: the expert
  // load does not change them.
  bool parameters_known = false;
  double parameters = 0;
  double routed_expert_parameters = 0;
};

// What every stage of one layout counts alike under one expert load:
// each kind of layer and, MoE, the token dispatch's working set.
class LayerWiseMemo;  // layer_wise_terms.h

struct LayoutLaneFigures {
  LayerKindFigures kinds[2];  // dense, MoE
  bool dispatch_known = false;
  double dispatch_working_set = 0;  // DispatchWorkingSet
  // [LW] Where set (the routed lane's), the layer-wise optimizer's stage
  // figures are looked up there, each packed once (its owner's: it must
  // outlive the LayoutStages); null: packed for each stage.
  LayerWiseMemo* layer_wise = nullptr;
};

// A layout's layer figures under both expert loads, as LayoutStages keeps
// them. No layer figure reads the pipeline depth, data parallelism,
// micro-batches a step, interleaving or its micro-batch group (a stage's
// in-flight count and placement do, apart), nor, under full
// recomputation, how many layers are recomputed: a caller may hand the
// same one to the LayoutStages of layouts that differ only in those (the
// planner keeps one a TP, CP, EP, ETP, micro-batch and recomputation
// across pipeline depths and schedules), and figures stay the same to the
// bit (MemoryModelTest.LayoutsAlikeButForTheirPipelineShareLayerFigures).
struct LayoutLayerFigures {
  LayoutLaneFigures routed;  // the layout as it is
  LayoutLaneFigures loaded;  // under the most loaded expert-parallel rank
};

// The stages of one layout. What every stage of it computes alike, one
// layer's activations of each kind, as routed and under the most loaded
// expert, is worked out at the first stage that needs it and kept: a
// job's p stages, or the planner's few ranks of a layout, compute it once
// rather than once a stage (it was a quarter of an MoE plan's work). For
// the (m, l) it is made with, which must outlive it; figures are the same,
// to the bit, as each stage's alone (memory_model_test).
class LayoutStages {
 public:
  LayoutStages(const ModelShape& m, const Layout& l);
  // With layer figures kept by the caller (LayoutLayerFigures: for
  // layouts alike but for their pipeline), filled as stages need them.
  LayoutStages(const ModelShape& m, const Layout& l,
               LayoutLayerFigures& kept);
  // It keeps references: a temporary shape or layout would dangle.
  LayoutStages(ModelShape&&, const Layout&) = delete;
  LayoutStages(const ModelShape&, Layout&&) = delete;
  LayoutStages(ModelShape&&, Layout&&) = delete;
  LayoutStages(const ModelShape&, Layout&&, LayoutLayerFigures&) = delete;
  LayoutStages(const LayoutStages&) = delete;
  LayoutStages& operator=(const LayoutStages&) = delete;

  // StageMemoryOf and StageMemoryOfChunks (below), of this layout.
  StageFigures Stage(uint32_t stage, double stage_layers,
                     double first_layer = -1);
  StageFigures Chunks(uint32_t stage, const std::vector<double>& chunk_layers,
                      const std::vector<double>& chunk_first = {});
  StageFigures Chunks(uint32_t stage, const ChunkMix& mix);

 private:
  const ModelShape& m_;
  const Layout& l_;
  // MoE dropless routing: the layout with the most loaded expert-parallel
  // rank's load, whose activations less the balanced ones are the stage's
  // imbalance margin; none where there is none (not made then: the
  // planner makes a LayoutStages for each layout it estimates).
  std::optional<Layout> loaded_layout_;
  LayoutLayerFigures own_;       // unless the caller keeps them
  LayoutLayerFigures& figures_;  // own_ or the caller's
};

// Memory of one GPU of pipeline stage `stage` (0-based) holding
// `stage_layers` transformer layers, under the 1F1B schedule.
// `first_layer` is the index of the stage's first layer (which of its
// layers are MoE); negative means an even split: stage x stage_layers.
StageFigures StageMemoryOf(const ModelShape& m, const Layout& l,
                           uint32_t stage, double stage_layers,
                           double first_layer = -1);

// The same under interleaving with model chunks of different sizes
// (Megatron's --pipeline-model-parallel-layout): chunk_layers[j] is the
// layers of this rank's chunk j, j < v. Each chunk's micro-batches in
// flight are counted from the schedule's order (groups of N micro-batches
// per chunk, chunk by chunk: MicrobatchGroup).
StageFigures StageMemoryOfChunks(const ModelShape& m, const Layout& l,
                                 uint32_t stage,
                                 const std::vector<double>& chunk_layers,
                                 const std::vector<double>& chunk_first = {});

// The largest stage admission figure (total plus any MoE imbalance margin)
// for an even split (L/p layers a stage). Under
// 1F1B it is always a stage that holds the embedding or the LM head, so only
// those are evaluated.
StagePeak PeakOfEvenStages(const ModelShape& m, const Layout& l);
// The same with layer figures the caller keeps (LayoutLayerFigures),
// returning early once `enough` holds of the peak so far: the planner's
// recomputation probes need only know that a layout does not fit, and a
// peak never falls as stages are added (StagePeak::Add takes maxima).
StagePeak PeakOfEvenStages(
    const ModelShape& m, const Layout& l, LayoutLayerFigures& kept,
    absl::FunctionRef<bool(const StagePeak&)> enough);
inline double PeakBytesEvenStages(const ModelShape& m, const Layout& l) {
  return PeakOfEvenStages(m, l).admission;
}

// The middle pipeline ranks (1 .. p - 2) whose peak can exceed the
// others'. Middle ranks hold alike chunks and fewer micro-batches in
// flight the later they are, so of ranks with the same mix of dense and
// MoE layers the earliest peaks. Leading dense layers (DeepSeek's first
// three) make two mixes, split at `boundary`, the rank whose chunks hold
// the first MoE layer: rank 1, it and the rank after it. At most three
// ranks whatever the model, so no layer pattern makes a plan evaluate
// every rank of every layout.
struct PeakRanks {
  uint32_t rank[3] = {0, 0, 0};
  uint32_t count = 0;
};
PeakRanks MiddlePeakRanks(uint32_t pipeline, uint32_t boundary);

// The rank whose layers hold layer `layer` when rank 0's first chunk has
// `first` layers and every other chunk of the round `middle` (the round
// being p chunks of a virtual stage: `round` layers in all), clamped to
// p - 1.
uint32_t RankHoldingLayer(double layer, double first, double middle,
                          double round, uint32_t pipeline);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_MEMORY_MODEL_H_
