#include "estimator/memory_model.h"

#include "estimator/deepep_buffers.h"
#include "estimator/te_userbuffers.h"
#include "estimator/moe_terms.h"
#include "estimator/layer_wise_terms.h"
#include "estimator/muon_terms.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

// Sources, cited term by term below:
// [P]  the paper, "Memory consumption estimation for 4D parallel LLM
//      training", sections 3.1 (model states) and 3.2 (activations).
// [K]  Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
//      Transformer Models", section 4 (activations per layer, eq. 1: the
//      5as^2b attention terms and the sbh dropout masks) and section 5
//      (selective and full recomputation).
// [MD] Megatron-LM docs/source/api-guide/dist_optimizer.md: bytes per
//      parameter with the distributed optimizer: bf16 6 + 12/d, fp16
//      4 + 16/d, fp32 8 + 8/d.
// [MT] Megatron-LM megatron/core/transformer/transformer_config.py
//      (recompute_granularity, recompute_method uniform/block,
//      recompute_num_layers) and megatron/core/pipeline_parallel/
//      schedules.py (1F1B warm-up: min(p - rank - 1, m) micro-batches;
//      interleaved: 2(p - rank - 1) + (v - 1) * N warm-up forwards of model
//      chunks, in groups of N micro-batches per chunk (N: --microbatch-
//      group-size-per-virtual-pipeline-stage, default p; get_schedule_table
//      makes the last group the m % N left over), at most m * v), which at
//      N = p reproduces Korthikanti's interleaving factor
//      1 + (p - 1) / (p * v).
// [PA] Megatron-LM megatron/core/optimizer/optimizer_config.py and
//      distrib_optimizer.py (precision-aware optimizer: main_grads_dtype,
//      main_params_dtype, exp_avg(_sq)_dtype; store_param_remainders keeps
//      an int16 remainder as the master of a bf16 weight) and
//      optimizer/cpu_offloading/hybrid_optimizer.py (the first
//      offload_fraction of the rank's parameters have their fp32 copies and
//      Adam states in host memory).
// [TE] TransformerEngine docs, "Performance considerations: handling
//      transposes" (fp8 tensors in rowwise and columnwise usages; MXFP8 one
//      E8M0 scale per 32 elements) and its Linear / LayerNormLinear modules,
//      which save the fp8-quantized GEMM input for backward.
// [G]  Gemma Team 2024, "Gemma 2: Improving Open Language Models at a
//      Practical Size", section 2 (RMSNorm on the input and the output of
//      each sub-layer; logit soft-capping) and transformers'
//      modeling_gemma2.py / modeling_gemma3.py, which build them.
// [DL] Megatron-LM's GPT data path: pretrain_gpt.py get_batch and
//      megatron/core/utils.py get_batch_on_this_tp_rank (with
//      create_attention_mask_in_dataloader, Megatron's default, every
//      tensor-parallel rank of the first and last stages receives a
//      b x 1 x s x s bool mask), _get_batch_on_this_cp_rank_per_sequence_
//      balancing (context parallelism keeps s/c of its rows), and
//      tensor_parallel/random.py CheckpointFunction, which saves its
//      arguments, the mask among them, for backward.
// [DW] Megatron-LM --defer-embedding-wgrad-compute / --wgrad-deferral-limit
//      (core/model_parallel_config.py; models/gpt/gpt_model.py gives the
//      output layer embedding_activation_buffer and grad_output_buffer;
//      tensor_parallel/layers.py ColumnParallelLinear.forward appends
//      input_parallel, LinearWithGradAccumulationAndAsyncCommunication.
//      backward appends grad_output instead of computing the weight
//      gradient; pipeline_parallel/schedules.py finish_embedding_wgrad_
//      compute drains both at the flush).
// [UA] Megatron-LM's unfused core attention (transformer/dot_product_
//      attention.py DotProductAttention, the local spec's and
//      --attention-backend local's; TransformerEngine's, --attention-
//      backend unfused's, the same but for its softmax [TS]): with query
//      groups it expands K and V to the a query heads (repeat_interleave)
//      before baddbmm and bmm, which save the expanded copies for
//      backward; fusions/
//      fused_softmax.py forward_torch_softmax, given no mask, builds a new
//      s x s bool causal mask a call (transformer/utils.py get_default_
//      causal_mask, not cached) and attention_mask_func's masked_fill_
//      keeps it. attention.py get_query_key_value_tensors splits the QKV
//      GEMM's output into views (torch.split); RoPE makes new Q and K, V
//      stays a view. Measured in the session-7 census of real steps
//      (bench/gpu/results/h100_megatron_step.jsonl: 16 [s, a, d] expanded
//      K and V and 8 [s, s] bool masks in 8 layers; under selective
//      recomputation the QKV output's storage, 2(a + 2k)d a token, beside
//      the rotated Q and K). Megatron's own (ATTENTION_KERNEL_LOCAL)
//      writes each layer's scores beside one b x a/t x s x s buffer
//      (parallel_state.get_global_memory_buffer, matmul_input_buffer),
//      held for the run: outside the stage's total, in the 20% headroom,
//      which the measured local steps show holds it (tests/measured_steps_
//      test.cc: the four jobs admitted at the edge ran; counted, two would
//      be refused), and beside the stage and its transients where those
//      must fit in what a process can allocate (StageFigures::score_
//      buffer_bytes: the measured steps whose loss transient ran past the
//      headroom peaked with it). It
//      runs fusions/fused_softmax.py
//      FusedScaleMaskSoftmax: its kernel takes 16-bit scores with 16 < s
//      <= 4096, s a multiple of 4 and b x a/t a multiple of 4 (8 up to s =
//      128: get_batch_per_block); otherwise torch's softmax, in fp32 only
//      with --attention-softmax-in-fp32 (off by default), whose fp32
//      output is then kept beside the 16-bit probabilities as in [TS].
// [TS] TransformerEngine's unfused attention (attention/dot_product_
//      attention/backends.py UnfusedDotProductAttention, what its auto
//      backend falls back to) runs softmax.py FusedScaleMaskSoftmax with
//      softmax_in_fp32 on: its fused kernel takes 16-bit scores with 16 <
//      s < 16384, s a multiple of 8 and b x a/t a multiple of 4
//      (is_kernel_available), unless NVTE_MASKED_SOFTMAX_FUSION=0 turns
//      it off (TrainingConfig.te_masked_softmax_fusion_disabled);
//      otherwise forward_torch_softmax casts the scores to fp32, and
//      torch's softmax keeps its fp32 output beside the 16-bit
//      probabilities the next GEMM (or dropout's output) keeps: 4 bytes a
//      score more without dropout, 2 with it.
// [GA] Gemma 2's attention logit soft-capping under Megatron-Bridge
//      (models/gemma/gemma2_provider.py Gemma2DotProductAttention, NeMo's
//      before it; TransformerEngine's attention takes no soft-cap): the
//      unfused attention of [UA] with K and V expanded, its baddbmm writing
//      the scores beside Megatron's global memory buffer (left to the
//      headroom as [UA]'s), logit_softcapping's tanh keeping its output, and
//      Megatron's fusions/fused_softmax.py FusedScaleMaskSoftmax with
//      TransformerConfig's attention_softmax_in_fp32 (on): its kernel takes
//      16-bit scores with 16 < s <= 4096, s a multiple of 4 and b x a/t a
//      multiple of 4 (8 for s <= 128: get_batch_per_block), else torch's
//      fp32 softmax keeps its output as in [TS]. Sliding-window layers
//      build their own s x s bool mask (get_swa), which masked_fill_ keeps
//      whether or not the dataloader sends one: counted a layer. Recent
//      Megatron-Bridge (models/gemma/modeling_gemma2.py Gemma2Flex-
//      DotProductAttention) runs torch's flex_attention instead where no
//      mask comes and attention dropout is off (ATTENTION_KERNEL_FLASH):
//      no scores, but the kernel's output (b, a/t, s, d), which its
//      backward keeps with its fp32 logsumexp, is permuted into a
//      contiguous copy for the output projection: the output twice.
// [MF] Megatron-LM docs/user-guide/features/megatron_fsdp.md: ZeRO-1/2/3
//      sharding over the data-parallel ranks; "at least two FSDP units
//      worth of un-sharded weight memory" and of gradient memory.
// [MFC] Megatron-LM megatron/core/distributed/fsdp/src/megatron_fsdp/
//      megatron_fsdp.py (core 0.14 on): without --suggested-communication-
//      unit-size the unit C is 2 x the average FSDP unit (ZeRO-3) or the
//      DDP bucket (max(4e7, 1e6 x DP x CP), training.py), raised to at
//      least 10^9 parameters; the reduce-scatter queue holds C and
//      all-gathers prefetch C / 2. param_and_grad_buffer.py: GradReduce-
//      Pipeline.wait_for_previous_grad_reduce frees a bucket's un-sharded
//      gradients only when the queue exceeds C, AllGatherPipeline.
//      all_gather_params prefetches buckets until C / 2 is reached, and
//      --fsdp-double-buffer stops both at two FSDP units.
// [F8L] Megatron-LM --first-last-layers-bf16 (core/fp8_utils.py
//      is_first_last_bf16_layer, get_fp8_context: the model's first
//      --num-layers-at-start-in-bf16 and last --num-layers-at-end-in-bf16
//      transformer layers, by global index, run without fp8_autocast, so
//      their GEMMs save 16-bit inputs; transformer_config.py: each count at
//      most L / p, not with the delayed recipe). Their fp8 weight copies
//      are still counted (TE makes none outside fp8_autocast: an over-
//      count); where a bf16 layer keeps less than its fp8 count, the fp8
//      count stands (an upper bound). With --tp-comm-overlap TE 2.7 on
//      makes a second, unquantized set of userbuffers (training/
//      initialize.py quantization_modes; TE module/base.py initialize_ub,
//      one communicator per name and mode).
// [RSA] Megatron-LM --ddp-reduce-scatter-with-fp32-accumulation: core/
//      distributed/reduce_scatter_with_fp32_accumulation.py (an all-to-all
//      into torch.empty_like(bucket), kept by the work handle until
//      .wait(), then an fp32 sum of one shard); param_and_grad_buffer.py
//      (register_grad_ready starts a bucket's sync only on the last micro-
//      batch; before core 0.18 every handle waits at the step's end, from
//      0.18 a bucket drains its predecessor; distributed_data_parallel.py
//      gives stages after the first one bucket, the whole buffer);
//      training/arguments.py turns it off under accumulate_allreduce_
//      grads_in_fp32.
// [DO] Megatron-LM's partial distributed optimizer,
//      --num-distributed-optimizer-instances N: core/parallel_state.py
//      (intra_partial_data_parallel_size = d*c / N, asserted to divide;
//      the expert-data-parallel group likewise), core/optimizer/
//      __init__.py (the optimizer's data_parallel_group is the intra-
//      instance group, intra_expt_dp_group for experts from core 0.13: in
//      0.12 experts shard over the whole group, which this over-counts) and
//      distributed/distributed_data_parallel.py (the gradient buffers are
//      reduce-scattered within an instance and all-reduced across them:
//      same size; 'Partial DistOpt cannot be used without DistOpt').
// [CPX] TransformerEngine pytorch/attention/dot_product_attention/
//      context_parallel.py, by Megatron's --cp-comm-type (transformer_
//      config.py cp_comm_type; TEDotProductAttention passes it on):
//      AttnFuncWithCPAndKVP2P (p2p; a2a+p2p with an all-to-all first),
//      AttnFuncWithCPAndKVAllGather (all_gather), AttnFuncWithCPAndQKVOA2A
//      (a2a): what each saves for backward and allocates in it.
// [UB] TransformerEngine's userbuffers under Megatron's --tp-comm-overlap
//      (training/initialize.py _initialize_tp_communicators, TE
//      pytorch/module/base.py initialize_ub): te_userbuffers.h.
// [OS] The optimizer step. Megatron-LM core/optimizer/optimizer.py
//      (Float16OptimizerWithFloat16Params._copy_model_grads_to_main_grads:
//      `main_param.grad = model_param.main_grad.float()`) and
//      distrib_optimizer.py (`shard_main_param.grad =
//      shard_model_grad.float()`, unless use_precision_aware_optimizer_
//      no_fp8_or_ds_fp8 hands the buffer over as decoupled_grad;
//      Megatron-FSDP returns first): a 16-bit gradient buffer gets an fp32
//      copy of the optimizer's share at the step, after the last backward;
//      zero_grad(set_to_none=True), which training.py train_step calls
//      before the next forward, frees it (an evaluation, training.py
//      evaluate, runs between: its no-grad forward beside the copies).
//      fp16's gradient buffer too (Megatron accumulates in fp32 for bf16
//      only): [MD] counts its copy among the optimizer states (4 + 16/d
//      bytes a parameter), but measured it lives through the step only
//      (bench/RESULTS.md session 33: after_step 4 B a parameter above the
//      states, none between steps), so it is the step's here. Lion, which
//      core/optimizer/__init__.py builds from emerging_optimizers
//      (scalar_optimizers/base.py step,
//      update_functions/lion.py): one fp32 exp_avg a parameter
//      (zeros_like the main parameter), and at the step, parameter by
//      parameter, exp_avg.lerp(grad) and its sign: two fp32 tensors of one
//      parameter (torch.compile may fuse them to one) beside the states.
//      From core 0.18.0 on Lion runs as an emerging optimizer
//      (get_megatron_optimizer -> _get_megatron_emerging_optimizer), whose
//      registry entry (emerging_optimizers.py _default_param_overrides_
//      factory) hands the parameters that are not matrices, and the word
//      embeddings and LM head, to Adam (m and v, 8 B; FusedAdam's step in
//      place): megatron_release.h LionScalarOptimizerOf.
// [EV] An evaluation: Megatron-LM training.py evaluate() (every
//      --eval-interval iterations and after training, unless --eval-iters
//      0) runs forward_backward_func forward-only under torch.no_grad() at
//      --eval-micro-batch-size (training/config/training_config.py: "affects
//      per-device memory usage during eval"), beside the model states and
//      the step's fp32 gradient copies [OS]. A no-grad forward keeps no
//      layer's tensors past the next: bounded by every layer's input, one
//      layer's stored activations and the LM head's at that micro-batch,
//      what full recomputation of one layer a group stores for one
//      micro-batch.
// [BP] Megatron-LM's distributed-optimizer buffer layout (d98e8a6):
//      core/optimizer/distrib_optimizer.py _compute_per_buffer_param_layout
//      (parameters in backprop order, each start aligned to 64 elements; a
//      bucket closed once it holds bucket_size elements, a shared embedding
//      in a bucket of its own; each bucket's end padded), core/optimizer/
//      param_layout.py (pad_param_start; bucket_end_divisor lcm(DP, 128),
//      with 2^16 under pad_buckets_for_high_nccl_busbw), core/distributed/
//      param_and_grad_buffer.py (the gradient and parameter buffers share
//      the layout; no padding without the distributed optimizer) and
//      training/training.py (resolve_ddp_bucket_size; only the first
//      pipeline rank's first model chunk is bucketed).
// [DS] TransformerEngine's delayed scaling (d0067d0): pytorch/
//      quantization.py DelayedScalingRecipeState (an fp32 amax_history of
//      amax_history_len x quantizers and a scale, for the run; the fused
//      update works in place) and FP8GlobalStateManager.
//      copy_forward_fp8_meta_tensors_for_recompute (a clone of the forward
//      history and scale at a recomputed module's first forward, popped at
//      its recompute); module/base.py (num_gemms x 3 forward, x 2 backward
//      quantizers). Megatron-LM hands it --fp8-amax-history-len
//      (transformer_config.py fp8_amax_history_len, default 1;
//      extensions/transformer_engine.py TEDelayedScaling).
// [MU] Muon (Megatron --optimizer muon, without the distributed
//      optimizer): core/optimizer/__init__.py _get_megatron_emerging_
//      optimizer (the matrices to TensorParallelMuon, one fp32
//      momentum_buffer each, emerging_optimizers orthogonalized_
//      optimizer.py _init_group; the rest to --muon-scalar-optimizer),
//      both under Float16OptimizerWithFloat16Params (fp32 masters); the
//      step's Newton-Schulz copies: muon_terms.cc.
// [LW] Lion and Muon with the distributed optimizer, from core 0.18.0:
//      Megatron's layer-wise distributed optimizer (arguments.py turns
//      --use-distributed-optimizer into it; core/optimizer/
//      layer_wise_optimizer.py LayerWiseDistributedOptimizer): each matrix
//      whole on one data-parallel rank, which keeps its master and
//      momentum; the matrices' weights and gradients in DDP buffers padded
//      to DP x a bucket's fullest shard on every rank
//      (layer_wise_layout.cc, the packing; layer_wise_terms.cc, a stage's
//      matrices); the rest in the plain distributed optimizer ([BP]).

namespace memgate {
namespace {

// ---- Bytes per parameter [P 3.1.1, MD, PA] -------------------------------

double WeightBytesPerParameter(v1::Precision precision) {
  return precision == v1::PRECISION_FP32 ? 4 : 2;
}

// The gradient buffer of a job without the precision-aware optimizer:
// bf16 gradients with --grad-reduce-in-bf16, fp16 with fp16 training, else
// fp32 (bf16 forces fp32 accumulation in Megatron).
double BufferBytesPerParameter(v1::Precision precision) {
  switch (precision) {
    case v1::PRECISION_BF16_BF16_GRADS:
    case v1::PRECISION_FP16:
      return 2;
    default:
      return 4;
  }
}

// The gradient buffer; under the precision-aware optimizer its
// --main-grads-dtype [PA] (GradientBytesPerParameter of the job).
double LayoutGradientBytes(const Layout& l) {
  return l.precision_aware ? l.main_grad_bytes
                           : BufferBytesPerParameter(l.precision);
}

// Megatron's DDP accumulates the gradients of the parameters matched by
// --ddp-param-name-patterns-for-fp32-local-accumulation in an fp32 tensor
// each, beside their 16-bit slice of the buffer (param_and_grad_buffer.py,
// core 0.17 on: `param.main_grad = torch.empty_like(param.main_grad,
// dtype=torch.float32)`, kept in extra_main_grads for the step): 4 bytes
// a parameter more, not sharded (TrainingConfig.fp32_local_grad_accumulation).
double LocalAccumulationBytesPerParameter(const Layout& l) {
  return l.fp32_local_grads ? 4 : 0;
}

// Optimizer states, before sharding: an fp32 master copy of low-precision
// weights (4 B) (fp16's fp32 gradient copy, which [MD] counts here, is the
// step's [OS]), and the optimizer's own state: Adam's m and v (8 B), SGD's
// momentum (4 B, none without momentum), Lion's momentum (4 B) [OS]. The
// precision-aware optimizer stores the master weight and m, v in their
// chosen dtypes [PA].
double OptimizerBytesPerParameter(const Layout& l) {
  if (l.precision_aware) {
    return l.master_bytes + l.exp_avg_bytes + l.exp_avg_sq_bytes;
  }
  double bytes = 0;
  if (l.precision != v1::PRECISION_FP32) bytes += 4;
  switch (l.optimizer) {
    case v1::OPTIMIZER_SGD:
      return bytes + (l.sgd_momentum > 0 ? 4 : 0);
    case v1::OPTIMIZER_LION:
    case v1::OPTIMIZER_MUON:  // the matrices' momentum [MU]
      return bytes + 4;
    default:
      return bytes + 8;
  }
}

// [OS] The fp32 copies of a 16-bit gradient buffer (bf16 or fp16) the
// step makes, of a stage whose optimizer holds `optimizer_parameters`, and
// Lion's update, of a stage whose largest parameter is at most
// `largest_parameter`.
double Fp32GradientCopyBytes(const Layout& l, double optimizer_parameters) {
  const bool copied = l.sharding == FsdpSharding::kNone &&
                      !l.decoupled_grads && LayoutGradientBytes(l) < 4;
  return copied ? 4 * optimizer_parameters : 0;
}
double LionUpdateBytes(const Layout& l, double largest_parameter) {
  return l.optimizer == v1::OPTIMIZER_LION ? 2 * 4 * largest_parameter : 0;
}

// Bytes a parameter that is not a matrix (or is the word embedding or LM
// head) keeps beyond OptimizerBytesPerParameter: Adam's second moment
// where Lion [OS] or Muon [MU] hands it to Adam.
double ScalarAdamBytes(const Layout& l) {
  switch (l.optimizer) {
    case v1::OPTIMIZER_LION:
      return l.lion_scalars != LionScalarOptimizer::kLion ? 4 : 0;
    case v1::OPTIMIZER_MUON:
      return l.muon_scalar_lion ? 0 : 4;
    default:
      return 0;
  }
}

// fp8 copies of the linear layers' weights [TE]: TransformerEngine keeps
// each fp8 weight in two usages, rowwise for fprop and columnwise (the
// transpose, on Hopper) for dgrad, cached for the whole step: 2 B a
// weight beside the bf16 one. With --fp8-param-gather the fp8 pair
// replaces the bf16 weight (2 B instead of 2 B: nothing added).
double Fp8WeightCopyBytesPerParameter(const Layout& l) {
  if (!l.fp8) return 0;
  return l.fp8_param_gather ? 2 * l.fp8_weight_scale_bytes
                            : 2 * (1 + l.fp8_weight_scale_bytes);
}

// Bytes of one activation element: 2 in bf16/fp16, 4 in fp32 training.
// The paper's coefficients count 2-byte elements; dropout masks are 1 byte
// whatever the precision [K 4.1].
double ActivationElementScale(const Layout& l) {
  return l.precision == v1::PRECISION_FP32 ? 2 : 1;
}

// ---- Parameters -----------------------------------------------------------

double KeyValueWidth(const ModelShape& m) { return m.kv_heads * HeadDim(m); }

double NormParameters(const ModelShape& m) {
  return m.layernorm ? 2 * m.hidden : m.hidden;  // weight (+ bias)
}

// One transformer layer on one tensor-parallel rank [P eq. 2]: attention
// 2h*d*(a + k) (Q, K, V, output) and the MLP (SwiGLU 3*h*h_ffn, GeLU
// 2*h*h_ffn) split over t; the two norms replicated. Biases: the QKV and
// first MLP projections are column-parallel (split over t), the output
// and second MLP projections are row-parallel with a replicated bias.
double LayerParameters(const ModelShape& m, const Layout& l,
                       bool moe = false) {
  const double h = m.hidden;
  const double qkv_out = QueryWidth(m) + 2 * KeyValueWidth(m);
  const double attention = m.mla ? 0 : h * qkv_out + QueryWidth(m) * h;
  // An MoE layer's MLP is its shared experts, router and routed experts
  // (moe_terms.cc; the routed ones are counted apart: other sharding).
  const double mlp = moe ? 0 : Gated(m) * h * m.ffn_hidden;
  double split = attention + mlp;
  // Two norms a layer; Gemma 2/3's sandwich norms add two after attention
  // and the MLP [G].
  double replicated = (m.sandwich_norms ? 4 : 2) * NormParameters(m);
  // One norm of size d each for Q and K, shared by heads; MLA's are on its
  // latents (MlaParameters); L2Norm has no weights.
  if (m.qk_norm && !m.qk_l2_norm && !m.mla) {
    replicated += 2 * HeadDim(m) * (m.layernorm ? 2 : 1);
  }
  if (m.linear_bias) {
    // QKV's bias and the output projection's; a dense MLP's FC1 bias
    // (split) and FC2's. An MoE layer's router and experts carry their
    // own (moe_terms.cc [EB]).
    split += qkv_out + (moe ? 0 : (Gated(m) - 1) * m.ffn_hidden);
    replicated += moe ? h : 2 * h;
  } else if (m.qkv_bias) {
    split += qkv_out;
  }
  // A learnable softmax's sink: one logit a head (transformer_engine.py
  // softmax_offset, the heads split over TP).
  if (m.learnable_softmax) split += m.heads;
  return split / l.tensor + replicated + (m.mla ? MlaParameters(m, l) : 0) +
         (moe ? MoeDenseParameters(m, l) : 0);
}

// The weights a layer's GEMMs hold on one rank (no biases, norms or
// router): what TransformerEngine runs in fp8 [TE]. Attention's four (or
// MLA's five: down and up projections, output); a dense MLP's, or an MoE
// layer's shared experts and the rank's routed experts.
double LinearWeightParameters(const ModelShape& m, const Layout& l,
                              bool moe) {
  const double h = m.hidden;
  const double attention =
      m.mla ? MlaLinearParameters(m, l)
            : (h * (QueryWidth(m) + 2 * KeyValueWidth(m)) + QueryWidth(m) * h) /
                  l.tensor;
  if (moe) {
    return attention + Gated(m) * h * m.shared_ffn / l.tensor +
           RoutedExpertParameters(m, l);
  }
  return attention + Gated(m) * h * m.ffn_hidden / l.tensor;
}

// The GEMMs of a layer, each with a weight tensor of its own. Megatron's
// TE spec (gpt_layer_specs.py) runs them one module each: QKV and the
// output projection (MLA: q's projection or its down and up ones unless
// fused with kv's down one, kv's down and up, the output), a dense MLP's
// or the shared experts' FC1 and FC2, and the routed experts' FC1 and
// FC2 as grouped modules of one GEMM a local expert (GroupedLinear
// num_gemms; SequentialMLP's modules hold as many). [DS] Under delayed
// scaling TransformerEngine (quantization.py DelayedScalingRecipeState,
// d0067d0) keeps in every fp8 module, for each of its quantizers, 3
// forward and 2 backward a GEMM (module/base.py: num_gemms * 3,
// num_gemms * 2), an fp32 amax history of Fp8.amax_history_len rows and
// a scale, for the run; the router and the LM head do not run in fp8
// under this recipe. [BP] Each weight is one of the large tensors the
// distributed optimizer's buckets close at.
double AttentionGemms(const ModelShape& m) {
  if (!m.mla) return 2;
  return m.q_lora > 0 && !m.mla_fused_down_projection ? 5 : 4;
}
double SharedExpertGemms(const ModelShape& m) {
  return m.shared_ffn > 0 ? 2 : 0;
}
double RoutedExpertGemms(const ModelShape& m, const Layout& l) {
  return 2 * m.experts / l.expert_parallel;
}
double GemmsInLayer(const ModelShape& m, const Layout& l, bool moe) {
  return AttentionGemms(m) +
         (moe ? SharedExpertGemms(m) + RoutedExpertGemms(m, l) : 2);
}

// [DS] The GEMMs whose forward runs again under recomputation: TE's
// checkpoint (te_checkpoint) and Megatron's CheckpointWithoutOutput with
// fp8 copy each such module's forward history and scales when the first
// forward runs, for its backward (quantization.py
// copy_forward_fp8_meta_tensors_for_recompute). A whole layer's under full
// recomputation; under selective, the modules selected (core attention,
// the norms and the experts' activation run no fp8 GEMM; "mlp" is a dense
// layer's, "moe" the shared and routed experts).
double Fp8RecomputedGemmsInLayer(const ModelShape& m, const Layout& l,
                                 bool moe) {
  switch (l.recompute) {
    case RecomputeKind::kFullUniform:
    case RecomputeKind::kFullBlock:
      return GemmsInLayer(m, l, moe);
    case RecomputeKind::kSelective: {
      const double up_proj = l.recompute_mla_up_proj && m.mla ? 2 : 0;
      if (!moe) return up_proj + (l.recompute_mlp ? 2 : 0);
      if (l.recompute_moe) {
        return up_proj + SharedExpertGemms(m) + RoutedExpertGemms(m, l);
      }
      return up_proj + (l.recompute_shared_experts ? SharedExpertGemms(m) : 0);
    }
    default:
      return 0;
  }
}

// Bytes of one quantizer's history and scale [DS].
double DelayedScalingQuantizerBytes(const Layout& l) {
  return 4 * (l.fp8_amax_history + 1);
}

// ---- Activations of one transformer layer, one micro-batch ----------------

double LocalTokens(const Layout& l) {  // s*b on this context-parallel rank
  return l.seq_length * l.micro_batch / l.context;
}

// Widths of a token's keys, values and attention output over all heads
// (MLA: every head has its own key of d_nope + d_rope and value of d_v).
double KeyWidth(const ModelShape& m) {
  return m.mla ? m.heads * (m.qk_nope + m.qk_rope) : KeyValueWidth(m);
}
double ValueWidth(const ModelShape& m) {
  return m.mla ? m.heads * m.v_head : KeyValueWidth(m);
}
double AttentionOutputWidth(const ModelShape& m) {
  return m.mla ? m.heads * m.v_head : QueryWidth(m);
}

// The s x s scores of a layer's a/t heads, one micro-batch, over the whole
// sequence (unfused attention has no CP: validated).
double AttentionScores(const ModelShape& m, const Layout& l) {
  return m.heads / l.tensor * l.seq_length * l.seq_length * l.micro_batch;
}

// [CPX] The all-to-all exchanges (a2a, and a2a+p2p with an inner level of
// 2 or more) keep the attention output twice: the kernel's, heads
// scattered and the whole sequence (out_part, saved for the attention's
// backward), and the one the all-to-all back returns, the rank's tokens
// and all its heads (the output projection's saved input). p2p and
// all_gather save the tensor they return: once, as counted. Recomputing
// core attention stores the checkpoint's un-exchanged Q, K, V instead of
// the kernel's, and no kernel output.
bool KeepsAttentionOutputTwice(const Layout& l) {
  return ContextParallelAllToAll(l) &&
         !(l.recompute == RecomputeKind::kSelective && l.recompute_core_attn);
}

// [GA] Soft-capped scores under Megatron-Bridge's FlexAttention: the
// kernel's output beside the projection's copy, and its fp32 logsumexp (a
// head a token). Recomputing core attention keeps neither (its
// checkpoint saves Q, K and V).
double FlexAttentionKeeps(const ModelShape& m, const Layout& l) {
  if (!m.attention_softcapping || l.unfused_attention ||
      (l.recompute == RecomputeKind::kSelective && l.recompute_core_attn)) {
    return 0;
  }
  const double sb = LocalTokens(l);
  return sb * (2 * ActivationElementScale(l) * AttentionOutputWidth(m) +
               4 * m.heads) /
         l.tensor;
}

// What a layer stores for backward, in bytes [P 3.2, K 4]. In units of
// sbh (2-byte elements): the norm inputs (2 + 2), the attention input and
// the MLP input (2 + 2), which sequence parallelism splits over t and
// which are otherwise replicated on every tensor-parallel rank; and, split
// over t by the heads and the MLP's columns: Q and the attention output
// (2 + 2) x a*d/h, K and V 4*k*d/h, the SwiGLU MLP 8*h_ffn/h (up, gate,
// activation, down input) or GeLU's 4*h_ffn/h [K: 8sbh + 8sbh at 4h].
// With d = h/a this is the paper's sbh(12 + 4k/a + 8h_ffn/h). A norm on
// Q and K (QK-norm) stores their inputs too, 2 x (a*d + k*d).
// Dropout keeps a 1-byte mask after attention and after the MLP [K: sbh
// each]. Without FlashAttention the softmax output is stored, 2as^2b, and
// with attention dropout its mask and output, 3as^2b more [K eq. 1:
// 5as^2b]; selective recomputation of core attention drops them [K 5].
double LayerActivationsFull(const ModelShape& m, const Layout& l,
                            bool moe = false) {
  const double e = ActivationElementScale(l);
  const double sb = LocalTokens(l);
  const double sbh = sb * m.hidden;
  // Sandwich norms store their inputs too: 2 x 2sbh [G]. Recomputing
  // "layernorm" discards a norm's output (output-discarding checkpoint,
  // transformer_layer.py) unless the norm is fused into the next linear
  // layer (IdentityOp); TransformerEngine fuses the input norm into QKV
  // and a dense MLP's norm into FC1, never an MoE layer's pre-MLP norm
  // (router and dispatcher read it): 2sbh less there. [LN] Megatron's
  // local layer spec fuses none (torch norms, gpt_layer_specs.py
  // get_gpt_layer_local_submodules): both norms' outputs are dropped, 4sbh
  // (measured on an H100, session 32). Not credited under fp8, whose norm
  // outputs are counted apart below.
  const double norms_dropped =
      !l.recompute_layernorm || l.fp8 ? 0
      : l.local_layer_spec            ? 2
      : moe                           ? 1
                                      : 0;
  const double hidden_sized = (m.sandwich_norms ? 12 : 8) * e +
                              (l.hidden_dropout > 0 ? 2 : 0) -
                              norms_dropped * 2 * e;
  double width = m.mla ? 0
                       : 2 * QueryWidth(m) + 2 * QueryWidth(m) +
                             4 * KeyValueWidth(m);
  // [QN] QK-norm stores the inputs of its two norms: Q and K once more
  // (Q is a copy: attention.py get_query_key_value_tensors reshapes the
  // query's split view; TransformerEngine's norm copies K's view into a
  // contiguous input). torch's norms (the local layer spec) and Megatron's
  // L2Norm (torch_norm.py, under either spec) save K as the view the split
  // made, which keeps the whole QKV output alive: Q + 2K in place of K.
  // Measured on an H100 (session 33): 40 MiB a layer for 16 MiB of Q and
  // 4 MiB of K. (With one query group a rank the query's reshape is a view
  // and needs no copy: an upper bound there. Validation keeps the groups a
  // multiple of TP, so the QKV output is never the all-gathered one.)
  // (MLA's latent norms: MlaActivations.)
  // Each norm also keeps its reciprocal RMS in fp32, one a head a token
  // (torch's rms_norm, TransformerEngine's rsigma, L2Norm's rsqrt): 4 B x
  // (a + k) a token, measured to the byte (2.5 MiB over 8 layers of 16 + 4
  // heads, session 35's look at session 33's census).
  double qk_norm_statistics = 0;
  if (m.qk_norm && !m.mla) {
    const bool keeps_qkv_output = m.qk_l2_norm || l.local_layer_spec;
    width += 2 * QueryWidth(m) +
             (keeps_qkv_output ? 2 * QueryWidth(m) + 4 * KeyValueWidth(m)
                               : 2 * KeyValueWidth(m));
    qk_norm_statistics = 4 * sb * (m.heads + m.kv_heads) / l.tensor;
  }
  double bytes = e * sb * width / l.tensor + qk_norm_statistics +
                 UnfusedRopeTables(m, l);
  // Selective recomputation of "mlp" keeps only the MLP's input [MT].
  if (!moe && !l.recompute_mlp) {
    bytes += sb * DenseMlpBytes(m, l) * m.ffn_hidden / l.tensor;
  }
  if (m.mla) bytes += MlaActivations(m, l);
  if (KeepsAttentionOutputTwice(l)) {
    bytes += e * sb * 2 * AttentionOutputWidth(m) / l.tensor;
  }
  bytes += FlexAttentionKeeps(m, l);
  if (moe) bytes += MoeMlpActivations(m, l);
  bytes += l.sequence_parallel ? sbh * hidden_sized / l.tensor
                               : sbh * hidden_sized;
  if (l.fp8) {
    // [TE] GEMMs save their inputs quantized, f8 bytes an element: QKV its
    // input (the input norm's output) in place of the 16-bit one; MLA's
    // down projections of Q and KV (unfused from the norm: TENorm, then
    // two TELinear) one fp8 copy each. A dense MLP's first GEMM its input
    // and its second the activation's output (sb*h_ffn), unless the MLP
    // is recomputed (its checkpoint keeps the 16-bit input). An MoE
    // layer's router keeps the 16-bit MLP input; its experts:
    // MoeMlpActivations. The output projection saves an fp8 copy of the
    // attention output beside the 2-byte one FlashAttention keeps (MLA's:
    // MlaActivations).
    const double f8 = Fp8ElementBytes(l);
    double norm_outputs = m.mla ? 2 * f8 - 2 : f8 - 2;
    double per_token = m.mla ? 0 : f8 * QueryWidth(m);
    if (!moe && !l.recompute_mlp) {
      norm_outputs += f8 - 2;
      per_token += (f8 - 2) * m.ffn_hidden;
    }
    bytes += (l.sequence_parallel ? sbh / l.tensor : sbh) * norm_outputs;
    bytes += per_token * sb / l.tensor;
  }
  const UnfusedAttentionKept kept = UnfusedAttentionKeeps(m, l);
  if (kept.qkv_output) {
    // Its Q and K parts, beside the (rotated) Q and K counted above.
    bytes += e * sb * 2 * (QueryWidth(m) + KeyValueWidth(m)) / l.tensor;
  }
  if (kept.scores) {
    // [SK] Attention sinks: Megatron's SoftmaxOne (fused_softmax.py) and
    // TransformerEngine's UnfusedDotProductAttention (backends.py) append
    // the sink as a column of scores, and the softmax output, s + 1 wide,
    // stays whole under the probabilities (a view without the column).
    // Measured on an H100 (session 35): 1 MiB more in 8 layers of 16
    // heads at 4k, one column a layer. Every score term is taken s + 1
    // wide (what comes after the softmax is s wide: an upper bound by a
    // column).
    const double sink_column =
        m.attention_sinks ? (l.seq_length + 1.0) / l.seq_length : 1;
    const double scores = AttentionScores(m, l) * sink_column;
    bytes += scores * 2 * e;                                // softmax out
    if (l.attention_dropout > 0) bytes += scores * (1 + 2 * e);  // mask, out
    // [TS] the fp32 softmax output beside the 16-bit probabilities.
    if (kept.fp32_softmax) bytes += scores * (l.attention_dropout > 0 ? 2 : 4);
    if (kept.capped_scores) bytes += scores * 2 * e;  // [GA] tanh's output
  }
  if (kept.expanded_kv) {
    // a - k heads more than the 4kd counted above.
    bytes += e * sb * 4 * (m.heads - m.kv_heads) * HeadDim(m) / l.tensor;
  }
  if (kept.causal_masks) bytes += l.seq_length * l.seq_length;
  return bytes;
}

}  // namespace

// [RU] Megatron's unfused RoPE (rope_utils.py _apply_rotary_pos_emb_bshd,
// run under --no-rope-fusion and always for YaRN and mRoPE): each call
// makes cos(freqs) and sin(freqs) in the activations' dtype, and the
// multiplies t * cos and rotate_half(t) * sin keep them for t's gradient
// (the tables need none). Q and K are rotated apart: four tables a layer
// of s/c x d_rot, whole on every TP rank (the positions are not split by
// heads), and independent of the micro-batch, the frequencies being
// [s, 1, 1, d], except mRoPE's, one a sample ([s, b, 1, d]). MLA rotates
// its d_rope part only, inside its up projections' checkpoint when
// "mla_up_proj" is recomputed (multi_latent_attention.py), which keeps no
// table. Measured on an H100 (session 33's census, read in session 35):
// 32 [s, 1, 1, d] bf16 tables over 8 layers, 1 MiB each at 4k, 32 MiB in
// all; mRoPE's at two samples a micro-batch and MLA's, with and without
// the recomputation, to the MiB (session 36). TE's fused RoPE (Megatron's
// default) saves only the frequencies, computed once for the whole model:
// nothing a layer.
double UnfusedRopeTables(const ModelShape& m, const Layout& l) {
  if (!m.rotary_positions) return 0;
  if (!m.rope_always_unfused && !l.rope_fusion_disabled) return 0;
  if (m.mla && l.recompute_mla_up_proj) return 0;
  const double rotary_width = m.mla ? m.qk_rope : HeadDim(m);
  return 4 * ActivationElementScale(l) * 2 * (l.seq_length / l.context) *
         rotary_width * (m.rope_per_sample ? l.micro_batch : 1);
}

UnfusedAttentionKept UnfusedAttentionKeeps(const ModelShape& m,
                                           const Layout& l) {
  UnfusedAttentionKept kept;
  if (!l.unfused_attention) return kept;
  // Selective recomputation of core attention keeps none of what it makes
  // [K 5]; its checkpoint saves Q, K and V as given.
  const bool recomputed =
      l.recompute == RecomputeKind::kSelective && l.recompute_core_attn;
  kept.scores = !recomputed;
  // [UA] the two GEMMs save K and V expanded to the a query heads (GQA;
  // MLA has k = a).
  const bool expanded = !m.mla && m.heads > m.kv_heads;
  kept.expanded_kv = !recomputed && expanded;
  // [UA] V reaches its savers as a view of the QKV GEMM's output: the
  // checkpoint saves it as given, and so does bmm when no expansion copies
  // it. That output then stays whole. (Without RoPE Q and K would be views
  // of it as well: an upper bound.)
  kept.qkv_output = !m.mla && (recomputed || !expanded);
  // [UA] with no mask from the dataloader, each layer's softmax builds an
  // s x s bool causal mask and masked_fill_ keeps it (an upper bound: the
  // fused kernel, where it applies, keeps none).
  kept.causal_masks = !recomputed && !l.dataloader_mask;
  const double s = l.seq_length;
  const double batches = l.micro_batch * (m.heads / l.tensor);
  bool fused_softmax = false;
  // Whether a softmax the kernel cannot take runs in fp32.
  bool fp32_fallback = true;
  if (m.attention_softcapping || l.local_attention) {
    // [UA] [GA] Megatron's FusedScaleMaskSoftmax: 16 < s <= 4096, s a
    // multiple of 4, b x a/t of the kernel's batches a block; otherwise in
    // fp32 only with attention_softmax_in_fp32 (Megatron's flag, off by
    // default; TransformerConfig's default, on, for Gemma 2's attention).
    fused_softmax = s > 16 && s <= 4096 && std::fmod(s, 4) == 0 &&
                    std::fmod(batches, s <= 128 ? 8 : 4) == 0;
    fp32_fallback = m.attention_softcapping || l.softmax_in_fp32;
    kept.scores_buffer = true;
  } else {
    // [TS] TransformerEngine's fused softmax kernel: 16-bit scores, 16 < s
    // < 16384, s a multiple of 8, b x a/t a multiple of 4; none with
    // NVTE_MASKED_SOFTMAX_FUSION=0.
    fused_softmax = !l.te_softmax_kernel_off && s > 16 && s < 16384 &&
                    std::fmod(s, 8) == 0 && std::fmod(batches, 4) == 0;
  }
  if (m.attention_softcapping) {
    kept.capped_scores = kept.scores;
    // get_swa's window mask, beside or instead of the dataloader's.
    kept.causal_masks = !recomputed;
  }
  kept.fp32_softmax = kept.scores && l.precision != v1::PRECISION_FP32 &&
                      !fused_softmax && fp32_fallback;
  return kept;
}

namespace {

// A layer under full recomputation stores only its input [K 5: 2sbh,
// split over t with sequence parallelism, or by Megatron's
// --distribute-saved-activations: tensor_parallel/random.py
// CheckpointFunction keeps its rank's 1/t chunk of the input].
double LayerInput(const ModelShape& m, const Layout& l) {
  const double sbh = LocalTokens(l) * m.hidden;
  const double bytes = 2 * ActivationElementScale(l) * sbh;
  return l.sequence_parallel || l.distribute_saved_inputs ? bytes / l.tensor
                                                           : bytes;
}

// Of a stage's layers, those an fp8 run keeps in bf16 [F8L]: the stage's
// count and, where the stage is given chunk by chunk, each chunk's. Kept
// apart from LayerMix so that the planner's inner loop, which has none,
// runs as before (a third field in every chunk cost it 9%).
struct Bf16Layers {
  double stage = 0;
  std::vector<double> chunks;  // empty: the stage's spread evenly
};

// One micro-batch's full activations of a dense and of an MoE layer
// (LayerActivationsFull): the same for every chunk of a stage, so a stage
// computes them once rather than once a chunk (the planner's inner loop).
struct FullLayers {
  double dense = 0;
  double moe = 0;  // 0 when the stage has no MoE layer
  // What a layer run in bf16 keeps beyond its fp8 count, the larger of
  // the stage's kinds (0 when it has no bf16 layer) [F8L].
  double bf16_extra = 0;
  // Under selective recomputation, what one dense and one MoE layer's
  // recomputed modules would have stored (RecomputeWorkingSet [SR]); 0
  // otherwise.
  double selective_dense = 0;
  double selective_moe = 0;
};

}  // namespace

bool HasBf16Layers(const Layout& l) {
  return l.fp8 && (l.bf16_first_layers > 0 || l.bf16_last_layers > 0);
}

namespace {

// Of layers [first, first + count), those the fp8 run keeps in bf16: the
// model's first bf16_first_layers and last bf16_last_layers [F8L].
double Bf16LayersIn(const ModelShape& m, const Layout& l, double first,
                    double count) {
  if (!l.fp8) return 0;
  const double end = first + count;
  auto overlap = [&](double lo, double hi) {
    return std::max(0.0, std::min(end, hi) - std::max(first, lo));
  };
  return overlap(0, l.bf16_first_layers) +
         overlap(m.layers - l.bf16_last_layers, m.layers);
}

// The same layout with no module recomputed.
Layout WithoutSelectiveRecompute(const Layout& l) {
  Layout plain = l;
  plain.recompute = RecomputeKind::kNone;
  plain.recompute_core_attn = false;
  plain.recompute_mlp = false;
  plain.recompute_moe = false;
  plain.recompute_moe_act = false;
  plain.recompute_layernorm = false;
  plain.recompute_shared_experts = false;
  plain.recompute_mla_up_proj = false;
  return plain;
}

// A layout and its kept layer figures (LayoutStages): one layer's
// activations of a kind are worked out the first time a stage asks.
struct LayerCache {
  const ModelShape& m;
  const Layout& l;
  LayoutLaneFigures& figures;

  // The first ask of a kind works its figures out (KindWorkedOut); the
  // others, most of the planner's, only read them.
  const LayerKindFigures& Kind(bool moe) {
    const LayerKindFigures& k = figures.kinds[moe ? 1 : 0];
    return k.known ? k : KindWorkedOut(moe);
  }

  [[gnu::noinline]] const LayerKindFigures& KindWorkedOut(bool moe) {
    LayerKindFigures& k = figures.kinds[moe ? 1 : 0];
    k.known = true;
    k.full = LayerActivationsFull(m, l, moe);
    if (HasBf16Layers(l)) {
      // [F8L] the same layer outside fp8: 16-bit GEMM inputs, no fp8 copy
      // of the attention output, no fp8 row padding of the experts.
      Layout bf16 = l;
      bf16.fp8 = false;
      k.bf16_extra =
          std::max(0.0, LayerActivationsFull(m, bf16, moe) - k.full);
    }
    if (l.recompute == RecomputeKind::kSelective) {
      k.selective = std::max(
          0.0, LayerActivationsFull(m, WithoutSelectiveRecompute(l), moe) -
                   k.full);
    }
    return k;
  }

  const LayerKindFigures& Parameters(bool moe) {
    LayerKindFigures& k = figures.kinds[moe ? 1 : 0];
    if (!k.parameters_known) {
      k.parameters_known = true;
      k.parameters = LayerParameters(m, l, moe);
      if (moe) k.routed_expert_parameters = RoutedExpertParameters(m, l);
    }
    return k;
  }

  double DispatchWorkingSet() {
    if (!figures.dispatch_known) {
      figures.dispatch_known = true;
      figures.dispatch_working_set = memgate::DispatchWorkingSet(m, l);
    }
    return figures.dispatch_working_set;
  }
};

FullLayers FullLayersOf(LayerCache& layers, const LayerMix& stage,
                        double stage_bf16) {
  // A kind the stage does not have is never read (StoredActivations and
  // RecomputeWorkingSet weigh it by its count, 0), except by the bf16
  // layers' extra, which takes the larger of both kinds: an all-MoE stage
  // (most of an MoE plan's) skips the dense layer's terms.
  FullLayers full;
  if (stage.dense > 0 || stage_bf16 > 0) {
    const LayerKindFigures& dense = layers.Kind(false);
    full.dense = dense.full;
    if (stage_bf16 > 0) full.bf16_extra = dense.bf16_extra;
    full.selective_dense = dense.selective;
  }
  if (stage.moe > 0) {
    const LayerKindFigures& moe = layers.Kind(true);
    full.moe = moe.full;
    if (stage_bf16 > 0) {
      full.bf16_extra = std::max(full.bf16_extra, moe.bf16_extra);
    }
    full.selective_moe = moe.selective;
  }
  return full;
}

// Per micro-batch in flight, the activations a mix of layers stores [MT]:
// all of them without full recomputation; with method uniform, the input
// of each group of N layers; with method block, the input of the first N
// layers and everything of the others, counted as the most expensive
// layers of the mix (an upper bound whatever order dense and MoE layers
// come in). `bf16` of the mix's layers run outside fp8 [F8L].
double StoredActivations(const ModelShape& m, const Layout& l,
                         const LayerMix& mix, const FullLayers& full,
                         double bf16 = 0) {
  const double dense = full.dense;
  const double moe = mix.moe > 0 ? full.moe : 0;
  const double layers = mix.total();
  switch (l.recompute) {
    case RecomputeKind::kFullUniform:
      return std::ceil(layers / l.recompute_layers) * LayerInput(m, l);
    case RecomputeKind::kFullBlock: {
      const double recomputed = std::min(l.recompute_layers, layers);
      const double kept = layers - recomputed;
      const bool moe_larger = moe > dense;
      const double kept_large = std::min(kept, moe_larger ? mix.moe : mix.dense);
      // The bf16 layers counted among the kept ones (an upper bound).
      return recomputed * LayerInput(m, l) +
             kept_large * std::max(moe, dense) +
             (kept - kept_large) * (moe_larger ? dense : moe) +
             std::min(bf16, kept) * full.bf16_extra;
    }
    default:
      return mix.dense * dense + mix.moe * moe + bf16 * full.bf16_extra;
  }
}

// While one micro-batch's backward recomputes, its recomputed layers hold
// their full activations again: a group of N layers (uniform) or one layer
// (block) [MT, K 5]. Counted once a stage, above what is stored.
// [SR] Selective recomputation likewise: Megatron runs each recomputed
// module's forward again at its layer's backward (transformer_layer.py:
// core attention and the MLP or MoE layer under tensor_parallel.checkpoint,
// whose backward recomputes, then backpropagates through, the module;
// the norms, MLA's up projections and the experts' activation under
// tensor_parallel/random.py CheckpointWithoutOutput, whose hook remakes
// the discarded output when the gradient reaches it), so that layer holds
// again what its modules did not store: one layer's, the larger of the
// stage's kinds, above what is stored. Summed over the modules (an upper
// bound: a layer's MLP is remade and released before its attention).
// Unfused attention's scores make it large; under FlashAttention core
// attention remakes about nothing (LayerActivationsFull keeps its output
// either way).
double RecomputeWorkingSet(const Layout& l, const LayerMix& mix,
                           const FullLayers& full, double bf16 = 0) {
  const double layers = mix.total();
  const double largest = std::max(mix.dense > 0 ? full.dense : 0,
                                  mix.moe > 0 ? full.moe : 0) +
                         (bf16 > 0 ? full.bf16_extra : 0);
  switch (l.recompute) {
    case RecomputeKind::kFullUniform:
      return std::min(l.recompute_layers, layers) * largest;
    case RecomputeKind::kFullBlock:
      return layers > 0 && l.recompute_layers > 0 ? largest : 0;
    case RecomputeKind::kSelective:
      return std::max(mix.dense > 0 ? full.selective_dense : 0,
                      mix.moe > 0 ? full.selective_moe : 0);
    default:
      return 0;
  }
}

// Embedding: the first stage keeps 8sbh for each micro-batch in flight
// [P 3.2], and with dropout the embedding dropout's 1-byte mask [K].
double EmbeddingActivations(const ModelShape& m, const Layout& l,
                            double in_flight) {
  const double sbh = LocalTokens(l) * m.hidden;
  const double split = l.sequence_parallel ? l.tensor : 1;
  const double bytes =
      8 * ActivationElementScale(l) + (l.hidden_dropout > 0 ? 1 : 0);
  return bytes * sbh * in_flight / split;
}

// LM head: the final norm's and the output layer's inputs (2sbh each) and
// the fp32 cross-entropy over the vocabulary-parallel logits (4sbv, fp32
// in any precision): 4sbh(1 + v/h) [P 3.2, K 4.3].
double HeadActivations(const ModelShape& m, const Layout& l) {
  const double sb = LocalTokens(l);
  const double split = l.sequence_parallel ? l.tensor : 1;
  // Gemma 2's final logit soft-capping stores tanh's 16-bit output [G].
  const double softcap =
      m.logit_softcapping ? 2 * ActivationElementScale(l) : 0;
  return 4 * ActivationElementScale(l) * sb * m.hidden / split +
         (4 + softcap) * sb * VocabRows(m, l.tensor) / l.tensor;
}

// [CE] Megatron's native fused cross entropy (fused_cross_entropy.py,
// calculate_gradients under @jit_fuser, torch.compile'd) returns a new
// fp32 gradient of the vocabulary-parallel logits where Megatron's unfused
// loss (cross_entropy.py) updates the saved fp32 softmax in place: 4 B a
// logit more at the loss's backward, while the last stage still holds its
// stored activations. Once a stage: the losses (the LM head's, each MTP
// head's) run their backward one at a time. Measured on an H100 (session
// 33, dense_ce_fusion): the step's peak 1.96 GiB above the unfused loss's
// (4096 x 128,256 x 4 B). (The 16-bit gradient of the logits both losses
// then make, 2 B a logit, is the paper's and stays in the headroom.)
double LossGradientTransient(const ModelShape& m, const Layout& l) {
  if (!l.cross_entropy_new_gradient) return 0;
  return 4 * LocalTokens(l) * VocabRows(m, l.tensor) / l.tensor;
}

// [CE] The 16-bit copy of the logits' gradient that autograd makes at the
// loss's backward: both losses return an fp32 gradient (the unfused one
// the saved fp32 softmax updated in place, the native fused one a new
// tensor, LossGradientTransient) for 16-bit logits, which autograd's
// engine casts to the logits' dtype while the fp32 one still lives, before
// the output layer's backward takes it: s/c x b x v/t x 2 B on the last
// stage, beside everything it holds (one loss at a time). In fp32 training
// the gradient is the logits' dtype already: none. A transient, not in the
// stage's total (the paper leaves it to the headroom: it is where the
// 80% rule's 20% goes); the zone checks that it fits beside the total
// (StageFigures::transient_peak_bytes), where a small model with a large
// vocabulary and long micro-batches at TP 1 can outgrow the headroom.
double LossGradientCastBytes(const ModelShape& m, const Layout& l) {
  if (l.precision == v1::PRECISION_FP32) return 0;
  return 2 * LocalTokens(l) * VocabRows(m, l.tensor) / l.tensor;
}

// [OW] Without gradient-accumulation fusion (--no-gradient-accumulation-
// fusion), Megatron's linear layers compute each weight gradient as a new
// tensor, grad_output^T x input in the activations' dtype, which the DDP
// hook then adds to the fp32 main gradient (tensor_parallel/layers.py
// LinearWithGradAccumulationAndAsyncCommunication.backward: the else
// branch of ctx.gradient_accumulation_fusion). The output layer's is
// v/t x h, made beside its input's gradient, s/c x b x h, while the
// logits' gradient (s/c x b x v/t in the activations' dtype) lives and the
// loss's fp32 softmax (4 B a logit, among the stored activations) is gone:
// the last stage's transient after the loss's (LossGradientCastBytes),
// one or the other at a time. Above the stage's activations that is
// e (v/t h + s/c b h) - (4 - e) s/c b v/t, e the element's bytes. In fp32
// training (no cast at the loss) it is the step's peak above what the
// forward pass stores; in 16-bit training it is the larger only where
// s/c x b is below about h (measured on an H100, bench/RESULTS.md session
// 38: 4 v h + 4 s b h at two vocabularies, and 2 v h + 2 s b h - 2 s b v
// at s = h / 4, each to 36 KB). The transformer layers' weight gradients
// are a layer's backward working set (headroom); fused, none of these
// exist.
double OutputWeightGradientBytes(const ModelShape& m, const Layout& l) {
  if (!l.gradient_accumulation_unfused) return 0;
  const double element = 2 * ActivationElementScale(l);
  const double vocab_shard = VocabRows(m, l.tensor) / l.tensor;
  const double tokens = LocalTokens(l);
  return std::max(0.0, element * m.hidden * (vocab_shard + tokens) -
                           (4 - element) * tokens * vocab_shard);
}

// [EG] The first stage's word embedding (tensor_parallel/layers.py
// VocabParallelEmbedding: F.embedding, or an index of the weight) has a
// dense weight gradient, v/t x h in the weight's dtype (PyTorch's
// embedding_dense_backward), which the DDP hook then adds to the main
// gradient; a learned position embedding's, max_positions x h, likewise.
// No gradient-accumulation fusion applies to it. It is made at the last
// op of each micro-batch's backward on the stage, when that micro-batch's
// layer activations of the first chunk are freed, and the layers' working
// sets (recomputation, dispatch, CP gathers) with them (the other
// micro-batches in flight are not; with one stage, all of them): above
// the stage's
// total, the gradient less those activations, none where they are larger
// (most jobs: a micro-batch's layer activations outweigh v/t x h unless
// every layer is recomputed).
// From source, not measured: on one GPU the output layer's transients
// come first and are larger (bench/RESULTS.md session 38). An MTP layer's
// embedding on the last stage is left to the headroom: the losses'
// softmaxes freed before it outweigh it unless 2 s/c x b < h.
double EmbeddingGradientBytes(const ModelShape& m, const Layout& l,
                              double freed_bytes) {
  const double element = 2 * ActivationElementScale(l);
  const double gradient =
      element * m.hidden *
      (VocabRows(m, l.tensor) / l.tensor + m.learned_positions);
  return std::max(0.0, gradient - freed_bytes);
}

// Megatron's --defer-embedding-wgrad-compute [DW]: each call of the output
// layer appends its input (the sequence-parallel shard, s/(ct) x b x h)
// at forward and the logits' gradient (s/c x b x v/t, the logits' 16-bit
// dtype) at backward, held until the pipeline flush: the step's m calls,
// m (1 + MTP layers) with MTP, or the first wgrad_deferral_limit. Counted
// whole beside the last stage's activations in flight (its peak nears the
// step's end, when all but the last entry are held: at most one entry
// over).
double DeferredEmbeddingWgradBytes(const ModelShape& m, const Layout& l) {
  if (!l.defer_embedding_wgrad) return 0;
  const double calls = l.microbatches * (1 + std::max(0.0, m.mtp_layers));
  const double entries =
      l.wgrad_deferral_limit > 0
          ? (calls > 0 ? std::min(l.wgrad_deferral_limit, calls)
                       : l.wgrad_deferral_limit)
          : calls;
  const double sb = LocalTokens(l);
  const double split = l.sequence_parallel ? l.tensor : 1;
  const double element = 2 * ActivationElementScale(l);
  return entries * element *
         (sb * m.hidden / split + sb * VocabRows(m, l.tensor) / l.tensor);
}

// The dataloader's attention mask on a stage that reads data [DL]: 1 byte
// per element, b x (s/c) x s after context parallelism took its rows.
// The current micro-batch's mask lives through its forward; a micro-batch
// whose layers checkpoint (full recomputation, selective recomputation of
// core attention) or whose unfused attention masks its scores in place
// saves it for backward, so each of the `in_flight` micro-batches of the
// data-reading chunk keeps one. Before the forward, the whole b x s x s
// mask arrives and is sliced for context parallelism: both exist for a
// moment, when the stage holds one micro-batch's layers fewer
// (`one_microbatch`, what a micro-batch stores): counted when larger.
double DataloaderMaskBytes(const Layout& l, double in_flight,
                           double one_microbatch) {
  if (!l.dataloader_mask) return 0;
  const double whole = l.micro_batch * l.seq_length * l.seq_length;
  const double sliced = whole / l.context;
  double bytes =
      (DataloaderMaskIsSaved(l) ? std::max(1.0, in_flight) : 1.0) * sliced;
  if (l.context > 1) bytes += std::max(0.0, whole - one_microbatch);
  return bytes;
}

// Parameters of the MTP block on one rank, excluding routed experts
// (Megatron multi_token_prediction.py; DeepSeek-V3 report sec. 2.2): per
// layer the h x 2h projection (column-parallel, split over t), three norms
// (of the hidden state and the embedding, enorm and hnorm, and the
// layer's own final_layernorm before the shared head:
// MultiTokenPredictionLayer builds one each) and a transformer layer.
// Measured on an H100 (bench/RESULTS.md, session 35): two MTP layers hold
// two final norms, where memgate had counted one for the block.
// `transformer_layer`: LayerParameters of the MTP layer's kind, which a
// stage may have worked out already.
double MtpParameters(const ModelShape& m, const Layout& l,
                     double transformer_layer) {
  if (m.mtp_layers <= 0) return 0;
  const double layer = 2 * m.hidden * m.hidden / l.tensor +
                       3 * NormParameters(m) + transformer_layer;
  return MtpBuiltLayers(m) * layer;
}
double MtpParameters(const ModelShape& m, const Layout& l) {
  return MtpParameters(m, l, LayerParameters(m, l, MtpLayerIsMoe(m)));
}

// A norm's stored input, one micro-batch: 2sbh in 16 bits, split by
// sequence parallelism (an MTP layer's own final norm, the final norm
// [FN]).
double NormInputBytes(const ModelShape& m, const Layout& l) {
  return 2 * ActivationElementScale(l) * LocalTokens(l) * m.hidden /
         (l.sequence_parallel ? l.tensor : 1);
}

// Standalone MTP (Layout.mtp_rank): the MTP layers sit in the last chunk
// of a rank before the last, their heads' logits on the loss stage.
bool MtpStandalone(const ModelShape& m, const Layout& l) {
  return m.mtp_layers > 0 && l.mtp_rank >= 0;
}

// Does pipeline rank `stage` hold the MTP layers (in its last chunk): the
// standalone rank, or the last beside the loss.
bool HoldsMtp(const ModelShape& m, const Layout& l, uint32_t stage) {
  if (m.mtp_layers <= 0) return false;
  return MtpStandalone(m, l) ? stage == l.mtp_rank : stage + 1 >= l.pipeline;
}

// Per micro-batch, each MTP layer stores a transformer layer's activations
// (`layer_activations`: LayerActivationsFull of the MTP layer's kind, which
// the stage has worked out already), the projection's 2h-wide input and the
// two norms' inputs (2 x 2sbh, split over t by sequence parallelism), and
// its own LM head's; with hidden dropout, the 1-byte mask of the
// embedding it runs (LanguageModelEmbedding's embedding_dropout, as
// EmbeddingActivations). Standalone, the head's logits are the loss
// stage's (process_mtp_loss there splits the hidden states the MTP rank
// concatenated, multi_token_prediction.py): the MTP rank keeps the layer's
// own final norm's input (2sbh) instead. With hidden-state mixing, each
// depth after the first keeps the mix's int64 gather indices and bool
// mask (_mix_hidden_state_history): 9 bytes a token of the rank's share
// (sequence parallelism splits the tokens it mixes).
double MtpActivations(const ModelShape& m, const Layout& l,
                      double layer_activations) {
  if (m.mtp_layers <= 0) return 0;
  const double split = l.sequence_parallel ? l.tensor : 1;
  const double sbh = LocalTokens(l) * m.hidden;
  const double inputs =
      (8 * ActivationElementScale(l) + (l.hidden_dropout > 0 ? 1 : 0)) *
      sbh / split;
  const double head =
      MtpStandalone(m, l) ? NormInputBytes(m, l) : HeadActivations(m, l);
  const double mixing =
      m.mtp_hidden_state_mixing
          ? std::max(0.0, m.mtp_layers - 1) * 9 * LocalTokens(l) / split
          : 0;
  return m.mtp_layers * (layer_activations + inputs + head) + mixing;
}

}  // namespace

bool ContextParallelAllToAll(const Layout& l) {
  return l.context > 1 &&
         (l.cp_comm == v1::CONTEXT_PARALLEL_COMM_A2A ||
          (l.cp_comm == v1::CONTEXT_PARALLEL_COMM_A2A_P2P &&
           l.cp_a2a_size > 1));
}

bool ReducesGradientsInFp32(const v1::TrainingConfig& t) {
  const bool bf16_fp32_grads =
      t.precision() == v1::PRECISION_BF16_FP32_GRADS ||
      t.precision() == v1::PRECISION_UNSPECIFIED;  // resolved to it
  return bf16_fp32_grads &&
         t.precision_aware_optimizer().main_grads_dtype() != v1::DTYPE_BF16;
}

double HeadDim(const ModelShape& m) {
  return m.head_dim > 0 ? m.head_dim : m.hidden / std::max(m.heads, 1.0);
}
double QueryWidth(const ModelShape& m) { return m.heads * HeadDim(m); }

namespace {

// Learned positions' rows, and which layers rotate and how [RU].
void FillPositions(const v1::ModelConfig& model, ModelShape& m) {
  const v1::PositionEmbedding position = model.position_embedding();
  if (position == v1::POSITION_EMBEDDING_LEARNED_ABSOLUTE) {
    m.learned_positions = model.max_position_embeddings();
  }
  const bool yarn_or_mrope = position == v1::POSITION_EMBEDDING_YARN ||
                            position == v1::POSITION_EMBEDDING_MROPE;
  const bool unrotated =
      position == v1::POSITION_EMBEDDING_LEARNED_ABSOLUTE ||
      position == v1::POSITION_EMBEDDING_NONE;
  const bool rope = !yarn_or_mrope && !unrotated;  // the paper's default
  if (model.has_mla()) {
    // MLA rotates its d_rope part itself, whatever the model's positions
    // (multi_latent_attention.py makes its own frequencies, one set for
    // all samples), and arguments.py turns the RoPE fusion off for every
    // position type but rope: with learned, no, YaRN or mRoPE positions
    // its tables are kept too.
    m.rotary_positions = true;
    m.rope_always_unfused = !rope;
    return;
  }
  m.rotary_positions = !unrotated;
  m.rope_always_unfused = yarn_or_mrope;
  m.rope_per_sample = position == v1::POSITION_EMBEDDING_MROPE;
}

}  // namespace

bool MtpLayerIsMoe(const ModelShape& m) {
  return MoeLayersIn(m, m.layers - 1, 1) > 0;
}

double MtpBuiltLayers(const ModelShape& m) {
  return m.mtp_repeated_layer ? std::min(1.0, m.mtp_layers) : m.mtp_layers;
}

ModelShape ShapeOf(const v1::ModelConfig& model) {
  ModelShape m;
  m.layers = model.num_layers();
  m.hidden = model.hidden_size();
  m.ffn_hidden = model.ffn_hidden_size();
  m.heads = model.num_attention_heads();
  m.kv_heads = model.num_query_groups();
  m.vocab = model.vocab_size();
  m.vocab_multiple = model.vocab_size_divisible_by();
  m.head_dim = model.head_dim();  // 0: h / a
  m.tied_embeddings = model.tie_word_embeddings();
  // Squared ReLU keeps what GeLU keeps (moe_terms.cc MlpWidthBytes [SR]).
  m.ungated_mlp = model.mlp_activation() == v1::MLP_ACTIVATION_GELU ||
                  model.mlp_activation() == v1::MLP_ACTIVATION_SQUARED_RELU;
  m.quick_geglu = model.mlp_activation() == v1::MLP_ACTIVATION_QUICK_GEGLU;
  m.geglu = model.mlp_activation() == v1::MLP_ACTIVATION_GEGLU;
  m.activation_clamp = model.activation_clamp();
  m.layernorm = model.normalization() == v1::NORMALIZATION_LAYERNORM;
  m.linear_bias = model.linear_bias();
  m.learnable_softmax = model.softmax_type() == v1::SOFTMAX_TYPE_LEARNABLE;
  m.attention_sinks = model.softmax_type() != v1::SOFTMAX_TYPE_VANILLA;
  m.qkv_bias = model.qkv_bias();
  m.qk_norm = model.qk_norm() || model.qk_l2_norm();
  m.qk_l2_norm = model.qk_l2_norm();
  m.sandwich_norms = model.sandwich_norms();
  m.logit_softcapping = model.final_logit_softcapping() > 0;
  m.attention_softcapping = model.attention_logit_softcapping() > 0;
  FillPositions(model, m);
  if (model.has_moe() && model.moe().num_experts() > 0) {
    const v1::MoeConfig& moe = model.moe();
    m.experts = moe.num_experts();
    m.topk = moe.router_topk();
    m.expert_ffn = moe.expert_ffn_hidden_size();
    m.shared_ffn = moe.shared_expert_ffn_hidden_size();
    m.probs_applied = moe.routing_probs_applied();
    m.expert_activation_unfused = moe.expert_activation_unfused();
    m.expert_glu_linear_copy = moe.expert_glu_linear_copy();
    m.expert_activation_te_op = moe.expert_activation_te_op();
    m.shared_gate = moe.shared_expert_gate();
    m.grouped_experts = moe.grouped_gemm();
    m.shared_overlap = moe.shared_expert_overlap();
    m.input_jitter = moe.input_jitter();
    m.router_bytes = moe.router_dtype() == v1::DTYPE_BF16 ||
                             moe.router_dtype() == v1::DTYPE_FP16
                         ? 2
                         : 4;
    m.router_score = moe.router_score_function();
    m.router_fusion = moe.has_router_fusion() ? moe.router_fusion() : -1;
    m.router_groups = moe.router_num_groups();
    m.router_group_topk = moe.router_group_topk();
    m.aux_loss = !moe.has_aux_loss() || moe.aux_loss();
    m.z_loss = !moe.has_z_loss() || moe.z_loss();
    // Validated: a pattern lists every layer; at most 65,536 layers.
    m.moe_prefix.assign(model.num_layers() + 1, 0);
    const uint32_t freq = std::max(1u, moe.layer_frequency());
    for (uint32_t i = 0; i < model.num_layers(); ++i) {
      const bool is_moe = moe.layer_pattern_size() > 0
                              ? moe.layer_pattern(static_cast<int>(i)) != 0
                              : i % freq == 0;
      m.moe_prefix[i + 1] = m.moe_prefix[i] + (is_moe ? 1 : 0);
      if (m.moe_prefix[i + 1] == 0) m.leading_dense = i + 1;
    }
    const uint32_t after_prefix =
        model.num_layers() - static_cast<uint32_t>(m.leading_dense);
    m.moe_irregular = m.moe_prefix.back() < after_prefix;
  }
  if (model.has_mla()) {
    const v1::MlaConfig& mla = model.mla();
    m.mla = true;
    m.q_lora = mla.q_lora_rank();
    m.kv_lora = mla.kv_lora_rank();
    m.qk_nope = mla.qk_head_dim();
    m.qk_rope = mla.qk_pos_emb_head_dim();
    m.v_head = mla.v_head_dim();
    m.mla_fused_down_projection = mla.fused_down_projection();
  }
  m.mtp_layers = model.mtp_num_layers();
  m.mtp_repeated_layer = model.mtp_repeated_layer();
  m.mtp_hidden_state_mixing = model.mtp_hidden_state_mixing();
  return m;
}

namespace {

double DTypeBytes(v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_BF16:
    case v1::DTYPE_FP16:
      return 2;
    case v1::DTYPE_FP8:
      return 1;
    default:
      return 4;  // fp32, and every unset dtype's default
  }
}

}  // namespace

double GradientBytesPerParameter(const v1::TrainingConfig& t) {
  if (!t.has_precision_aware_optimizer()) {
    return BufferBytesPerParameter(t.precision());
  }
  const v1::DType grads = t.precision_aware_optimizer().main_grads_dtype();
  if (grads != v1::DTYPE_UNSPECIFIED) return DTypeBytes(grads);
  return t.precision() == v1::PRECISION_BF16_BF16_GRADS ? 2 : 4;
}

namespace {

// The precision-aware optimizer's bytes [PA]. The master weight of a bf16
// weight is an int16 remainder when TE's FusedAdam manages it (fp32 main
// params, no fp8 recipe other than delayed, no CPU offload, whose hybrid
// optimizer keeps full fp32 copies); with fp16 main params it is 2 B.
void ResolveOptimizerStorage(const v1::Job& job, Layout& l) {
  const v1::TrainingConfig& train = job.training();
  l.optimizer_offload = train.optimizer_offload_fraction();
  if (!train.has_precision_aware_optimizer()) return;
  const v1::PrecisionAwareOptimizer& pa = train.precision_aware_optimizer();
  l.precision_aware = true;
  l.main_grad_bytes = GradientBytesPerParameter(train);
  l.exp_avg_bytes = DTypeBytes(pa.exp_avg_dtype());
  l.exp_avg_sq_bytes = DTypeBytes(pa.exp_avg_sq_dtype());
  // Under fp4 Megatron's fp8_recipe keeps its default, delayed
  // (optimizer_config.py reads it, not the fp4 recipe).
  const bool delayed_or_none =
      !train.has_fp8() || train.fp8().recipe() == v1::Fp8::RECIPE_DELAYED ||
      train.fp8().recipe() == v1::Fp8::RECIPE_UNSPECIFIED ||
      train.fp8().recipe() == v1::Fp8::RECIPE_NVFP4;
  const bool te_manages_master = l.optimizer_offload == 0 && delayed_or_none;
  const bool remainders =
      te_manages_master && l.precision != v1::PRECISION_FP16 &&
      (!pa.has_store_param_remainders() || pa.store_param_remainders());
  l.master_bytes = pa.main_params_dtype() == v1::DTYPE_FP16 || remainders
                       ? 2
                       : 4;
  // [OS] use_precision_aware_optimizer_no_fp8_or_ds_fp8: fp16 main
  // params, no fp8 recipe other than delayed, or CPU offload.
  l.decoupled_grads = pa.main_params_dtype() == v1::DTYPE_FP16 ||
                      delayed_or_none || l.optimizer_offload > 0;
}

}  // namespace

Layout LayoutOf(const v1::Job& job) {
  const v1::ParallelConfig& par = job.parallel();
  const v1::TrainingConfig& train = job.training();
  Layout l;
  l.tensor = par.tensor_parallel();
  l.pipeline = par.pipeline_parallel();
  l.context = par.context_parallel();
  l.data = job.num_gpus() / (static_cast<double>(par.tensor_parallel()) *
                             par.pipeline_parallel() * par.context_parallel());
  l.micro_batch = train.micro_batch_size();
  l.eval_micro_batch =
      train.evaluation_off()
          ? 0
          : (train.eval_micro_batch_size() > 0 ? train.eval_micro_batch_size()
                                                : l.micro_batch);
  l.seq_length = train.seq_length();
  l.microbatches = train.global_batch_size() == 0
                       ? 0
                       : train.global_batch_size() / (l.micro_batch * l.data);
  l.virtual_stages = std::max(1u, par.virtual_pipeline_stages());
  l.microbatch_group = par.microbatch_group_size();
  l.sequence_parallel = par.sequence_parallel();
  l.distributed_optimizer = par.distributed_optimizer();
  l.optimizer_instances = std::max(1u, par.distributed_optimizer_instances());
  l.ddp_bucket_size = static_cast<double>(par.ddp_bucket_size());
  l.ddp_num_buckets = par.ddp_num_buckets();
  l.pad_buckets_for_high_busbw = par.pad_buckets_for_high_nccl_busbw();
  l.cp_comm = par.context_parallel_comm();
  l.cp_a2a_size = std::max(1u, par.context_parallel_a2a_size());
  if (par.has_mtp_pipeline_rank() &&
      par.mtp_pipeline_rank() + 1 < par.pipeline_parallel()) {
    l.mtp_rank = par.mtp_pipeline_rank();
  }
  l.precision = train.precision();
  l.optimizer = train.optimizer() == v1::OPTIMIZER_UNSPECIFIED
                    ? v1::OPTIMIZER_ADAM
                    : train.optimizer();
  l.sgd_momentum = train.has_sgd_momentum() ? train.sgd_momentum() : 0.9;
  // What the release decides, where the job names one (validation
  // refuses a malformed one, or one without the optimizer).
  std::optional<MegatronCoreRelease> release;
  if ((l.optimizer == v1::OPTIMIZER_LION ||
       l.optimizer == v1::OPTIMIZER_MUON) &&
      !train.megatron_core_version().empty()) {
    absl::StatusOr<MegatronCoreRelease> parsed =
        ParseMegatronCoreRelease(train.megatron_core_version());
    if (parsed.ok()) release = *parsed;
  }
  if (l.optimizer == v1::OPTIMIZER_LION && release) {
    l.lion_scalars =
        LionScalarOptimizerOf(*release).value_or(LionScalarOptimizer::kEither);
  }
  if (l.optimizer == v1::OPTIMIZER_MUON) {
    const v1::Muon& muon = train.muon();
    std::optional<MuonRelease> muon_release;
    if (release) {
      absl::StatusOr<MuonRelease> of = MuonReleaseOf(*release);
      if (of.ok()) muon_release = *of;
    }
    l.muon_tp_mode = muon.tp_mode() != v1::Muon::TP_MODE_UNSPECIFIED
                         ? muon.tp_mode()
                     : muon_release ? muon_release->default_tp_mode
                                    : v1::Muon::TP_MODE_DUPLICATED;
    l.muon_fp32_iteration = muon.fp32_iteration();
    l.muon_nesterov = muon.nesterov();
    l.muon_split_qkv = !muon.no_split_qkv();
    l.muon_scalar_lion = muon.scalar_optimizer() == v1::OPTIMIZER_LION &&
                         muon_release && muon_release->scalar_lion;
  }
  // [LW] With the distributed optimizer (FSDP is refused with them).
  if ((l.optimizer == v1::OPTIMIZER_LION ||
       l.optimizer == v1::OPTIMIZER_MUON) &&
      l.distributed_optimizer) {
    EmergingDistributedRun run;
    run.by_elements = run.by_cost = true;
    if (release) {
      run = EmergingDistributedRunOf(l.optimizer, *release).value_or(run);
    }
    l.layer_wise_by_elements = run.by_elements;
    l.layer_wise_by_cost = run.by_cost;
  }
  l.hidden_dropout = train.hidden_dropout();
  l.attention_dropout = train.attention_dropout();
  l.local_attention = train.attention_kernel() == v1::ATTENTION_KERNEL_LOCAL;
  l.local_layer_spec = train.local_layer_spec();
  l.rope_fusion_disabled = train.rope_fusion_disabled();
  l.cross_entropy_new_gradient = train.cross_entropy_new_gradient();
  l.gradient_accumulation_unfused = train.gradient_accumulation_unfused();
  l.eager_jit_functions = train.jit_fuser_disabled();
  l.unfused_attention =
      l.local_attention ||
      train.attention_kernel() == v1::ATTENTION_KERNEL_UNFUSED;
  l.softmax_in_fp32 = train.attention_softmax_in_fp32();
  l.te_softmax_kernel_off = train.te_masked_softmax_fusion_disabled();
  l.dataloader_mask = train.dataloader_attention_mask();
  l.fused_swiglu = train.fused_swiglu();
  l.glu_linear_copy = train.glu_linear_copy();
  l.fp32_local_grads = train.fp32_local_grad_accumulation();
  l.activation_fp8_input_store = train.activation_fp8_input_store();
  l.defer_embedding_wgrad = train.defer_embedding_wgrad();
  l.wgrad_deferral_limit = train.wgrad_deferral_limit();
  const v1::Recompute& r = train.recompute();
  if (r.granularity() == v1::Recompute::GRANULARITY_SELECTIVE) {
    l.recompute = RecomputeKind::kSelective;
    l.recompute_core_attn = r.modules_size() == 0;
    for (int module : r.modules()) {
      l.recompute_core_attn |= module == v1::Recompute::MODULE_CORE_ATTN;
      l.recompute_mlp |= module == v1::Recompute::MODULE_MLP;
      l.recompute_moe |= module == v1::Recompute::MODULE_MOE;
      l.recompute_moe_act |= module == v1::Recompute::MODULE_MOE_ACT;
      l.recompute_shared_experts |=
          module == v1::Recompute::MODULE_SHARED_EXPERTS;
      l.recompute_layernorm |= module == v1::Recompute::MODULE_LAYERNORM;
      l.recompute_mla_up_proj |= module == v1::Recompute::MODULE_MLA_UP_PROJ;
    }
  } else if (r.granularity() == v1::Recompute::GRANULARITY_FULL) {
    l.recompute = r.method() == v1::Recompute::METHOD_BLOCK
                      ? RecomputeKind::kFullBlock
                      : RecomputeKind::kFullUniform;
    l.recompute_layers = r.num_layers();
    l.distribute_saved_inputs = r.distribute_saved_activations();
  }
  ResolveOptimizerStorage(job, l);
  l.expert_parallel = std::max(1u, par.expert_parallel());
  l.expert_tensor = par.expert_tensor_parallel() > 0
                        ? par.expert_tensor_parallel()
                        : par.tensor_parallel();
  const v1::MoeConfig& moe = job.model().moe();
  l.allgather_dispatcher =
      moe.token_dispatcher() == v1::MoeConfig::DISPATCHER_ALLGATHER;
  l.deepep_dispatcher =
      moe.token_dispatcher() == v1::MoeConfig::DISPATCHER_FLEX;
  l.deepep_sms = moe.flex_dispatcher_num_sms() > 0
                     ? moe.flex_dispatcher_num_sms()
                     : kDefaultDeepEpSms;
  l.capacity_factor = moe.capacity_factor();
  l.pad_to_capacity = moe.pad_to_capacity();
  l.ep_overlap = moe.overlap_expert_parallel_comm();
  l.grouped_tensor = moe.grouped_tensor();
  l.fused_grouped_mlp = moe.fused_grouped_mlp();
  l.tp_comm_overlap =
      train.tp_comm_overlap() != v1::TrainingConfig::TP_COMM_OVERLAP_OFF;
  l.tp_comm_overlap_custom = train.tp_comm_overlap() ==
                             v1::TrainingConfig::TP_COMM_OVERLAP_CUSTOM_CONFIG;
  l.load_imbalance = moe.has_load_imbalance() ? moe.load_imbalance() : 1.25;
  if (train.has_fp8()) {
    l.fp8 = true;
    l.fp8_param_gather = train.fp8().param_gather();
    l.fp8_output_projection = train.fp8().output_projection();
    l.bf16_first_layers = train.fp8().bf16_first_layers();
    l.bf16_last_layers = train.fp8().bf16_last_layers();
    switch (train.fp8().recipe()) {
      case v1::Fp8::RECIPE_MXFP8:
        l.fp8_scale_bytes = l.fp8_weight_scale_bytes = 1.0 / 32;
        l.fp8_align = 32;
        break;
      case v1::Fp8::RECIPE_NVFP4:
        // [F4] TransformerEngine's NVFP4BlockScaling (common/recipe
        // NVFP4BlockScaling, d0067d0) quantizes the same GEMM operands in
        // the same usages as MXFP8 (Megatron's get_fp4_context wraps the
        // layers get_fp8_context would), to 4-bit E2M1 with an E4M3
        // scale per 16 elements (2D 16 x 16 blocks for weights) and an
        // fp32 one per tensor: 0.5625 B an element, counted at MXFP8's
        // 1.03 (an upper bound; a random Hadamard transform and
        // stochastic rounding work on the way, nothing kept). Megatron
        // pads every local expert's rows to 128 (fp4_utils.py
        // get_fp4_align_size).
        l.fp8_scale_bytes = l.fp8_weight_scale_bytes = 1.0 / 32;
        l.fp8_align = 128;
        l.nvfp4 = true;
        break;
      case v1::Fp8::RECIPE_BLOCKWISE:
        l.fp8_scale_bytes = 4.0 / 128;
        l.fp8_weight_scale_bytes = 4.0 / (128 * 128);
        break;
      case v1::Fp8::RECIPE_DELAYED:
      case v1::Fp8::RECIPE_UNSPECIFIED:
        l.fp8_amax_history =
            std::max<uint32_t>(1, train.fp8().amax_history_len());
        break;
      default:
        break;
    }
  }
  l.fsdp_double_buffer = par.fsdp_double_buffer();
  l.fsdp_unit_size = static_cast<double>(par.fsdp_communication_unit_size());
  switch (par.data_parallel_sharding()) {
    case v1::DATA_PARALLEL_SHARDING_NO_SHARD:
      l.sharding = FsdpSharding::kNoShard;
      break;
    case v1::DATA_PARALLEL_SHARDING_OPTIM:
      l.sharding = FsdpSharding::kOptim;
      break;
    case v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS:
      l.sharding = FsdpSharding::kOptimGrads;
      break;
    case v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS_PARAMS:
      l.sharding = FsdpSharding::kOptimGradsParams;
      break;
    default:
      break;
  }
  // [RSA] Megatron turns the flag off where the gradients are reduced in
  // fp32 anyway (bf16 with fp32 main gradients: arguments.py), and only
  // the distributed optimizer's DDP reduce-scatters.
  l.rs_fp32_accumulation =
      train.reduce_scatter_fp32_accumulation() && l.distributed_optimizer &&
      l.sharding == FsdpSharding::kNone && !ReducesGradientsInFp32(train);
  return l;
}

double VocabRows(const ModelShape& m, double tensor) {
  if (m.vocab_multiple <= 0) return m.vocab;
  const double multiple = m.vocab_multiple * tensor;
  return std::ceil(m.vocab / multiple) * multiple;
}

double TotalParameters(const ModelShape& m, double tensor) {
  Layout unsplit;  // t = EP = ETP = 1
  const double embeddings =
      (m.tied_embeddings ? 1 : 2) * m.hidden * VocabRows(m, tensor);
  const double moe = MoeLayersIn(m, 0, m.layers);
  const double experts = RoutedExpertParameters(m, unsplit);
  const double mtp =
      MtpParameters(m, unsplit) +
      (m.mtp_layers > 0 && MtpLayerIsMoe(m) ? MtpBuiltLayers(m) * experts
                                            : 0);
  return embeddings + m.learned_positions * m.hidden + NormParameters(m) +
         (m.layers - moe) * LayerParameters(m, unsplit, false) +
         moe * (LayerParameters(m, unsplit, true) + experts) + mtp;
}

bool DataloaderMaskIsSaved(const Layout& l) {
  return l.unfused_attention || l.recompute == RecomputeKind::kFullUniform ||
         (l.recompute == RecomputeKind::kFullBlock &&
          l.recompute_layers > 0) ||
         (l.recompute == RecomputeKind::kSelective && l.recompute_core_attn);
}

// The EP all-to-all overlap (schedules.py get_pp_rank_microbatches: one
// more warm-up forward "to ensure the forward and backward computations are
// independent in all 1f1b steps"; combined_1f1b.py then runs each step's
// forward beside the oldest one's backward, whose activations are freed as
// the new ones are made): one more in flight, under plain no-pipelining
// too (its combined schedule overlaps micro-batch i + 1's forward with i's
// backward).
double MicrobatchesInFlight(const Layout& l, uint32_t stage) {
  const double overlap = l.ep_overlap ? 1 : 0;
  if (l.virtual_stages > 1) {
    const double chunks = 2 * (l.pipeline - stage - 1) +
                          (l.virtual_stages - 1) * MicrobatchGroup(l) + 1 +
                          overlap;
    return l.microbatches > 0
               ? std::min(chunks, l.microbatches * l.virtual_stages)
               : chunks;
  }
  const double one_f_one_b = l.pipeline - stage + overlap;
  return l.microbatches > 0 ? std::min(one_f_one_b, l.microbatches)
                            : one_f_one_b;
}

double MicrobatchGroup(const Layout& l) {
  return l.microbatch_group > 0 ? l.microbatch_group : l.pipeline;
}

namespace {

// Under interleaving, how many of a rank's chunks in flight are its chunk
// j. Megatron runs forwards in groups of N micro-batches a chunk, chunk by
// chunk, the last group being the m % N left over [MT]
// (get_schedule_table): of the first W forwards, each whole group of N x v
// gives chunk j N micro-batches, and the group W ends in, of size n (N, or
// the remainder when it is the last), gives it min(max(r - j n, 0), n) of
// its r forwards. In a schedule Megatron runs (p <= N <= m) a rank's
// W <= (v - 1)N + 2p forwards end at most 2p - N <= p into the second
// group, inside its first chunk; the remainder's size matters only when
// N > m, kept exact for layouts nothing validated. (Closed form: no loop
// over a count a hostile job could make huge.) What does not depend on j
// is worked out once a rank: its chunks are asked for one by one in the
// planner's inner loop.
class ChunkMicrobatchesInFlight {
 public:
  ChunkMicrobatchesInFlight(const Layout& l, double in_flight) {
    if (l.virtual_stages <= 1) {
      done_ = in_flight;  // every chunk: the rank's micro-batches
      return;
    }
    const double group = MicrobatchGroup(l);
    const double v = l.virtual_stages;
    const double m = l.microbatches > 0 ? l.microbatches : HUGE_VAL;
    const double whole_groups = std::floor(m / group);
    const double done = std::min(std::floor(in_flight / (group * v)),
                                 whole_groups);
    done_ = done * group;
    rest_ = in_flight - done * group * v;
    size_ = done < whole_groups ? group : m - whole_groups * group;
  }
  double Of(double chunk) const {
    return done_ + std::clamp(rest_ - chunk * size_, 0.0, size_);
  }

 private:
  double done_ = 0;  // whole groups' micro-batches, each chunk's
  double rest_ = 0;  // forwards into the group the rank ends in
  double size_ = 0;  // that group's size (0 without interleaving)
};

// Parameters of the two largest FSDP units of a stage [MF]: its layers,
// the embedding on the first stage, the LM head on the last.
double TwoLargestUnits(const ModelShape& m, const Layout& l, uint32_t stage,
                       double stage_layers) {
  const double layer = LayerParameters(m, l);
  const double vocab_shard = m.hidden * VocabRows(m, l.tensor) / l.tensor;
  double units[4] = {stage_layers >= 1 ? layer : 0,
                     stage_layers >= 2 ? layer : 0, 0, 0};
  if (stage == 0) units[2] = vocab_shard + m.learned_positions * m.hidden;
  if (stage + 1 >= l.pipeline && !(stage == 0 && m.tied_embeddings)) {
    units[3] = vocab_shard;
  }
  std::sort(units, units + 4);
  return units[3] + units[2];
}

// The parameters of a rank Megatron-FSDP holds un-sharded at its peak
// [MF, MFC], of the stage's `params`: weights for the unit computing and
// those prefetched (C / 2 past it, rounded up to a unit), gradients in the
// reduce-scatter queue (C, and the unit that enters it); two units with
// the double buffer. A model smaller than C is held whole.
struct FsdpUnsharded {
  double weights = 0, gradients = 0;
};
FsdpUnsharded FsdpUnshardedParameters(const ModelShape& m, const Layout& l,
                                      uint32_t stage, double stage_layers,
                                      double params) {
  const double units = TwoLargestUnits(m, l, stage, stage_layers);
  if (l.fsdp_double_buffer) return {units, units};
  double c = l.fsdp_unit_size;
  if (c <= 0) {
    const double derived = l.sharding == FsdpSharding::kOptimGradsParams
                               ? 2 * LayerParameters(m, l)
                               : std::max(4e7, 1e6 * l.data * l.context);
    c = std::max(1e9, derived);
  }
  return {std::min(params, units + c / 2), std::min(params, units + c)};
}

}  // namespace

namespace {

// [CPX] all_gather: a layer's attention backward gathers the whole
// sequence's K and V again (k_ag, v_ag), zeroes their gradients over it
// (dk, dv), and its two steps' gradients (dk/dv_per_step, over the keys
// each chunk of queries sees: (2c + 1) / 2c of the sequence together)
// stay listed to the end, where re-ordering dk, then dv, makes one more
// whole copy of either. At most that, on top of the stage's stored
// activations while one layer runs backward (the forward gathers K and V
// once, less). 16-bit elements (fp8 gathers 1-byte ones: an upper bound).
double ContextParallelGatherWorkingSet(const ModelShape& m, const Layout& l) {
  if (l.context < 2 || l.cp_comm != v1::CONTEXT_PARALLEL_COMM_ALL_GATHER) {
    return 0;
  }
  const double e = ActivationElementScale(l);
  // The whole sequence's tokens, in a TP rank's share of the heads.
  const double whole = l.seq_length * l.micro_batch / l.tensor;
  const double k = 2 * e * whole * KeyWidth(m);
  const double v = 2 * e * whole * ValueWidth(m);
  const double steps = (2 * l.context + 1) / (2 * l.context);
  return (2 + steps) * (k + v) + std::max(k, v);
}

// [FN] With MTP layers Megatron moves the final norm from the loss's stage
// to the chunk that holds the last decoder layer (transformer_block.py
// has_final_layernorm_in_this_stage): off the last rank's last chunk, that
// chunk keeps the norm's input, 2sbh (split by sequence parallelism), for
// each of its micro-batches in flight. (The last stage still counts a
// final norm's input in HeadActivations: an over-count there.)
// KeepsFinalNorm: whether a chunk of `layers` from layer `first` does;
// FinalNormChunk: which chunk of `stage` does, -1 for none.
bool KeepsFinalNorm(const ModelShape& m, const Layout& l, uint32_t stage,
                    double layers, double first, bool last_chunk) {
  return m.mtp_layers > 0 && layers > 0 && first + layers == m.layers &&
         !(stage + 1 >= l.pipeline && last_chunk);
}
double FinalNormChunk(const ModelShape& m, const Layout& l, uint32_t stage,
                      const std::vector<LayerMix>& chunks,
                      const std::vector<double>& first) {
  if (m.mtp_layers <= 0) return -1;
  for (size_t j = 0; j < chunks.size() && j < first.size(); ++j) {
    if (KeepsFinalNorm(m, l, stage, chunks[j].total(), first[j],
                       j + 1 == chunks.size())) {
      return static_cast<double>(j);
    }
  }
  return -1;
}

double FinalNormInputBytes(const ModelShape& m, const Layout& l,
                           uint32_t stage, double chunk) {
  const ChunkMicrobatchesInFlight in_flight_of(
      l, MicrobatchesInFlight(l, stage));
  return in_flight_of.Of(chunk) * NormInputBytes(m, l);
}

// The activations rank `stage` holds at its peak: its chunks' stored
// layers for each micro-batch in flight (`chunks` null: v equal chunks of
// the stage's layers), the recomputation and dispatch working sets, the
// embedding on the first stage, the LM head and MTP block on the last.
// Worked out for `count` lanes at once (one layout, as routed and under
// its most loaded expert-parallel rank: they differ in the expert load
// alone, which only the layer figures read): what the lanes share, the
// micro-batches in flight, the embedding's and the LM head's, is worked
// out once, and each lane's sum is made in the order it would be alone,
// to the bit. `freed_before_embedding_gradient`, where given, gets what
// the embedding's backward follows in lane 0 [EG]: one micro-batch's
// stored layer activations of the first chunk and the layers' working
// sets, computed here already.
// (`count` a template argument: the one-lane form, dense models', keeps
// no loop over lanes.)
constexpr int kMaxLanes = 2;
template <int count>
void StageActivationsOfLanes(LayerCache* const lanes[], uint32_t stage,
                             const LayerMix& mix,
                             const std::vector<LayerMix>* chunks,
                             const Bf16Layers* bf16, double activations[],
                             double* freed_before_embedding_gradient) {
  static_assert(count >= 1 && count <= kMaxLanes, "one or two lanes");
  const ModelShape& m = lanes[0]->m;
  const Layout& l = lanes[0]->l;
  const double in_flight = MicrobatchesInFlight(l, stage);
  const ChunkMicrobatchesInFlight in_flight_of(l, in_flight);
  // Without `chunks`, each of the v chunks holds an equal share.
  const LayerMix even_chunk{mix.dense / l.virtual_stages,
                            mix.moe / l.virtual_stages};
  auto chunk_mix = [&](size_t j) {
    return chunks != nullptr ? (*chunks)[j] : even_chunk;
  };
  // Chunk j's bf16 layers: given, or the stage's spread evenly.
  auto chunk_bf16 = [&](size_t j) {
    if (bf16 == nullptr) return 0.0;
    return bf16->chunks.empty() ? bf16->stage / l.virtual_stages
                                : bf16->chunks[j];
  };
  FullLayers full[count];
  double working_set[count] = {};
  for (int k = 0; k < count; ++k) {
    full[k] = FullLayersOf(*lanes[k], mix, bf16 != nullptr ? bf16->stage : 0);
    activations[k] = 0;
  }
  if (chunks == nullptr) {
    for (int k = 0; k < count; ++k) {
      const Layout& lk = lanes[k]->l;
      const double stored =
          StoredActivations(m, lk, even_chunk, full[k], chunk_bf16(0));
      if (k == 0 && freed_before_embedding_gradient != nullptr) {
        *freed_before_embedding_gradient = stored;
      }
      activations[k] = in_flight * stored;
      working_set[k] =
          RecomputeWorkingSet(lk, even_chunk, full[k], chunk_bf16(0));
    }
  } else {
    double stored[count] = {};
    for (size_t j = 0; j < chunks->size(); ++j) {
      // A rank's chunks mostly hold the same layers: what a chunk stores
      // is worked out again only where its layers differ from the last's.
      const LayerMix& chunk = (*chunks)[j];
      if (j == 0 || chunk.dense != (*chunks)[j - 1].dense ||
          chunk.moe != (*chunks)[j - 1].moe ||
          chunk_bf16(j) != chunk_bf16(j - 1)) {
        for (int k = 0; k < count; ++k) {
          const Layout& lk = lanes[k]->l;
          stored[k] = StoredActivations(m, lk, chunk, full[k], chunk_bf16(j));
          working_set[k] =
              std::max(working_set[k], RecomputeWorkingSet(lk, chunk, full[k],
                                                           chunk_bf16(j)));
        }
      }
      if (j == 0 && freed_before_embedding_gradient != nullptr) {
        *freed_before_embedding_gradient = stored[0];
      }
      const double share = in_flight_of.Of(j);
      for (int k = 0; k < count; ++k) activations[k] += share * stored[k];
    }
  }
  const bool last = stage + 1 >= l.pipeline;
  const bool mtp_here = HoldsMtp(m, l, stage);
  const double head = last ? HeadActivations(m, l) : 0;
  const bool has_layers = mix.dense + mix.moe > 0 || mtp_here;
  const double cp_gather =
      has_layers ? ContextParallelGatherWorkingSet(m, l) : 0;
  const bool dispatches = mix.moe > 0 || (mtp_here && MtpLayerIsMoe(m));
  const double embedding =
      stage == 0 ? EmbeddingActivations(m, l, in_flight_of.Of(0)) : 0;
  const double head_and_loss =
      last ? head + DeferredEmbeddingWgradBytes(m, l) +
                 LossGradientTransient(m, l)
           : 0;
  const size_t last_chunk = static_cast<size_t>(l.virtual_stages) - 1;
  for (int k = 0; k < count; ++k) {
    LayerCache& layers = *lanes[k];
    const Layout& lk = layers.l;
    double ws = working_set[k];
    double& a = activations[k];
    // [SR] On the stage that ends the model (one chunk a rank), a micro-
    // batch's backward reaches its last layer only after the LM head's
    // backward has released that micro-batch's head activations (the
    // fp32 logits above all): a recomputed layer, whole or its selected
    // modules, is remade where those were. Measured at PP 1
    // (tests/measured_steps_test.cc: the fully and selectively recomputed
    // rows peak at the loss, and what their forward stores is the stage's
    // activations, 0.1% apart, once the working set is held this way).
    if (last && l.virtual_stages == 1 && ws > 0) {
      ws = std::max(0.0, ws - head);
    }
    if (has_layers) ws += cp_gather;
    if (dispatches) ws += layers.DispatchWorkingSet();
    a += ws;
    // [EG] A layer's working sets live while it runs backward: none is
    // left when the embedding's backward, the micro-batch's last op, makes
    // its gradient.
    if (k == 0 && freed_before_embedding_gradient != nullptr) {
      *freed_before_embedding_gradient += ws;
    }
    // The embedding sits in the first chunk.
    if (stage == 0) a += embedding;
    // The stages that read data hold the dataloader's mask: rank 0 for
    // its first chunk, the last rank for its last (one stage, one chunk:
    // once).
    if (l.dataloader_mask) {
      auto data_chunk_mask = [&](size_t j) {
        return DataloaderMaskBytes(
            lk, in_flight_of.Of(j),
            StoredActivations(m, lk, chunk_mix(j), full[k], chunk_bf16(j)));
      };
      if (stage == 0) a += data_chunk_mask(0);
      if (last && (stage != 0 || last_chunk > 0)) {
        a += data_chunk_mask(last_chunk);
      }
      // A standalone MTP chunk reads the batch too (pretrain_gpt.py
      // get_batch: mtp_on_this_rank; utils.py get_batch_on_this_tp_rank
      // broadcasts it the attention mask).
      if (mtp_here && MtpStandalone(m, lk) &&
          (stage != 0 || last_chunk > 0)) {
        a += data_chunk_mask(last_chunk);
      }
    }
    if (last) a += head_and_loss;
    // The MTP block sits in the last chunk of its rank: the last, or the
    // standalone one, whose heads the loss stage computes.
    if (mtp_here) {
      a += in_flight_of.Of(last_chunk) *
           MtpActivations(m, lk, layers.Kind(MtpLayerIsMoe(m)).full);
    }
    if (last && MtpStandalone(m, lk)) {
      a += in_flight_of.Of(last_chunk) * m.mtp_layers * head;
    }
  }
}

// StageActivations of one lane.
double StageActivations(LayerCache& layers, uint32_t stage,
                        const LayerMix& mix,
                        const std::vector<LayerMix>* chunks,
                        const Bf16Layers* bf16) {
  LayerCache* const lanes[1] = {&layers};
  double activations = 0;
  StageActivationsOfLanes<1>(lanes, stage, mix, chunks, bf16, &activations,
                             nullptr);
  return activations;
}

// StageActivations under a layout of its own (a variant of the stage's,
// whose layer figures are worked out afresh).
double ActivationsUnder(const ModelShape& m, const Layout& l, uint32_t stage,
                        const LayerMix& mix,
                        const std::vector<LayerMix>* chunks,
                        const Bf16Layers* bf16) {
  LayoutLaneFigures figures;
  LayerCache layers{m, l, figures};
  return StageActivations(layers, stage, mix, chunks, bf16);
}

// The activations `stage` holds with one micro-batch in flight (Layout::
// microbatches 1): what the last micro-batch's backward leaves [RSA].
double OneMicrobatchActivations(const ModelShape& m, const Layout& l,
                                uint32_t stage, const LayerMix& mix,
                                const std::vector<LayerMix>* chunks,
                                const Bf16Layers* bf16) {
  Layout one = l;
  one.microbatches = 1;
  return ActivationsUnder(m, one, stage, mix, chunks, bf16);
}

// [EV] A bound on an evaluation's no-grad forward on `stage` of the layout
// of `lane`: one micro-batch of the evaluation's size under full
// recomputation of one layer a group, nothing deferred.
double EvaluationActivations(const LayerCache& lane, uint32_t stage,
                             const LayerMix& mix,
                             const std::vector<LayerMix>* chunks,
                             const Bf16Layers* bf16) {
  Layout e = lane.l;
  e.micro_batch = e.eval_micro_batch;
  e.microbatches = 1;
  e.recompute = RecomputeKind::kFullUniform;
  e.recompute_layers = 1;
  e.recompute_mlp = e.recompute_moe = e.recompute_moe_act = false;
  e.recompute_layernorm = e.recompute_shared_experts = false;
  e.recompute_mla_up_proj = false;
  e.defer_embedding_wgrad = false;
  return ActivationsUnder(lane.m, e, stage, mix, chunks, bf16);
}

// [BP] Parameter tensors a layer registers, an upper bound: attention's
// (QKV and the output projection, or MLA's five projections, with their
// biases; the Q and K or the latent norms, with biases; a learnable
// softmax's offsets) and a layer's norms (four of a sandwich, with
// biases): 24; a dense MLP's or the shared experts' two linears with
// their biases and the shared experts' gate: 5; an MoE layer's router
// weight and bias. The routed experts' are apart (ParameterTensors::
// expert): FC1's and FC2's weights and biases a local expert
// (TransformerEngine's GroupedLinear registers weight{i} and bias{i} a
// GEMM). Beside the layers: the embeddings, the final norm and the LM
// head, 8; an MTP layer adds its projection, norms and copies of the
// embedding and head, 10.
struct ParameterTensors {
  double dense = 0;
  double expert = 0;
};
ParameterTensors ParameterTensorsOf(const ModelShape& m, const Layout& l,
                                    const LayerMix& mix, bool mtp_here) {
  const double local_experts = m.experts / l.expert_parallel;
  ParameterTensors t;
  t.dense = 8 + mix.dense * 29 + mix.moe * 31;
  t.expert = mix.moe * 4 * local_experts;
  if (mtp_here) {
    const double layers = MtpBuiltLayers(m);
    t.dense += layers * ((MtpLayerIsMoe(m) ? 31 : 29) + 10);
    if (MtpLayerIsMoe(m)) t.expert += layers * 4 * local_experts;
  }
  return t;
}

// [BP] Of them, the GEMMs' weights and the vocabulary's matrices, each of
// which may close a bucket (the others' elements, norms', biases' and the
// router's, are few): the embeddings and the LM head, each layer's GEMM
// weights, an MTP layer's with its projection and its embedding's and
// head's copies; the routed experts' in the expert buffer.
ParameterTensors LargeParameterTensorsOf(const ModelShape& m,
                                         const Layout& l, const LayerMix& mix,
                                         bool mtp_here) {
  ParameterTensors t;
  t.dense = 3 + mix.dense * GemmsInLayer(m, l, false) +
            mix.moe * (AttentionGemms(m) + SharedExpertGemms(m));
  t.expert = mix.moe * RoutedExpertGemms(m, l);
  if (mtp_here) {
    const double layers = MtpBuiltLayers(m);
    t.dense += layers * (GemmsInLayer(m, l, false) + 3);
    if (MtpLayerIsMoe(m)) t.expert += layers * RoutedExpertGemms(m, l);
  }
  return t;
}

// [OS] The elements of a stage's matrices, the parameters Lion (from core
// 0.18.0 on) and Muon [MU] train (emerging_optimizers.py
// _is_nonlinear_or_embedding, _is_muon_excluded: two dimensions and not
// is_embedding_or_output_parameter, which language_module.py sets on the
// word embeddings, MTP's copy and the LM head): each layer's GEMM
// weights, an MoE layer's router (and its shared experts' 1 x h gate,
// shared_experts.py gate_weight), the routed experts' FC1 and FC2
// weights, an MTP layer's projection and a learned position embedding.
// The rest (norms, biases, softmax sinks, the vocabulary's matrices)
// Megatron trains with Adam (Muon: --muon-scalar-optimizer).
ParameterTensors MatrixElementsOf(const ModelShape& m, const Layout& l,
                                  const LayerMix& mix, bool first,
                                  bool mtp_here) {
  const double routed = m.experts / l.expert_parallel * Gated(m) *
                        m.hidden * ExpertFfn(m) / l.expert_tensor;
  auto moe_layer = [&] {
    const double gate = m.shared_gate && m.shared_ffn > 0 ? m.hidden : 0;
    return LinearWeightParameters(m, l, true) - RoutedExpertParameters(m, l) +
           m.hidden * m.experts + gate;
  };
  ParameterTensors e;
  if (first) e.dense += m.learned_positions * m.hidden;
  if (mix.dense > 0) e.dense += mix.dense * LinearWeightParameters(m, l, false);
  if (mix.moe > 0) {
    e.dense += mix.moe * moe_layer();
    e.expert += mix.moe * routed;
  }
  if (mtp_here) {
    const double layers = MtpBuiltLayers(m);
    const bool moe = MtpLayerIsMoe(m);
    e.dense += layers * (2 * m.hidden * m.hidden / l.tensor +
                         (moe ? moe_layer() : LinearWeightParameters(m, l,
                                                                    false)));
    if (moe) e.expert += layers * routed;
  }
  return e;
}

// [BP] Elements of padding in one of DDP's buffers under the distributed
// optimizer: below 64 before each tensor, and below lcm(DP, 128) (2^16
// too with --ddp-pad-buckets-for-high-nccl-busbw) at each bucket's end.
// A bucket closes once it holds bucket_size elements, at a tensor's end,
// so the closed buckets are at most the sum over tensors of min(1, size /
// bucket_size): at most T, N / bucket_size, and L + S / bucket_size for
// L large tensors and S elements of the others; one more is left open;
// `extra_buckets` more (the other model chunks' one each, a shared
// embedding's own and the one it splits).
//
// `large_tensors` and `small_elements` are asked for only where they can
// lower the count (more buckets than a layer's weights fill): they cost a
// layer's weights, and this runs for every stage the planner estimates.
double BufferPaddingElements(const Layout& l, double numel, double tensors,
                             absl::FunctionRef<double()> large_tensors,
                             absl::FunctionRef<double()> small_elements,
                             double data_parallel, double bucket_size,
                             double extra_buckets) {
  if (numel <= 0) return 0;
  const uint64_t dp =
      std::max<uint64_t>(1, static_cast<uint64_t>(data_parallel + 0.5));
  // lcm(DP, P) for P a power of two (128 divides 2^16): DP over its
  // largest power-of-two factor up to P, times P.
  const uint64_t power = l.pad_buckets_for_high_busbw ? uint64_t{1} << 16
                                                      : uint64_t{128};
  const uint64_t divisor = dp / std::min(dp & (~dp + 1), power) * power;
  double buckets = 1;
  if (bucket_size >= 1) {  // bucketed
    buckets = std::min(tensors, std::floor(numel / bucket_size));
    // At Megatron's bucket sizes (4e7 elements and more) a stage's weights
    // fill a few buckets, below one a layer, which the large tensors
    // (several a layer) cannot lower.
    if (buckets > 3 + tensors / 29) {
      const double large = large_tensors();
      if (buckets > large) {
        buckets = std::min(
            buckets, large + std::floor(small_elements() / bucket_size));
      }
    }
    buckets += 1;
  } else if (bucket_size >= 0) {  // a bucket at every tensor
    buckets = tensors + 1;
  }
  return 63 * tensors +
         (buckets + extra_buckets) * static_cast<double>(divisor - 1);
}

// [DS] What a stage's fp8 modules keep for delayed scaling: 5
// quantizers a GEMM, each a history and a scale; an MTP layer's GEMMs and
// its h x 2h projection's where the stage holds MTP.
double DelayedScalingStateBytes(const ModelShape& m, const Layout& l,
                                const LayerMix& mix, bool mtp_here) {
  double gemms = 0;
  if (mix.dense > 0) gemms += mix.dense * GemmsInLayer(m, l, false);
  if (mix.moe > 0) gemms += mix.moe * GemmsInLayer(m, l, true);
  if (mtp_here) {
    gemms += MtpBuiltLayers(m) * (GemmsInLayer(m, l, MtpLayerIsMoe(m)) + 1);
  }
  return 5 * DelayedScalingQuantizerBytes(l) * gemms;
}

// [DS] The copies recomputation keeps of its modules' forward histories
// and scales (3 quantizers a GEMM), from a micro-batch's forward to its
// backward: for each micro-batch (interleaved: model chunk) in flight,
// the recomputed GEMMs of the rank's heaviest chunk (block recomputation:
// its first N layers, counted as its GEMM-heaviest), and the MTP layers'
// under full recomputation (an upper bound: the last chunk's share).
double DelayedScalingRecomputeCopies(const ModelShape& m, const Layout& l,
                                     uint32_t stage, const LayerMix& mix,
                                     const std::vector<LayerMix>* chunks,
                                     bool mtp_here) {
  if (l.recompute == RecomputeKind::kNone) return 0;
  const double dense = Fp8RecomputedGemmsInLayer(m, l, false);
  const double moe = mix.moe > 0 ? Fp8RecomputedGemmsInLayer(m, l, true) : 0;
  auto chunk_gemms = [&](const LayerMix& c) {
    if (l.recompute != RecomputeKind::kFullBlock) {
      return c.dense * dense + c.moe * moe;
    }
    const double recomputed = std::min(l.recompute_layers, c.total());
    const double heavy = std::min(recomputed, moe > dense ? c.moe : c.dense);
    return heavy * std::max(dense, moe) +
           (recomputed - heavy) * std::min(dense, moe);
  };
  double gemms = 0;
  if (chunks != nullptr) {
    for (const LayerMix& c : *chunks) gemms = std::max(gemms, chunk_gemms(c));
  } else {
    gemms = chunk_gemms(
        {mix.dense / l.virtual_stages, mix.moe / l.virtual_stages});
  }
  if (mtp_here && l.recompute != RecomputeKind::kSelective) {
    gemms += MtpBuiltLayers(m) * (GemmsInLayer(m, l, MtpLayerIsMoe(m)) + 1);
  }
  return MicrobatchesInFlight(l, stage) * 3 *
         DelayedScalingQuantizerBytes(l) * gemms;
}

// A stage of `base`'s layout; `loaded`, where there is one, the same
// layout under the most loaded expert-parallel rank's load (LayoutStages).
// `final_norm_chunk`: the chunk whose final norm [FN] this stage keeps, -1
// for none.
StageFigures StageFiguresOf(LayerCache& base, LayerCache* loaded,
                            uint32_t stage, const LayerMix& mix,
                            const std::vector<LayerMix>* chunks,
                            const std::vector<LayerSpan>& spans,
                            const Bf16Layers* bf16 = nullptr,
                            double final_norm_chunk = -1) {
  const ModelShape& m = base.m;
  const Layout& l = base.l;
  const bool first = stage == 0;
  const bool last = stage + 1 >= l.pipeline;
  const bool mtp_here = HoldsMtp(m, l, stage);
  const double vocab_shard = m.hidden * VocabRows(m, l.tensor) / l.tensor;
  const double stage_layers = mix.total();

  // Parameters held [P 3.1]: the embedding (and a learned position
  // embedding, replicated over t) on the first stage, the LM head and
  // final norm on the last; one stage holds both (tied: one matrix). MoE
  // layers' routed experts are counted apart: they shard differently [TM].
  // (MoE terms only where there are MoE layers, dense ones only where
  // there are dense layers: this runs per layout in the planner's inner
  // loop.)
  double params =
      mix.dense > 0 ? mix.dense * base.Parameters(false).parameters : 0;
  double expert_params = 0;
  if (mix.moe > 0) {
    const LayerKindFigures& moe = base.Parameters(true);
    params += mix.moe * moe.parameters;
    expert_params = mix.moe * moe.routed_expert_parameters;
  }
  // The vocabulary's matrices among them (the embeddings, the LM head and
  // MTP's copy), which [BP] tells from the small tensors.
  double vocabulary = 0;
  if (first) vocabulary += vocab_shard + m.learned_positions * m.hidden;
  if (last) params += NormParameters(m);
  // [FN] With MTP, the final norm's weights are the last decoder layer's
  // chunk's (the last stage's count left: h parameters over).
  if (final_norm_chunk >= 0) params += NormParameters(m);
  if (last && !(first && m.tied_embeddings)) vocabulary += vocab_shard;
  if (mtp_here) {
    params +=
        MtpParameters(m, l, base.Parameters(MtpLayerIsMoe(m)).parameters);
    if (MtpLayerIsMoe(m)) {
      expert_params += MtpBuiltLayers(m) * RoutedExpertParameters(m, l);
    }
    // MTP embeds the next tokens with an embedding of its own on any stage
    // but the first, tied or not: Megatron's gpt_model.py builds `embedding`
    // where mtp_process ("we also need to maintain duplicated embedding
    // weights in mtp process stage", language_module.py
    // setup_embeddings_and_output_layer). Tied, the output layer off the
    // first stage still allocates its weight (skip_weight_param_allocation
    // is pre_process and tied) though the forward passes the embedding's
    // (shared_embedding_or_output_weight): both are parameters, with
    // gradients and optimizer states. Untied, the same two matrices.
    // Standalone, the MTP chunk is a model chunk of its own: its copy even
    // on the first rank.
    if (!first || MtpStandalone(m, l)) vocabulary += vocab_shard;
  }
  params += vocabulary;

  StageFigures f;
  f.parameters = params + expert_params;
  const double shards = l.data * l.context;  // the d*c data-parallel ranks
  // Expert states shard over the expert-data-parallel group:
  // world / (ETP x EP x PP) = t*c*d / (ETP x EP) ranks [TM].
  const double expert_shards =
      l.tensor * l.context * l.data / (l.expert_tensor * l.expert_parallel);
  const bool shard_params = l.sharding == FsdpSharding::kOptimGradsParams;
  const bool shard_grads =
      shard_params || l.sharding == FsdpSharding::kOptimGrads;
  const bool shard_optimizer =
      l.sharding == FsdpSharding::kNone ? l.distributed_optimizer
                                        : l.sharding != FsdpSharding::kNoShard;
  // Megatron-FSDP holds some units (a layer, the embedding, the LM head)
  // un-sharded beside the shards, for weights and for gradients [MF, MFC].
  const FsdpUnsharded unsharded =
      shard_grads
          ? FsdpUnshardedParameters(m, l, stage, stage_layers, params)
          : FsdpUnsharded();
  const double weight_bytes = WeightBytesPerParameter(l.precision);
  f.weight_bytes = shard_params
                       ? weight_bytes * (params / shards + unsharded.weights)
                       : weight_bytes * (params + expert_params);
  if (l.fp8) {
    double linear =
        mix.dense > 0 ? mix.dense * LinearWeightParameters(m, l, false) : 0;
    if (mix.moe > 0) linear += mix.moe * LinearWeightParameters(m, l, true);
    if (mtp_here) {
      // Each MTP layer built: its transformer layer and its h x 2h
      // projection.
      linear += MtpBuiltLayers(m) *
                (LinearWeightParameters(m, l, MtpLayerIsMoe(m)) +
                 2 * m.hidden * m.hidden / l.tensor);
    }
    f.weight_bytes += Fp8WeightCopyBytesPerParameter(l) * linear;
    // [TE] --fp8-output-proj: the LM head is a TransformerEngine Linear in
    // MXFP8 (gpt_model.py TELMHeadColumnParallelLinear) and caches its
    // weight's fp8 pair; whether fp8_model_init makes it an fp8 parameter
    // is not read, so the pair is counted beside the bf16 weight (an upper
    // bound), as is the head's input, saved in fp8 by TE (counted in bf16).
    if (last && l.fp8_output_projection) {
      f.weight_bytes += 2 * (1 + l.fp8_weight_scale_bytes) * vocab_shard;
    }
  }
  const double gradient_bytes = LayoutGradientBytes(l);
  // [LW] Lion or Muon under the layer-wise distributed optimizer: its
  // matrices in buffers of their own, padded to DP x a bucket's fullest
  // shard; the rest (norms, biases, the vocabulary's matrices) in the
  // plain distributed optimizer's.
  const bool layer_wise = l.layer_wise();
  LayerWiseFigures lw;
  if (layer_wise) {
    const LayerWiseStage lw_stage{spans, first, mtp_here,
                                  params + expert_params};
    lw = base.figures.layer_wise != nullptr
             ? base.figures.layer_wise->FiguresOf(m, l, lw_stage)
             : LayerWiseFiguresOf(m, l, lw_stage);
  }
  const double plain_buffer =
      layer_wise ? std::max(0.0, params - lw.matrix_elements) : 0;
  // [BP] The distributed optimizer's padding of the gradient and parameter
  // buffers (dense, and the experts' over their own data-parallel group).
  double padding = 0;
  if (l.distributed_optimizer && l.sharding == FsdpSharding::kNone) {
    const ParameterTensors tensors = ParameterTensorsOf(m, l, mix, mtp_here);
    // Bucketed (>= 0) on the first rank's first chunk, under
    // --overlap-grad-reduce (counted so without it too, where Megatron
    // makes one bucket: an upper bound): --ddp-num-buckets splits the
    // rank's parameters, else --ddp-bucket-size or max(4e7, 1e6 x d x c).
    double bucket_size = -1;
    if (first) {
      bucket_size =
          l.ddp_num_buckets > 0
              ? std::floor((params + expert_params) / l.ddp_num_buckets)
          : l.ddp_bucket_size > 0
              ? l.ddp_bucket_size
              : std::max(4e7, 1e6 * l.data * l.context);
    }
    // The other chunks' one bucket each; a tied (shared) embedding's own
    // and the one it splits, on the stages that hold it or MTP's copy.
    double extra = l.virtual_stages - 1;
    if (m.tied_embeddings && l.pipeline > 1 && (first || last || mtp_here)) {
      extra += 4;
    }
    // fp8 parameters in a uint8 buffer of their own.
    if (l.fp8_param_gather) extra += 1;
    // The small tensors' elements: all but what the large ones hold, the
    // layers' GEMM weights and the vocabulary's matrices (MTP's layer
    // counted among the small: a looser bound).
    auto dense_small = [&] {
      double large = vocabulary;
      if (mix.dense > 0) {
        large += mix.dense * LinearWeightParameters(m, l, false);
      }
      if (mix.moe > 0) {
        large += mix.moe * (LinearWeightParameters(m, l, true) -
                            RoutedExpertParameters(m, l));
      }
      return std::max(0.0, params - large);
    };
    auto expert_small = [&] {
      return std::max(0.0, expert_params - mix.moe * m.experts /
                                               l.expert_parallel * Gated(m) *
                                               m.hidden * ExpertFfn(m) /
                                               l.expert_tensor);
    };
    auto large = [&] { return LargeParameterTensorsOf(m, l, mix, mtp_here); };
    // [LW] The plain buffer holds what the layer-wise ones do not (its
    // tensors counted as all the stage's: an upper bound; no expert
    // parameter), and those are padded as they are packed.
    padding = BufferPaddingElements(
        l, layer_wise ? plain_buffer : params, tensors.dense,
        [&] { return large().dense; },
        [&] {
          return layer_wise ? std::max(0.0, plain_buffer - vocabulary)
                            : dense_small();
        },
        l.data * l.context / l.optimizer_instances, bucket_size, extra);
    if (layer_wise) {
      padding += lw.buffer_elements - lw.matrix_elements -
                 lw.expert_matrix_elements;
    } else if (expert_params > 0) {
      padding += BufferPaddingElements(
          l, expert_params, tensors.expert, [&] { return large().expert; },
          expert_small, expert_shards / l.optimizer_instances, bucket_size,
          extra);
    }
    f.weight_bytes += weight_bytes * padding;
    f.padding_elements = padding;
  }
  f.gradient_bytes = shard_grads
                         ? gradient_bytes * (params / shards +
                                             unsharded.gradients)
                         : (gradient_bytes +
                            LocalAccumulationBytesPerParameter(l)) *
                                   (params + expert_params) +
                               gradient_bytes * padding;
  // The distributed optimizer shards its states over d*c ranks [P 3.1.4],
  // or over d*c/N with N instances of it [DO]; a CPU-offloaded share of
  // them lives in host memory [PA].
  double optimizer_parameters =
      shard_optimizer ? (params / shards + expert_params / expert_shards) *
                            l.optimizer_instances
                      : params + expert_params;
  f.optimizer_bytes = OptimizerBytesPerParameter(l) *
                      (1 - l.optimizer_offload) * optimizer_parameters;
  if (layer_wise) {
    // [LW] A rank's whole matrices (fp32 master and momentum), and its
    // shard of the plain optimizer's (their scalar optimizer's states:
    // Adam's second moment where ScalarAdamBytes says).
    const double plain_share = plain_buffer / shards;
    optimizer_parameters = lw.owned_elements + plain_share;
    f.optimizer_bytes =
        OptimizerBytesPerParameter(l) * lw.owned_elements +
        (OptimizerBytesPerParameter(l) + ScalarAdamBytes(l)) * plain_share;
  }
  // [OS] Lion (without the distributed optimizer: every parameter of the
  // stage) leaves the parameters that are not matrices, and the word
  // embeddings and LM head, to Adam from core 0.18.0 on: 4 B more each
  // (LionScalarOptimizerOf; counted so where the release is not known).
  // [MU] So does Muon, to its --muon-scalar-optimizer: Adam's 4 B more
  // than its momentum, Lion's none.
  if (ScalarAdamBytes(l) > 0 && !layer_wise) {
    const ParameterTensors matrices =
        MatrixElementsOf(m, l, mix, first, mtp_here);
    f.optimizer_bytes +=
        ScalarAdamBytes(l) *
        (std::max(0.0, params - matrices.dense) +
         std::max(0.0, expert_params - matrices.expert));
  }

  double freed_before_embedding_gradient = 0;
  LayerCache* const lanes[kMaxLanes] = {&base, loaded};
  double activations[kMaxLanes] = {};
  if (loaded != nullptr) {
    StageActivationsOfLanes<2>(lanes, stage, mix, chunks, bf16, activations,
                               &freed_before_embedding_gradient);
  } else {
    StageActivationsOfLanes<1>(lanes, stage, mix, chunks, bf16, activations,
                               &freed_before_embedding_gradient);
  }
  if (final_norm_chunk >= 0) {
    const double norm = FinalNormInputBytes(m, l, stage, final_norm_chunk);
    for (int k = 0; k < (loaded != nullptr ? 2 : 1); ++k) {
      activations[k] += norm;
    }
  }
  if (l.fp8_amax_history > 0) {
    // [DS] the fp8 modules' histories with the weights they scale; the
    // recomputed ones' copies with each micro-batch's activations.
    f.weight_bytes += DelayedScalingStateBytes(m, l, mix, mtp_here);
    const double copies =
        DelayedScalingRecomputeCopies(m, l, stage, mix, chunks, mtp_here);
    for (int k = 0; k < (loaded != nullptr ? 2 : 1); ++k) {
      activations[k] += copies;
    }
  }
  f.activation_bytes = activations[0];
  // [UA] [GA] The scores buffer: (b x a/t, s, s) in the query's dtype
  // (dot_product_attention.py: get_global_memory_buffer().get_tensor(...,
  // query.dtype, "mpu")), allocated by a rank's first attention layer and
  // kept for the run.
  const bool has_attention = mix.total() > 0 || mtp_here;
  if (l.unfused_attention && has_attention &&
      UnfusedAttentionKeeps(m, l).scores_buffer) {
    f.score_buffer_bytes =
        2 * ActivationElementScale(l) * AttentionScores(m, l);
  }
  if (last) {
    f.loss_gradient_cast_bytes = LossGradientCastBytes(m, l);
    f.output_weight_gradient_bytes = OutputWeightGradientBytes(m, l);
  }
  if (first) {
    // One stage holds one micro-batch, all of whose activations are freed
    // by the embedding's backward; a pipeline's first stage frees one
    // micro-batch's layers of its first chunk.
    f.embedding_gradient_bytes = EmbeddingGradientBytes(
        m, l, last ? f.activation_bytes : freed_before_embedding_gradient);
  }
  if (mtp_here && MtpStandalone(m, l)) {
    // [EG] A standalone MTP chunk's embedding makes its dense gradient
    // after the MTP layers' backward freed one micro-batch's activations;
    // no loss's logits were freed before it on this rank (beside the loss
    // they outweigh it: EmbeddingGradientBytes). The larger of the two on
    // a first rank that holds both.
    const double freed = MtpActivations(
        m, l, base.Kind(MtpLayerIsMoe(m)).full);
    f.embedding_gradient_bytes = std::max(f.embedding_gradient_bytes,
                                          EmbeddingGradientBytes(m, l, freed));
  }
  // DeepEP allocates its buffers at a rank's first dispatch: on the GPUs
  // of stages that hold an MoE layer (the MTP layer included).
  const bool dispatches = mix.moe > 0 || (mtp_here && MtpLayerIsMoe(m));
  if (l.deepep_dispatcher && dispatches) {
    f.buffer_bytes = DeepEpBufferBytes(
        m.hidden, 2 * ActivationElementScale(l),
        static_cast<uint32_t>(l.expert_parallel * l.expert_tensor),
        static_cast<uint32_t>(l.deepep_sms));
  }
  // TransformerEngine's userbuffers: allocated at start-up on every rank
  // of the job, whatever its stage holds [UB].
  if (l.tp_comm_overlap) {
    TeUserbufferShape ub;
    ub.tokens = l.seq_length * l.micro_batch / l.context;
    ub.hidden = m.hidden;
    ub.tensor_parallel = static_cast<uint32_t>(l.tensor);
    ub.world_size =
        static_cast<uint64_t>(l.tensor * l.context * l.pipeline * l.data);
    // Megatron quantizes them by --fp8-format (training/initialize.py
    // _initialize_tp_communicators): under fp4 one unquantized set [F4].
    ub.fp8 = l.fp8 && !l.nvfp4;
    ub.custom_config = l.tp_comm_overlap_custom;
    f.te_userbuffer_bytes = TeUserbufferBytes(ub);
    if (HasBf16Layers(l) && ub.fp8) {
      // The bf16 layers' own, unquantized set [F8L].
      ub.fp8 = false;
      f.te_userbuffer_bytes += TeUserbufferBytes(ub);
    }
    f.buffer_bytes += f.te_userbuffer_bytes;
  }
  if (l.rs_fp32_accumulation) {
    // [RSA] a scratch copy of the stage's whole gradient buffer (dense and
    // expert), from the last micro-batch's backward on: by then 1F1B has
    // freed every other micro-batch's activations, which the scratch does
    // not add to. Interleaved (a chunk's sync starts while other chunks
    // still hold micro-batches) or with the deferred embedding wgrad (kept
    // to the flush), it is counted whole.
    const double scratch =
        LayoutGradientBytes(l) * (params + expert_params + padding);
    double outlived = 0;
    if (l.virtual_stages <= 1 && !l.defer_embedding_wgrad) {
      outlived = f.activation_bytes -
                 OneMicrobatchActivations(m, l, stage, mix, chunks, bf16);
    }
    f.gradient_scratch_bytes = std::max(0.0, scratch - outlived);
    f.buffer_bytes += f.gradient_scratch_bytes;
  }
  if (loaded != nullptr) {
    f.imbalance_bytes = activations[1] - f.activation_bytes;
  }
  // [OS] Lion's update is one parameter's: bounded by a layer's linear
  // weights together (the routed experts' as one grouped weight), a
  // learned position embedding or, where Lion trains it, the
  // vocabulary's shard, on the stages that hold an embedding or LM head.
  double largest_parameter = 0;
  if (l.optimizer == v1::OPTIMIZER_LION) {
    if (mix.dense > 0 || (mtp_here && !MtpLayerIsMoe(m))) {
      largest_parameter = LinearWeightParameters(m, l, false);
    }
    if (mix.moe > 0 || (mtp_here && MtpLayerIsMoe(m))) {
      largest_parameter = std::max(largest_parameter,
                                   LinearWeightParameters(m, l, true));
    }
    // Adam's (multi-tensor, in place) from core 0.18.0 on; a learned
    // position embedding stays Lion's.
    if ((first || last || mtp_here) &&
        l.lion_scalars != LionScalarOptimizer::kAdam) {
      largest_parameter = std::max(largest_parameter, vocab_shard);
    }
    if (first) {
      largest_parameter =
          std::max(largest_parameter, m.learned_positions * m.hidden);
    }
  }
  double update = LionUpdateBytes(l, largest_parameter);
  if (l.optimizer == v1::OPTIMIZER_MUON) {
    // [MU] Muon's matrices one at a time; a Lion that trains the
    // vocabulary's shard makes its update too.
    update = MuonStepBytes(
        m, l, {mix, first, mtp_here ? MtpBuiltLayers(m) : 0, MtpLayerIsMoe(m)});
    if (l.muon_scalar_lion && (first || last || mtp_here)) {
      update = std::max(update, 2 * 4 * vocab_shard);
    }
  }
  // The step follows the last backward: every activation is freed by
  // then, under the most loaded expert rank's load too.
  const double copies = Fp32GradientCopyBytes(l, optimizer_parameters);
  f.optimizer_step_bytes = std::max(
      0.0, copies + update - f.activation_bytes - f.imbalance_bytes);
  // [EV] The copies outlive the step until the next one's zero_grad, and
  // an evaluation runs between, under the most loaded rank's load where
  // there is one. Where nothing is copied, one of the training's own
  // micro-batches holds more than an evaluation's of the same size: only
  // a larger one is worked out (so the planner's inner loop pays for it
  // only there).
  if (l.eval_micro_batch > 0 &&
      (copies > 0 || l.eval_micro_batch > l.micro_batch)) {
    const LayerCache& lane = loaded != nullptr ? *loaded : base;
    f.evaluation_bytes = std::max(
        0.0, copies + EvaluationActivations(lane, stage, mix, chunks, bf16) -
                 f.activation_bytes - f.imbalance_bytes);
  }
  return f;
}

// An even interleaved split under fp8 with bf16 layers: chunk j of this
// rank is the model's chunk j p + stage, whose position says its bf16
// layers [F8L] (rank 0's first chunk, which holds the most micro-batches,
// the first ones); dense and MoE layers spread evenly, as without bf16
// layers. Apart from StageMemoryOf, which the planner's inner loop calls:
// its chunk vector stays off that path.
StageFigures InterleavedBf16StageFigures(LayerCache& base, LayerCache* loaded,
                                         uint32_t stage, const LayerMix& mix,
                                         const std::vector<LayerSpan>& spans) {
  const ModelShape& m = base.m;
  const Layout& l = base.l;
  const double v = l.virtual_stages;
  const double chunk = mix.total() / v;
  const std::vector<LayerMix> chunks(static_cast<size_t>(v),
                                     LayerMix{mix.dense / v, mix.moe / v});
  Bf16Layers bf16;
  bf16.chunks.reserve(chunks.size());
  for (double j = 0; j < v; ++j) {
    bf16.chunks.push_back(
        Bf16LayersIn(m, l, (j * l.pipeline + stage) * chunk, chunk));
    bf16.stage += bf16.chunks.back();
  }
  return StageFiguresOf(base, loaded, stage, mix, &chunks, spans, &bf16);
}

}  // namespace

LayoutStages::LayoutStages(const ModelShape& m, const Layout& l)
    : LayoutStages(m, l, own_) {}

LayoutStages::LayoutStages(const ModelShape& m, const Layout& l,
                           LayoutLayerFigures& kept)
    : m_(m), l_(l), figures_(kept) {
  // Dropless routing: the most loaded expert-parallel rank receives more
  // than its share; admission counts that margin above the estimate, never
  // more than routing can send one rank (none with EP = 1: measured on a
  // real Megatron-Core MoE, bench/RESULTS.md).
  if (m.experts > 0 && l.expert_load == 1) {
    const double most_loaded =
        std::min<double>(l.load_imbalance, MaxExpertLoad(m, l));
    if (most_loaded > 1) {
      loaded_layout_.emplace(l).expert_load = most_loaded;
    }
  }
}

StageFigures LayoutStages::Stage(uint32_t stage, double stage_layers,
                                 double first_layer) {
  const ModelShape& m = m_;
  const Layout& l = l_;
  LayerCache base{m, l, figures_.routed};
  LayerCache loaded{m, loaded_layout_ ? *loaded_layout_ : l, figures_.loaded};
  LayerCache* most_loaded = loaded_layout_ ? &loaded : nullptr;
  if (first_layer < 0) first_layer = stage * stage_layers;
  const double moe = MoeLayersIn(m, first_layer, stage_layers);
  const LayerMix mix{stage_layers - moe, moe};
  // [LW] The rank's chunks as layer ranges: chunk j of an even interleaved
  // split is the model's chunk j p + stage.
  std::vector<LayerSpan> spans;
  if (l.layer_wise()) {
    const double v = std::max(1.0, l.virtual_stages);
    const double chunk = stage_layers / v;
    for (double j = 0; j < v; ++j) {
      spans.push_back(
          {v > 1 ? (j * l.pipeline + stage) * chunk : first_layer, chunk});
    }
  }
  // [FN] Interleaved even chunks end the model on the last rank.
  const double final_norm_chunk =
      l.virtual_stages <= 1 && KeepsFinalNorm(m, l, stage, stage_layers,
                                              first_layer, true)
          ? 0
          : -1;
  if (HasBf16Layers(l)) {
    if (l.virtual_stages > 1) {
      return InterleavedBf16StageFigures(base, most_loaded, stage, mix,
                                         spans);
    }
    Bf16Layers bf16;
    bf16.stage = Bf16LayersIn(m, l, first_layer, stage_layers);
    return StageFiguresOf(base, most_loaded, stage, mix, nullptr, spans,
                          &bf16, final_norm_chunk);
  }
  return StageFiguresOf(base, most_loaded, stage, mix, nullptr, spans,
                        nullptr, final_norm_chunk);
}

ChunkMix ChunkMixOf(const ModelShape& m,
                    const std::vector<double>& chunk_layers,
                    const std::vector<double>& chunk_first) {
  ChunkMix mix;
  mix.chunks.reserve(chunk_layers.size());
  mix.first.reserve(chunk_layers.size());
  for (size_t j = 0; j < chunk_layers.size(); ++j) {
    const double first = j < chunk_first.size() ? chunk_first[j] : 0;
    const double moe = MoeLayersIn(m, first, chunk_layers[j]);
    mix.chunks.push_back(LayerMix{chunk_layers[j] - moe, moe});
    mix.first.push_back(first);
    mix.stage.dense += mix.chunks.back().dense;
    mix.stage.moe += moe;
  }
  return mix;
}

StageFigures LayoutStages::Chunks(uint32_t stage, const ChunkMix& mix) {
  const ModelShape& m = m_;
  const Layout& l = l_;
  LayerCache base{m, l, figures_.routed};
  LayerCache loaded{m, loaded_layout_ ? *loaded_layout_ : l, figures_.loaded};
  LayerCache* most_loaded = loaded_layout_ ? &loaded : nullptr;
  const double final_norm_chunk =
      FinalNormChunk(m, l, stage, mix.chunks, mix.first);
  std::vector<LayerSpan> spans;
  if (l.layer_wise()) {
    for (size_t j = 0; j < mix.chunks.size(); ++j) {
      spans.push_back({mix.first[j], mix.chunks[j].total()});
    }
  }
  if (HasBf16Layers(l)) {
    // A chunk without its first layer given is placed at layer 0: every
    // such chunk counts the first bf16 layers (an over-count).
    Bf16Layers bf16;
    bf16.chunks.reserve(mix.chunks.size());
    for (size_t j = 0; j < mix.chunks.size(); ++j) {
      bf16.chunks.push_back(
          Bf16LayersIn(m, l, mix.first[j], mix.chunks[j].total()));
      bf16.stage += bf16.chunks.back();
    }
    return StageFiguresOf(base, most_loaded, stage, mix.stage, &mix.chunks,
                          spans, &bf16, final_norm_chunk);
  }
  return StageFiguresOf(base, most_loaded, stage, mix.stage, &mix.chunks,
                        spans, nullptr, final_norm_chunk);
}

StageFigures LayoutStages::Chunks(uint32_t stage,
                                  const std::vector<double>& chunk_layers,
                                  const std::vector<double>& chunk_first) {
  return Chunks(stage, ChunkMixOf(m_, chunk_layers, chunk_first));
}

StageFigures StageMemoryOf(const ModelShape& m, const Layout& l,
                           uint32_t stage, double stage_layers,
                           double first_layer) {
  return LayoutStages(m, l).Stage(stage, stage_layers, first_layer);
}

StageFigures StageMemoryOfChunks(const ModelShape& m, const Layout& l,
                                 uint32_t stage,
                                 const std::vector<double>& chunk_layers,
                                 const std::vector<double>& chunk_first) {
  return LayoutStages(m, l).Chunks(stage, chunk_layers, chunk_first);
}

PeakRanks MiddlePeakRanks(uint32_t pipeline, uint32_t boundary) {
  PeakRanks ranks;
  if (pipeline < 3) return ranks;
  for (uint64_t r : {uint64_t{1}, uint64_t{boundary}, uint64_t{boundary} + 1}) {
    if (r < 1 || r > pipeline - 2) continue;
    if (ranks.count > 0 && ranks.rank[ranks.count - 1] >= r) continue;
    ranks.rank[ranks.count++] = static_cast<uint32_t>(r);
  }
  return ranks;
}

uint32_t RankHoldingLayer(double layer, double first, double middle,
                          double round, uint32_t pipeline) {
  const double within = round > 0 ? std::fmod(layer, round) : layer;
  if (within < first || middle <= 0) return 0;
  return static_cast<uint32_t>(std::min<double>(
      pipeline - 1, 1 + std::floor((within - first) / middle)));
}

StagePeak PeakOfEvenStages(const ModelShape& m, const Layout& l) {
  LayoutLayerFigures figures;
  return PeakOfEvenStages(m, l, figures,
                          [](const StagePeak&) { return false; });
}

StagePeak PeakOfEvenStages(
    const ModelShape& m, const Layout& l, LayoutLayerFigures& kept,
    absl::FunctionRef<bool(const StagePeak&)> enough) {
  const double stage_layers = m.layers / l.pipeline;
  LayoutStages stages(m, l, kept);
  StagePeak peak;
  peak.Add(stages.Stage(0, stage_layers));
  if (l.pipeline <= 1 || enough(peak)) return peak;
  const uint32_t last_stage = static_cast<uint32_t>(l.pipeline) - 1;
  peak.Add(stages.Stage(last_stage, stage_layers));
  if (enough(peak)) return peak;
  // [F8L] Interleaved, bf16 layers beyond a chunk's worth spill into the
  // next ranks' chunks: the first bf16_first_layers fill virtual stages 0,
  // 1, ... (ranks 0, 1, ...), the last ones virtual stages p v - 1, p v -
  // 2, ... (ranks p - 1, p - 2, ...), up to v ranks at either end (Megatron
  // allows L / p of them). Each rank that holds one is evaluated: one with
  // fewer micro-batches in flight can still peak for them.
  if (HasBf16Layers(l) && l.pipeline > 2) {
    const double chunk = stage_layers / std::max(1.0, l.virtual_stages);
    const double p = l.pipeline;
    // Ranks [1, front) and [back, p - 1).
    const double front = std::min<double>(
        last_stage, std::ceil(l.bf16_first_layers / chunk));
    const double back = std::max(
        front, p - std::min(p, std::ceil(l.bf16_last_layers / chunk)));
    for (double rank = 1; rank < front; ++rank) {
      peak.Add(stages.Stage(static_cast<uint32_t>(rank), stage_layers));
      if (enough(peak)) return peak;
    }
    for (double rank = std::max(1.0, back); rank < last_stage; ++rank) {
      peak.Add(stages.Stage(static_cast<uint32_t>(rank), stage_layers));
      if (enough(peak)) return peak;
    }
  }
  // With experts, the middle ranks that can peak (dense models: their
  // peak is below the first stage's, which holds more micro-batches and
  // the embedding).
  if (m.experts > 0) {
    const uint32_t p = static_cast<uint32_t>(l.pipeline);
    const double chunk = stage_layers / std::max(1.0, l.virtual_stages);
    const PeakRanks ranks = MiddlePeakRanks(
        p, RankHoldingLayer(m.leading_dense, chunk, chunk, chunk * p, p));
    for (uint32_t k = 0; k < ranks.count && !enough(peak); ++k) {
      peak.Add(stages.Stage(ranks.rank[k], stage_layers));
    }
  }
  return peak;
}

}  // namespace memgate
