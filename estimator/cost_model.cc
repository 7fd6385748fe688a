#include "estimator/cost_model.h"

#include <algorithm>

#include "estimator/moe_terms.h"

// Sources, cited below:
// [MT]   Megatron-LM megatron/core/pipeline_parallel/schedules.py: the
//        interleaved 1F1B schedule (v model chunks a rank) and
//        get_tensor_shapes (a p2p send is s / c tokens, / t under
//        sequence parallelism, x b x h).
// [NA21] Narayanan et al. 2021, "Efficient Large-Scale Language Model
//        Training on GPU Clusters Using Megatron-LM", section 2.2.2: the
//        interleaved schedule divides the bubble by v and multiplies the
//        pipeline's point-to-point communication by v.
// [MM]   Megatron-LM megatron/core/transformer/moe/README.md (Guideline 4:
//        expert parallelism's better GEMM efficiency).

namespace memgate {
namespace {

double Efficiency(double size, double half) { return size / (size + half); }

}  // namespace

LayerWeights ActiveWeightsPerToken(const ModelShape& m) {
  const double h = m.hidden;
  Layout unsplit;  // t = 1: the whole layer's weights
  const double attention =
      m.mla ? MlaParameters(m, unsplit)
            : h * (QueryWidth(m) + 2 * m.kv_heads * HeadDim(m)) +
                  QueryWidth(m) * h;
  const double dense_mlp = Gated(m) * h * m.ffn_hidden;
  if (m.experts <= 0) return {attention + dense_mlp, 0};
  // DeepSeek-V3's first layers are dense: average over the model.
  const double moe_share = MoeLayersIn(m, 0, m.layers) / m.layers;
  const double moe_dense = Gated(m) * h * m.shared_ffn + h * m.experts;
  return {attention + (1 - moe_share) * dense_mlp + moe_share * moe_dense,
          moe_share * m.topk * Gated(m) * h * ExpertFfn(m)};
}

SpeedFactors SpeedOf(const ModelShape& m, const Layout& l, double microbatches,
                     double gpus_per_node, const CostModel& cost,
                     StageLayers stages) {
  return SpeedOf(m, ActiveWeightsPerToken(m), l, microbatches, gpus_per_node,
                 cost, stages);
}

SpeedFactors SpeedOf(const ModelShape& m, const LayerWeights& weights,
                     const Layout& l, double microbatches,
                     double gpus_per_node, const CostModel& cost,
                     StageLayers stages) {
  SpeedFactors f;
  const double rows = l.seq_length * l.micro_batch / l.context;
  const double dense_gemm = Efficiency(rows, cost.gemm_rows_half) *
                            Efficiency(m.hidden / l.tensor, cost.gemm_cols_half);
  f.gemm = dense_gemm;
  if (weights.experts > 0) {
    // [MM] A routed expert's grouped GEMM runs on the tokens routed to it:
    // this rank's s*b/(t*c) (sequence parallel), gathered over ETP, k
    // copies each, spread over the E experts of EP x ETP ranks (balanced
    // load); its columns are the expert FFN split over ETP. Larger EP
    // means fewer experts a rank and more rows each: Megatron's "better
    // GEMM efficiency" of EP over TP (moe/README.md, Guideline 4).
    const double expert_rows = rows / l.tensor * l.expert_tensor * m.topk *
                               l.expert_parallel / m.experts;
    const double expert_gemm =
        Efficiency(expert_rows, cost.gemm_rows_half) *
        Efficiency(ExpertFfn(m) / l.expert_tensor, cost.gemm_cols_half);
    // Time adds: the FLOP-weighted harmonic mean of the two efficiencies.
    f.gemm = (weights.dense + weights.experts) /
             (weights.dense / dense_gemm + weights.experts / expert_gemm);
  }
  if (l.tensor > 1) {
    const bool cross_node = gpus_per_node > 0 && l.tensor > gpus_per_node;
    f.tensor = 1 / (1 + (cross_node ? cost.tensor_cross_node_overhead
                                    : cost.tensor_overhead));
  }
  f.context = 1 / (1 + cost.context_overhead * (l.context - 1) / l.context);
  if (l.pipeline > 1) {
    // Interleaving v chunks a rank divides the bubble by v [MT].
    f.bubble = (l.pipeline - 1) / (microbatches * l.virtual_stages);
    // Per-token forward FLOPs of a layer: 2 per active weight, plus causal
    // attention's QK^T and AV (2 s a d); of the LM head: 2hv. For MoE
    // models the active weights (k experts), not the dense FFN width.
    // Multi-latent attention: QK^T over qk_nope + qk_rope, AV over v_head.
    const double h = m.hidden;
    const double score_width =
        m.mla ? m.heads * (m.qk_nope + m.qk_rope + m.v_head) / 2
              : QueryWidth(m);
    const double layer_flops =
        2 * (weights.dense + weights.experts) + 2 * l.seq_length * score_width;
    const double head_in_layers = 2 * h * m.vocab / layer_flops;
    const double per_stage = m.layers / l.pipeline;
    double slowest = per_stage + head_in_layers;  // the last stage
    if (stages.first > 0 && l.pipeline > 2) {
      const double middle =
          (m.layers - stages.first - stages.last) / (l.pipeline - 2);
      slowest = std::max({stages.first, middle, stages.last + head_in_layers});
    }
    f.imbalance = (per_stage + head_in_layers / l.pipeline) / slowest;
    // (5) [NA21] Interleaving's sends: v chunks a rank send 2v times a
    // micro-batch where plain 1F1B sends twice. Plain 1F1B is what the
    // paper measured and the model reproduces without a send price, so
    // only the 2(v - 1) extra sends are priced: 2-byte elements (4 in
    // fp32), s*b/c x h of them (/ t under sequence parallelism: Megatron's
    // p2p tensor shape [MT]), against the rank's 3 x L/p layers of
    // forward-and-backward FLOPs on the same tokens (/ t; the s*b/c tokens
    // cancel), run at the efficiency (1) to (3) make of the GPU's peak.
    // Pipeline neighbours are t*c*d ranks apart (rank order tp-cp-ep-dp-
    // pp): across nodes when that reaches a node's GPUs (or the node size
    // is unknown), over NVLink otherwise.
    {
      const bool cross_node =
          gpus_per_node <= 0 ||
          l.tensor * l.context * l.data >= gpus_per_node;
      const double flops_per_byte = cross_node
                                        ? cost.peak_flops_per_network_byte
                                        : cost.peak_flops_per_nvlink_byte;
      const double element_bytes =
          l.precision == v1::PRECISION_FP32 ? 4 : 2;
      const double send_bytes = element_bytes * h *
                                (l.sequence_parallel ? 1 : l.tensor);
      const double compute = 3 * per_stage * layer_flops;
      const double achieved = f.gemm * f.tensor * f.context;
      f.send_share = 2 * send_bytes * flops_per_byte * achieved / compute;
      f.p2p = 1 / (1 + (l.virtual_stages - 1) * f.send_share);
    }
  }
  return f;
}

}  // namespace memgate
