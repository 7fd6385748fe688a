#include "estimator/moe_terms.h"

#include <algorithm>
#include <cmath>

// Sources:
// [TM] Megatron-LM megatron/training/theoretical_memory_usage.py: MoE and
//      MLA parameter counts (router h x E, shared experts, routed experts
//      2 x h x f x E x 3/2 gated; MLA's q/kv LoRA terms), and how they are
//      held: attention and shared experts over TP, routed experts over
//      ETP x EP, router and norms replicated.
// [MM] Megatron-LM megatron/core/transformer/moe/ (router.py: fp32 router
//      scores by default; token_dispatcher.py: alltoall / allgather / flex,
//      capacity and padding; experts.py) and multi_latent_attention.py
//      (down projections "duplicated").
// [PA] Where the routing probabilities weight the expert outputs.
//      Megatron-Core 0.12.0 and earlier: moe_utils.py unpermute(probs=...)
//      multiplies the expert outputs and keeps them for the probabilities'
//      gradient, on the tokens' rank after the all-to-all (token_
//      dispatcher.py MoEAlltoAllTokenDispatcher), on the experts' rank
//      with allgather and DeepEP. From ADLR/megatron-lm!2668 ("Memory
//      efficient token permutation", main 2025-04-09, core 0.12.1's
//      cherry-pick d5d00fdc87, core 0.13 and later) the dispatchers hand
//      the permuted probabilities to the experts and unpermute gets none:
//      the fused SwiGLU applies them (fused_bias_swiglu.py
//      WeightedSwiGLUFunction saves its input and the probabilities), an
//      unfused activation in a multiply after it, which keeps the
//      activation's output (experts.py bias_act_func, the legacy
//      GroupedMLP's activation_func_with_probs). --moe-apply-probs-on-input
//      weights the expert input instead, keeping the unweighted input.
// [K]  Korthikanti et al. 2022 section 4: an MLP stores its input and, per
//      token, 8 bytes per unit of (gated) FFN width in 16-bit training.
// [FS] Megatron-LM fused_bias_swiglu.py (SwiGLUFunction, BiasSwiGLUFunction:
//      ctx.save_for_backward(input), since core_r0.6.0) and mlp.py (the
//      dense MLP and SharedExpertMLP call bias_swiglu_impl when
//      config.bias_activation_fusion, which argument_utils.py sets from
//      --bias-swiglu-fusion, on by default, under --swiglu): the kernel
//      recomputes silu(x_glu) * x_linear in backward from the FC1 output it
//      saved. Measured: the census of real Megatron steps (session 7,
//      bench/gpu/results/h100_megatron_step.jsonl) found per dense layer
//      one [s, 2 h_ffn] and one [s, h_ffn] 16-bit tensor, 6 B a unit.
// [TA] TransformerEngine transformer_engine/pytorch/ops/basic/activation.py
//      (_ActivationOperation.op_forward: ctx.save_for_backward(x), its
//      input only), which Megatron's mlp.py runs in place of the fused
//      kernel under --use-te-activation-func (extensions/transformer_engine.py
//      TEActivationOp: te.pytorch.ops.SwiGLU for a gated silu); Megatron
//      raises unless bias_activation_fusion is off (transformer_config.py:
//      "bias_activation_fusion and use_te_activation_func cannot be both
//      true"). FC2 keeps the op's output: 6 B a unit, as [FS].
// [F8S] TransformerConfig.activation_func_fp8_input_store (set in code:
//      arguments.py excludes it from the command line; SwiGLU only, else
//      transformer_config.py raises):
//      fused_bias_swiglu.py saves input.to(torch.float8_e4m3fn), TE's op
//      its input through Float8CurrentScalingQuantizer (cache_quantized_
//      input): 1 B an element. The routed experts' fused TE grouped MLP
//      (experts.py _make_fused_ops, TE 2.14 and later, ETP 1) does not
//      pass the setting: their input stays counted at 16 bits.
// [QG] Megatron-LM mlp.py / moe/experts.py: with bias_activation_fusion
//      off (--quick-geglu without biases turns it off, arguments.py) the
//      gated activation runs as glu(x) = act(x_glu) * (x_linear +
//      glu_linear_offset), activations.py quick_gelu(x) =
//      x * sigmoid(1.702 x) under @jit_fuser (torch.compile from torch
//      2.2: the compiled function keeps only its input); autograd keeps
//      the product's operands. The
//      experts' glu() (TEGroupedMLP, core 0.15 on; the path of
//      interleaved halves) is the same with silu: x_linear + offset is a
//      tensor of its own (2 B a unit), which the legacy GroupedMLP's
//      act(x[0]) * x[1] does not make. With activation_func_clamp_value
//      both glu()s clamp the halves into new tensors, and the activation
//      keeps the clamped gate (2 B more); the fused kernels clamp inside.
// [QF] Megatron-LM fused_bias_geglu.py weighted_bias_quick_geglu_impl,
//      which TEGroupedMLP and SequentialMLP's expert MLPs run for a
//      quick-GeLU gate when the bias-activation fusion is on (biases on,
//      no --no-bias-gelu-fusion: arguments.py, argument_utils.py;
//      Megatron-Bridge's gpt-oss sets it): its autograd function keeps its
//      input, the FC1 output (4 B a unit), and weights by the
//      probabilities inside; FC2 keeps its own input (2): 6, the fused
//      SwiGLU's. With a clamp value the halves are clamped and re-joined
//      by torch.cat before the function, so the joined copy (4) is kept by
//      the function and the FC1 output by the clamps: 10. Inside the
//      moe_act checkpoint neither is kept.
// [GG] Gemma's gate under Megatron-Bridge (models/gemma/gemma_provider.py
//      and gemma2_provider.py: activation_func fast_gelu, gemma3's
//      openai_gelu, both jit_fuser = torch.compile functions of x alone):
//      mlp.py fuses only F.gelu and F.silu (bias_geglu_impl,
//      bias_swiglu_impl; any other raises under bias_activation_fusion),
//      so it runs glu() [QG]: FC1's output (4: both halves share its
//      storage), the compiled GeLU's output (2; it keeps only its input,
//      x_glu, already counted), x_linear + glu_linear_offset (2, core 0.15
//      on: an upper bound before) and FC2's input (2). (Under torch
//      before 2.2, where jit_fuser is torch.jit.script, the GeLU's own
//      intermediates are kept too: not counted.)
// [SG] Megatron-LM moe/shared_experts.py SharedExpertMLP.forward: with
//      --moe-shared-expert-gate, output * sigmoid(linear(x, gate_weight)),
//      whose multiply saves the shared MLP's output for the gate's
//      gradient; inside the shared_experts (or moe) checkpoint it is not
//      kept.
// [SO] Megatron-LM moe/shared_experts.py with --moe-shared-expert-overlap:
//      the linears' parallel_mode is None (no all-gather inside), and
//      pre_forward_comm gathers the input over the sequence-parallel
//      region into cached_fc1_input, which linear_fc1 saves for its
//      weight gradient: s x b / c tokens where the unshared path keeps
//      this rank's s x b / (t c).
// [IJ] Megatron-LM moe/router.py apply_input_jitter (--moe-input-jitter-
//      eps): input * Uniform(1 - eps, 1 + eps).rsample(input.shape); the
//      multiply keeps the noise (for the input's gradient) and the gating
//      GEMM (RouterGatingLinearFunction) its jittered input in place of
//      the pre-MLP norm's output, which it keeps without jitter (counted
//      with the layer). That output is then freed unless the shared
//      experts keep it too (their FC1's input): one tensor more without
//      shared experts, two beside them. Measured on an H100 (session 33):
//      T x h x 2 B a layer more, and twice that with shared experts.
// [SR] Megatron-LM activations.py: squared_relu(x) = pow(relu(x), 2)
//      under jit_fuser. Run eagerly, relu keeps its output and pow its
//      input (the same tensor, 2 B a unit of FFN); compiled, the fusion
//      keeps its input instead (the FC1 output, 2 B). Either way FC2
//      keeps its input (2 B): 4 B, GeLU's. Megatron fuses no bias into
//      it (mlp.py raises "Only support fusion of gelu and swiglu"), and
//      experts weight its output by the probabilities unfused
//      (experts.py), as GeLU experts.
// [F8] TransformerEngine under fp8 (module/linear.py, layernorm_linear.py,
//      grouped_linear.py): a GEMM quantizes its input and saves the fp8
//      tensor (1 B an element and its scales, Fp8ElementBytes) for the
//      weight gradient; the 16-bit input is freed unless another op saves
//      it. Megatron-LM runs every TE linear layer of a transformer layer,
//      its experts and its MTP layers in fp8 (fp8_utils.py
//      get_fp8_context; multi_token_prediction.py), never the router or
//      the LM head.
// [EB] Megatron-LM biases on MoE layers (--add-bias-linear, Megatron's
//      default; gpt-oss): router.py TopKRouter keeps a bias of E
//      (replicated); moe/experts.py TEGroupedMLP gives each local expert
//      FC1's bias (gated: 2 x its width, over ETP), added inside the
//      grouped GEMM (skip_bias_add False: nothing more kept), and FC2's
//      (h, whole on each ETP rank), returned to _apply_bias, which with
//      TransformerEngine's packed bias and the GroupedTensor backend
//      (_apply_packed_bias) repeats it in fp32 to every routed copy and
//      multiplies it by the probabilities: that fp32 copy (4h B a routed
//      copy) is kept for the probabilities' gradient. Otherwise each
//      expert's bias row is multiplied by its probabilities and nothing of
//      a copy's size is kept. Shared experts are an MLP (mlp.py): FC1's
//      bias over t, FC2's replicated, as a dense MLP's.
// [RS] What routing keeps for the backward, from Megatron-LM d98e8a6 and
//      TransformerEngine d0067d0, a token of this rank's (E experts, top
//      k, logits of router_bytes):
//      - The score function (moe_utils.py topk_routing_with_score_
//        function, unfused): softmax after the top-k keeps the k indices
//        (8k) and its softmax over them (4k); a softmax over every
//        expert (pre-softmax, Sinkhorn's activation) or a sigmoid keeps
//        its fp32 output (4E); sqrt(softplus) keeps softplus's fp32 input
//        and sqrt's output (8E). Group-limited top-k (group_limited_topk)
//        keeps the masked_fill's mask (1E) and the indices of the
//        in-group and group top-k (8 x (G k / g + g)). TransformerEngine's
//        fused router (router.py FusedTopkScoreFunction) keeps the routing
//        map and the fp32 intermediate output (5E) whatever the function.
//      - A load-balancing loss (router.py routing: compute_routing_
//        scores_for_aux_loss) scores every expert once more and keeps
//        them: 4E (sqrt(softplus) unfused 8E; fused,
//        FusedComputeScoresForMoEAuxLoss, 4E).
//      - The z-loss (z_loss_func: logsumexp keeps the logits), whenever
//        --moe-z-loss-coeff is set: router_bytes x E.
//      - The alltoall dispatcher's permutation (moe_utils.py permute):
//        core 0.17 and later argsort every (expert, token) pair and gather
//        the probabilities through a slice of that int64 argsort, which
//        keeps all of it (8E), beside the sorted token indices
//        index_select keeps (8k); TransformerEngine's fused permutation
//        keeps a row_id_map of 2E + 1 int32 a token (permutation.py). Core
//        0.13 to 0.16's masked_select kept the probabilities' transposed
//        copy and the mask, (router_bytes + 1) E: 8E + 4 bounds both.
//        Drop-and-pad gathers the padded capacity's indices (2 x 8 k cf).
//        The allgather dispatcher keeps, over the TP x EP ranks' gathered
//        tokens, its local probabilities' transposed copy and mask
//        (masked_select) and the fused row_id_map: t (router_bytes + 9) E
//        + 4 t EP a token. The flex (DeepEP) dispatcher permutes the
//        tokens it received (at most one a routed copy) over the local
//        experts: 8E/EP + 4 a copy for the map, 16 for the multi-hot
//        indices and k for the mask (token_dispatcher.py
//        _indices_to_multihot).

namespace memgate {

namespace {

double ElementScale(const Layout& l) {
  return l.precision == v1::PRECISION_FP32 ? 2 : 1;
}

}  // namespace

double MlpWidthBytes(const ModelShape& m, const Layout& l) {
  if (m.ungated_mlp) return 4;  // [K] GeLU; [SR] squared ReLU
  // [QG] quick-GeGLU through glu(): x_glu's FC1 output (4: both halves
  // share its storage), quick_gelu's output (2; the jit_fuser-compiled
  // function keeps only its input, x_glu, already counted), x_linear +
  // offset (2), the FC2 input (2). Measured on an H100 (bench/RESULTS.md,
  // session 33): exactly the bytes of the unfused SwiGLU's glu(). Under
  // torch before 2.2 (TorchScript) its sigmoid would be kept too: not
  // counted, as for [GG]; under --disable-jit-fuser, which runs it
  // eagerly, its sigmoid(1.702 x) is kept for the multiply (2 more).
  // [GG] Gemma's GeGLU through glu(), the same tensors.
  // [QG] --activation-func-clamp-value: glu() clamps the gate into a
  // tensor of its own, which the activation keeps (2).
  const double eager_sigmoid = m.quick_geglu && l.eager_jit_functions ? 2 : 0;
  if (m.quick_geglu || m.geglu) {
    return (m.activation_clamp ? 12 : 10) + eager_sigmoid;
  }
  return 8;
}

double DenseMlpBytes(const ModelShape& m, const Layout& l) {
  const double e = ElementScale(l);
  // Validation admits both flags on SwiGLU only.
  const bool swiglu = !m.ungated_mlp && !m.quick_geglu && !m.geglu;
  if (swiglu && !l.fused_swiglu && l.glu_linear_copy) {
    // [QG] Megatron's unfused glu() (mlp.py, core 0.15 on): FC1's output
    // (4), silu's output (2), x_linear + offset (2) and FC2's input (2);
    // with a clamp, the clamped gate silu keeps (2).
    return (MlpWidthBytes(m, l) + 2 + (m.activation_clamp ? 2 : 0)) * e;
  }
  if (!l.fused_swiglu || !swiglu) return MlpWidthBytes(m, l) * e;
  // [FS] [TA] the activation keeps no output of its own: FC1's output (2
  // elements a unit of width: 4 B) and FC2's input (2 B); [F8S] FC1's
  // output in fp8, 1 B an element.
  const double fc1_output = l.activation_fp8_input_store ? 2 : 4 * e;
  return fc1_output + 2 * e;
}

namespace {

double NormWidth(const ModelShape& m) { return m.layernorm ? 2 : 1; }

// Tokens of one micro-batch on this rank inside the MoE layer: s*b/c,
// split over t by sequence parallelism (which Megatron requires for MoE
// with TP).
double TokensPerRank(const Layout& l) {
  const double tokens = l.seq_length * l.micro_batch / l.context;
  return l.sequence_parallel ? tokens / l.tensor : tokens;
}

// Under fp8 every local expert's rows are padded to the GEMM's alignment
// (fp8_utils.py get_fp8_align_size: 16, 32 for MXFP8), and on
// TransformerEngine's GroupedTensor path to 256 in any precision
// (ExpertRowAlign), by the grouped MLP (experts.py, Fp8Padding), by the
// router with --moe-router-padding-for-fp8 or by DeepEP's fused permute:
// at most align - 1 more copies an expert.
double ExpertPaddingCopies(const ModelShape& m, const Layout& l) {
  const double align = ExpertRowAlign(l);
  if (align <= 0) return 0;
  return (align - 1) * m.experts / l.expert_parallel;
}

// Routed token copies this rank's experts process [MM]: its tokens and its
// expert-tensor-parallel peers' (gathered), k copies each, spread evenly
// over the EP ranks, which hold E / EP experts each; the balanced share,
// scaled by the load (dropless), or fixed at the capacity (drop-and-pad).
double RoutedCopies(const ModelShape& m, const Layout& l) {
  const double balanced = TokensPerRank(l) * l.expert_tensor * m.topk;
  const double copies =
      l.capacity_factor > 0
          ? balanced * (l.pad_to_capacity
                            ? l.capacity_factor
                            : std::min(l.capacity_factor, l.expert_load))
          : balanced * l.expert_load;
  return copies + ExpertPaddingCopies(m, l);
}

}  // namespace

double Gated(const ModelShape& m) { return m.ungated_mlp ? 2 : 3; }
double ExpertFfn(const ModelShape& m) {
  return m.expert_ffn > 0 ? m.expert_ffn : m.ffn_hidden;
}

double MoeLayersIn(const ModelShape& m, double first, double count) {
  if (m.experts <= 0 || m.moe_prefix.empty() || count <= 0) return 0;
  // Layer indices are whole: [floor(first), floor(first + count)) within
  // the prefix's range. Clamped first, then truncated (the same for values
  // clamped to whole bounds, without libm's floor: the planner's inner loop
  // calls this for each chunk of each rank it estimates).
  const double size = static_cast<double>(m.moe_prefix.size()) - 1;
  const size_t begin = static_cast<size_t>(std::clamp(first, 0.0, size));
  const size_t end = static_cast<size_t>(
      std::clamp(first + count, static_cast<double>(begin), size));
  return m.moe_prefix[end] - m.moe_prefix[begin];
}

double MlaLinearParameters(const ModelShape& m, const Layout& l) {
  const double h = m.hidden, a = m.heads;
  const double qk = m.qk_nope + m.qk_rope;
  // The down projections: TELinear in parallel_mode "duplicated" (whole on
  // every TP rank) in Megatron's TE spec (gpt_layer_specs.py,
  // backend.linear()); under --mla-down-proj-fusion one
  // TELayerNormColumnParallelLinear of h x (q_lora + kv_lora + d_rope),
  // split over TP (multi_latent_attention.py FusedMLASelfAttention).
  double down = h * (m.kv_lora + m.qk_rope);
  double split = m.kv_lora * a * (m.qk_nope + m.v_head) + a * m.v_head * h;
  if (m.q_lora > 0) {
    down += h * m.q_lora;
    split += m.q_lora * a * qk;
  } else {
    split += h * a * qk;
  }
  const double replicated = m.mla_fused_down_projection ? 0 : down;
  if (m.mla_fused_down_projection) split += down;
  return replicated + split / l.tensor;
}

double MlaParameters(const ModelShape& m, const Layout& l) {
  // The latent norms exist with --qk-layernorm only (gpt_layer_specs.py),
  // replicated over TP.
  const double norms =
      m.qk_norm ? NormWidth(m) * (m.kv_lora + m.q_lora) : 0;
  return MlaLinearParameters(m, l) + norms;
}

double MoeDenseParameters(const ModelShape& m, const Layout& l) {
  double shared = Gated(m) * m.hidden * m.shared_ffn / l.tensor;
  double router = m.hidden * m.experts;
  const double gate = m.shared_gate && m.shared_ffn > 0 ? m.hidden : 0;
  if (m.linear_bias) {  // [EB]
    router += m.experts;
    if (m.shared_ffn > 0) {
      shared += (Gated(m) - 1) * m.shared_ffn / l.tensor + m.hidden;
    }
  }
  return shared + router + gate;
}

double RoutedExpertParameters(const ModelShape& m, const Layout& l) {
  // Each local expert's FC1 and FC2 weights over ETP; with biases [EB],
  // FC1's over ETP and FC2's whole.
  const double biases =
      m.linear_bias
          ? (Gated(m) - 1) * ExpertFfn(m) / l.expert_tensor + m.hidden
          : 0;
  return m.experts / l.expert_parallel *
         (Gated(m) * m.hidden * ExpertFfn(m) / l.expert_tensor + biases);
}

namespace {

// Bytes the routed copies keep for the backward, by where the routing
// probabilities are applied [PA]; an unknown release the larger of core
// 0.12.0's and later releases' (one pass: the planner calls this for
// every stage it estimates).
double RoutedCopyActivations(const ModelShape& m, const Layout& l) {
  const double e = ElementScale(l);
  const double copies = RoutedCopies(m, l);
  // Each routed copy: the first expert GEMM's input (2h) and the
  // expert's FFN activations over ETP. Megatron's fused SwiGLU
  // (fused_bias_swiglu.py: bias_swiglu_impl, and weighted_bias_swiglu_impl
  // with the probabilities) saves only its input, the FC1 output (4 B a
  // unit of width), and FC2 its own input (2): 6 of Korthikanti's 8 [K],
  // which counts the activation's output apart, as an unfused activation
  // keeps it (the session-7 census of real Megatron steps found 6 in its
  // experts, bench/RESULTS.md). moe_act recomputation drops the
  // activation's output (2). Under fp8 the grouped GEMMs save their
  // inputs quantized, columnwise only (grouped_linear.py:
  // update_usage(rowwise_usage=False)): the first's f8 bytes an element in
  // place of the 16-bit copy, which dies once quantized [F8], and the
  // second's, the activation's output, f8 in place of 2 (with moe_act
  // recomputation the second saves the 16-bit output it recomputes:
  // experts.py set_save_original_input).
  // [QF] Quick-GeGLU experts with biases run the bias-activation fusion
  // (Megatron keeps --bias-gelu-fusion on with biases): fused as SwiGLU's
  // kernel, plus what a clamp keeps outside it.
  const bool fused_quick =
      m.quick_geglu && m.linear_bias && !m.expert_activation_unfused;
  const bool unfused = !fused_quick && (m.ungated_mlp || m.quick_geglu ||
                                        m.geglu || m.expert_activation_unfused);
  // [TA] TransformerEngine's SwiGLU op keeps only its input, as the fused
  // kernel, but the probabilities' multiply runs after it.
  const bool te_op = m.expert_activation_te_op && !unfused;
  const double f8 = Fp8ElementBytes(l);
  const double input_bytes = l.fp8 ? f8 : 2 * e;
  // [QG] TEGroupedMLP's glu() (interleaved halves) keeps x_linear +
  // offset, a tensor of its own, and with a clamp the clamped gate;
  // inside the moe_act checkpoint neither is kept.
  const bool te_glu = m.expert_activation_unfused && m.expert_glu_linear_copy &&
                      !m.ungated_mlp && !m.quick_geglu && !m.geglu &&
                      !l.recompute_moe_act;
  const double glu_copies =
      te_glu ? 2 + (m.activation_clamp ? 2 : 0) : 0;
  const double activation_bytes =
      fused_quick ? (m.activation_clamp && !l.recompute_moe_act ? 12 : 8)
                  : MlpWidthBytes(m, l);
  const double width_bytes =
      (activation_bytes - (unfused ? 0 : 2) + glu_copies) * e -
      (l.recompute_moe_act ? 2 * e : (l.fp8 ? 2 - f8 : 0));
  const double width = ExpertFfn(m) / l.expert_tensor;
  // [EB] FC2's bias repeated in fp32 to every copy on the GroupedTensor
  // path (an upper bound where TE hands the biases back one an expert).
  const double packed_bias = m.linear_bias && l.grouped_tensor ? 4 : 0;
  const double common =
      copies * ((input_bytes + packed_bias) * m.hidden + width_bytes * width);
  // Core 0.12.0: unpermute keeps the weighted expert outputs, 2h a copy:
  // k copies of each of this rank's tokens (every expert's capacity when
  // padded to it), or, with allgather and DeepEP, the copies this rank's
  // experts ran.
  const double unpermute_kept =
      (l.allgather_dispatcher || l.deepep_dispatcher
           ? copies
           : TokensPerRank(l) * m.topk *
                 (l.pad_to_capacity ? l.capacity_factor : 1)) *
      2 * e * m.hidden;
  // Later releases: an activation followed by the probabilities' multiply
  // keeps its output once more (2 B a unit of width; inside the moe_act
  // checkpoint it is recomputed): GeLU and quick-GeGLU experts, the legacy
  // GroupedMLP, interleaved GLU halves, TE's activation op.
  const double multiply_kept =
      (unfused || te_op) && !l.recompute_moe_act ? copies * 2 * e * width
                                                 : 0;
  switch (m.probs_applied) {
    case v1::MoeConfig::PROBS_APPLIED_AT_UNPERMUTE:
      return common + unpermute_kept;
    case v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS:
      return common + multiply_kept;
    case v1::MoeConfig::PROBS_APPLIED_ON_INPUT:
      // The unweighted expert input the multiply before FC1 keeps (FC1
      // saves the weighted one), 2h a copy.
      return common + multiply_kept + copies * 2 * e * m.hidden;
    default:
      return common + std::max(unpermute_kept, multiply_kept);
  }
}

// [RS] The score function's and the loss's kept bytes a token, fused or
// not.
double RouterScoreBytes(const ModelShape& m, bool fused) {
  const double e = m.experts, k = m.topk;
  if (fused) return (5 + (m.aux_loss ? 4 : 0)) * e;
  double per_expert = 0;
  switch (m.router_score) {
    case v1::MoeConfig::ROUTER_SCORE_SOFTMAX_AFTER_TOPK:
      break;
    case v1::MoeConfig::ROUTER_SCORE_SOFTMAX:
    case v1::MoeConfig::ROUTER_SCORE_SIGMOID:
      per_expert = 4 + (m.aux_loss ? 4 : 0);
      break;
    default:  // sqrt(softplus), or unknown: the largest
      per_expert = 8 + (m.aux_loss ? 8 : 0);
      break;
  }
  // The softmax after the top-k: its k indices and k scores (or the
  // sigmoid's normalisation, no more).
  double bytes = per_expert * e + 12 * k;
  if (m.router_group_topk > 0 && m.router_groups > 0) {
    bytes += e + 8 * (m.router_groups * std::floor(k / m.router_group_topk) +
                      m.router_group_topk);
  }
  return bytes;
}

// [RS] The dispatcher's permutation map, bytes a layer.
double PermutationMapBytes(const ModelShape& m, const Layout& l) {
  const double e = m.experts, k = m.topk;
  const double tokens = TokensPerRank(l);
  if (l.deepep_dispatcher) {
    return RoutedCopies(m, l) * (8 * e / l.expert_parallel + 20 + k);
  }
  if (l.allgather_dispatcher) {
    return tokens * l.tensor *
               ((m.router_bytes + 9) * e + 4 * l.expert_parallel) +
           8 * RoutedCopies(m, l);
  }
  const double argsort = 8 * e + 4 + 8 * k;
  return tokens * (l.pad_to_capacity
                       ? std::max(argsort, 16 * k * l.capacity_factor)
                       : argsort);
}

}  // namespace

double RouterActivations(const ModelShape& m, const Layout& l) {
  if (m.experts <= 0) return 0;
  const double scores =
      m.router_fusion < 0
          ? std::max(RouterScoreBytes(m, true), RouterScoreBytes(m, false))
          : RouterScoreBytes(m, m.router_fusion > 0);
  const double z_loss = m.z_loss ? m.router_bytes * m.experts : 0;
  return TokensPerRank(l) * (scores + z_loss) + PermutationMapBytes(m, l);
}

double MoeMlpActivations(const ModelShape& m, const Layout& l) {
  const double tokens = TokensPerRank(l);
  double bytes = 0;
  if (!l.recompute_moe) {
    bytes += RouterActivations(m, l);  // [RS]
    // [IJ] input jitter: the noise; the jittered input too where the
    // shared experts keep the norm's output the router no longer keeps.
    const bool shared_keep_input =
        m.shared_ffn > 0 && !l.recompute_shared_experts;
    if (m.input_jitter) {
      bytes += (shared_keep_input ? 2 : 1) * 2 * ElementScale(l) * tokens *
               m.hidden;
    }
    bytes += RoutedCopyActivations(m, l);
  }
  if (!l.recompute_moe && !l.recompute_shared_experts && m.shared_ffn > 0) {
    // Shared experts: a dense MLP of width shared_ffn over t [K].
    const double sb = l.seq_length * l.micro_batch / l.context;
    bytes += sb * DenseMlpBytes(m, l) * m.shared_ffn / l.tensor;
    if (l.fp8) {
      // Their second GEMM saves its input in fp8 (f8 in place of 2), and
      // their first an fp8 copy of the pre-MLP norm's output beside the
      // 16-bit one the router keeps. (Megatron with TE 2.6 and a recipe
      // other than delayed saves the 16-bit one instead, shared_experts.py
      // set_save_original_input: counted anyway, an upper bound.)
      const double f8 = Fp8ElementBytes(l);
      bytes += (f8 - 2) * sb * m.shared_ffn / l.tensor +
               f8 * TokensPerRank(l) * m.hidden;
    }
    if (m.shared_overlap && l.tensor > 1 && l.sequence_parallel) {
      // [SO] FC1 saves the input it is given: all-gathered over TP by
      // hand, the whole sequence's tokens x h in 16 bits (under fp8 an
      // upper bound of its quantized or original copy).
      bytes += 2 * ElementScale(l) * sb * m.hidden;
    }
    if (m.shared_gate) {
      // [SG] output * sigmoid(gate): the multiply keeps the shared
      // experts' output (after FC2's reduce-scatter: this rank's tokens
      // x h, 16-bit in any recipe) beside the one-wide score.
      bytes += 2 * ElementScale(l) * TokensPerRank(l) * m.hidden;
    }
  }
  return bytes;
}

double MaxExpertLoad(const ModelShape& m, const Layout& l) {
  if (m.experts <= 0 || m.topk <= 0) return 1;
  const double ep = std::max(1.0, l.expert_parallel);
  return ep * std::min(m.topk, m.experts / ep) / m.topk;
}

double MlaActivations(const ModelShape& m, const Layout& l) {
  const double e = ElementScale(l);
  const double sb = l.seq_length * l.micro_batch / l.context;
  const double qk = m.heads * (m.qk_nope + m.qk_rope);
  const double v = m.heads * m.v_head;
  // Q and K (2 B each of a*(d_nope + d_rope)), V and the attention output
  // (2 B each of a*d_v), split over t by heads ...
  // Selective recomputation of "mla_up_proj" (multi_latent_attention.py:
  // CheckpointWithoutOutput around the up projections and RoPE, its
  // output discarded once core attention has run) keeps neither Q, K, V
  // nor the norms' outputs: only the attention output and the
  // checkpoint's inputs (the latents and the rotary key) stay.
  const bool up_proj_recomputed = l.recompute_mla_up_proj;
  const double per_head =
      (up_proj_recomputed ? 2 * v : 2 * qk + 2 * qk + 2 * v + 2 * v) /
      l.tensor;
  // Under fp8 the output projection saves an fp8 copy of the attention
  // output beside FlashAttention's [F8] (as for dense attention; Megatron
  // with TE 2.6 and a recipe other than delayed saves the 16-bit one
  // instead, multi_latent_attention.py set_save_original_input: counted
  // anyway, an upper bound).
  const double f8 = Fp8ElementBytes(l);
  const double output_copy = l.fp8 ? f8 * v / l.tensor : 0;
  // ... and the latents, computed whole on every TP rank: the Q and KV
  // latents' up-projection inputs (2 B each), and with the latent norms
  // (DeepSeek's q_a/kv_a layernorms, Megatron's --qk-layernorm with MLA,
  // which fuses them into the up projections as TE LayerNormLinear:
  // gpt_layer_specs.py) the norms' inputs too (2 B each); the shared
  // rotary key (2 B).
  // Under fp8 the up projections save their inputs (the norms' outputs)
  // quantized: f8 in place of 2. Recomputed, the checkpoint keeps its
  // 16-bit inputs instead: TE's fused norm runs inside it (the pre-norm
  // latents, once), the local spec's torch norms outside it (their inputs
  // and, as the checkpoint's inputs, their outputs). Measured on an H100
  // (session 36, the local spec): to 0.03%.
  const double saved_input = l.fp8 ? f8 : 2 * e;
  const bool norm_inputs_kept =
      m.qk_norm && (!up_proj_recomputed || l.local_layer_spec);
  const double latent_bytes = (norm_inputs_kept ? 2 * e : 0) +
                              (up_proj_recomputed ? 2 * e : saved_input);
  const double latents =
      latent_bytes * (m.q_lora + m.kv_lora) + 2 * e * m.qk_rope;
  return sb * (e * per_head + output_copy + latents);
}

double DispatchWorkingSet(const ModelShape& m, const Layout& l) {
  const double e = ElementScale(l);
  if (l.allgather_dispatcher) {
    // The hidden states gathered over the EP x ETP group [MM].
    return e * 2 * m.hidden * TokensPerRank(l) * l.expert_parallel *
           l.expert_tensor;
  }
  // All-to-all: the permuted copies being sent and those received.
  return e * 2 * m.hidden *
         (TokensPerRank(l) * m.topk + RoutedCopies(m, l));
}

}  // namespace memgate
