#include "planner/cost_model.h"

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
//        expert parallelism's better GEMM efficiency; Guideline 2: keep
//        EP x TP inside NVLink, EP's exchange is communication-heavy).
// [MD]   Megatron-LM megatron/core/transformer/moe/token_dispatcher.py:
//        MoEAllGatherTokenDispatcher gathers every token of the tp_ep group
//        (gather_from_sequence_parallel_region) and reduce-scatters it
//        back; MoEAlltoAllTokenDispatcher sends the k routed copies of a
//        token over the ep group (all_to_all), then gathers them over the
//        expert-TP group; MoEFlexTokenDispatcher hands the tp_ep group to
//        DeepEP. Backward runs each collective's transpose: four passes.
// [MR]   Megatron-LM megatron/core/transformer/transformer_config.py
//        (recompute_modules: "moe_act", "layernorm", "mla_up_proj") and
//        the modules that honour them: experts.py (the activation under
//        CheckpointWithoutOutput), transformer_layer.py (the input and
//        pre-MLP norms), multi_latent_attention.py (the up projections
//        and RoPE).
// [DE]   DeepEP README (deepseek-ai/DeepEP), normal kernels: a token goes
//        once over RDMA to each remote node holding one of its experts and
//        is forwarded over NVLink to that node's GPUs that hold them.

namespace memgate {
namespace {

double Efficiency(double size, double half) { return size / (size + half); }

// Per-token forward FLOPs of an average layer: 2 per active weight, plus
// causal attention's QK^T and AV (2 s a d). For MoE models the active
// weights (k experts), not the dense FFN width. Multi-latent attention:
// QK^T over qk_nope + qk_rope, AV over v_head.
double LayerFlops(const ModelShape& m, const LayerWeights& weights,
                  double seq_length) {
  const double score_width =
      m.mla ? m.heads * (m.qk_nope + m.qk_rope + m.v_head) / 2
            : QueryWidth(m);
  return 2 * (weights.dense + weights.experts) + 2 * seq_length * score_width;
}

// The chance that one of `units` equal shares of the E experts holds at
// least one of a token's k distinct experts (uniform routing, the balanced
// load the cost model assumes): 1 - C(E - E/units, k) / C(E, k).
double ShareHit(double experts, double topk, double units) {
  const double held = experts / units;
  double none = 1;
  for (double i = 0; i < topk && none > 0; ++i) {
    none *= std::max(0.0, experts - held - i) / (experts - i);
  }
  return 1 - none;
}

// Copies of one token's hidden state that a pass of the dispatcher sends
// to other GPUs of the node and to other nodes [MD], [DE]. An expert
// group's EP x ETP ranks are consecutive, an expert rank's ETP GPUs side by
// side (Megatron's expert rank order tp-ep-dp-pp). With the node size
// unknown every copy is taken to cross the network, as (5) does.
struct ExchangeCopies {
  double nvlink = 0;
  double network = 0;
};

ExchangeCopies CopiesPerToken(const ModelShape& m, const Layout& l,
                              double gpus_per_node) {
  const double ep = l.expert_parallel, etp = l.expert_tensor;
  const double group = ep * etp;
  const double node = gpus_per_node > 0 ? std::min(gpus_per_node, group) : 1;
  ExchangeCopies c;
  if (l.allgather_dispatcher) {
    // Every token of the group to every rank of it.
    c.nvlink = node - 1;
    c.network = group - node;
    return c;
  }
  // Expert ranks a node holds, and nodes the group spans.
  const double ranks_per_node = std::max(1.0, node / etp);
  const double nodes = ep / ranks_per_node;
  if (l.deepep_dispatcher) {
    // One RDMA copy per remote node hit, then one NVLink copy per further
    // GPU hit on each node hit (each ETP GPU of an expert rank needs it).
    const double node_hit = ShareHit(m.experts, m.topk, nodes);
    const double gpus_hit = ep * ShareHit(m.experts, m.topk, ep) * etp;
    c.network = (nodes - 1) * node_hit;
    c.nvlink = std::max(0.0, gpus_hit - nodes * node_hit);
    return c;
  }
  // All-to-all: each of the k copies to its expert's rank, those on other
  // nodes over the network; then the expert-TP gather brings each rank the
  // copies of its ETP - 1 peers (NVLink: ETP stays inside a node).
  c.network = m.topk * (1 - ranks_per_node / ep);
  c.nvlink = m.topk * ((ranks_per_node - 1) / ep + (etp - 1));
  if (gpus_per_node <= 0) {
    c.network += c.nvlink;
    c.nvlink = 0;
  }
  return c;
}

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

double SelectiveRecomputeCost(const ModelShape& m, const LayerWeights& weights,
                              const SelectiveModules& modules,
                              double seq_length, double element_bytes,
                              const CostModel& cost) {
  // Per token of an average layer, forward: GEMM FLOPs and elementwise
  // bytes (read and written) that the recomputation repeats [MR].
  double flops = 0, bytes = 0;
  const double moe_share =
      m.experts > 0 ? MoeLayersIn(m, 0, m.layers) / m.layers : 0;
  if (modules.moe_act) {
    // The expert activation of each of the k routed copies: SwiGLU reads
    // its two halves and writes one (a GeLU one in, one out).
    const double units = Gated(m) == 3 ? 3 : 2;
    bytes += moe_share * m.topk * units * ExpertFfn(m) * element_bytes;
  }
  if (modules.layernorm) {
    // The input and pre-MLP norms: h in, h out each (an upper bound: under
    // TransformerEngine the input norm of most layers is fused into QKV
    // and not recomputed).
    bytes += 2 * 2 * m.hidden * element_bytes;
  }
  if (modules.mla_up_proj && m.mla) {
    // The up projections of the Q latent (or Q's own projection without
    // one) and of the KV latent, 2 FLOPs a weight, and RoPE over the
    // rotary parts of Q (a heads) and of the shared key.
    const double q_in = m.q_lora > 0 ? m.q_lora : m.hidden;
    flops += 2 * (q_in * m.heads * (m.qk_nope + m.qk_rope) +
                  m.kv_lora * m.heads * (m.qk_nope + m.v_head));
    bytes += 2 * (m.heads + 1) * m.qk_rope * element_bytes;
  }
  if (modules.mlp) {
    // A dense layer's MLP [MR] (transformer_layer.py checkpoints self.mlp):
    // FC1 and FC2 again, 2 FLOPs a weight, with the pre-MLP norm that
    // TransformerEngine fuses into FC1 (h in, h out) and the activation
    // (SwiGLU reads its two halves and writes one; GeLU one in, one out).
    // An MoE model's dense layers only: "moe" is a whole MoE layer's.
    const double units = Gated(m) == 3 ? 3 : 2;
    flops += (1 - moe_share) * 2 * Gated(m) * m.hidden * m.ffn_hidden;
    bytes += (1 - moe_share) * (2 * m.hidden + units * m.ffn_hidden) *
             element_bytes;
  }
  if (modules.moe && m.experts > 0) {
    // An MoE layer whole [MR] (moe_layer.py checkpoints it): the router,
    // the k routed experts' and the shared experts' GEMMs again, 2 FLOPs a
    // weight, and their activations (SwiGLU reads two halves and writes
    // one). Its exchange's forward passes are the layout's
    // (MoeRecomputeExchange).
    const double units = Gated(m) == 3 ? 3 : 2;
    flops += moe_share * 2 *
             (m.topk * Gated(m) * m.hidden * ExpertFfn(m) +
              Gated(m) * m.hidden * m.shared_ffn + m.hidden * m.experts);
    bytes += moe_share * units * (m.topk * ExpertFfn(m) + m.shared_ffn) *
             element_bytes;
  }
  const double extra = flops + bytes * cost.peak_flops_per_hbm_byte;
  return 1 + extra / (3 * LayerFlops(m, weights, seq_length));
}

SpeedFactors SpeedOf(const ModelShape& m, const Layout& l, double microbatches,
                     double gpus_per_node, const CostModel& cost,
                     StageLayers stages) {
  return SpeedOf(m, ActiveWeightsPerToken(m), l, microbatches, gpus_per_node,
                 cost, stages);
}

double HeadInLayers(const ModelShape& m, const LayerWeights& weights,
                    double tensor, double seq_length) {
  return 2.0 * m.hidden * VocabRows(m, tensor) /
         LayerFlops(m, weights, seq_length);
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
    // (2) The overhead measured on the paper's H100, scaled by this GPU's
    // compute over NVLink bandwidth against that H100's.
    const double link_scale =
        cost.peak_flops_per_nvlink_byte / kTensorOverheadReference;
    f.tensor = 1 / (1 + (cross_node ? cost.tensor_cross_node_overhead
                                    : cost.tensor_overhead * link_scale));
  }
  f.context = 1 / (1 + cost.context_overhead * (l.context - 1) / l.context);
  const double layer_flops = LayerFlops(m, weights, l.seq_length);
  const double element_bytes = l.precision == v1::PRECISION_FP32 ? 4 : 2;
  const double achieved = f.gemm * f.tensor * f.context;
  if (weights.experts > 0) {
    // (6) [MD] A rank's token exchange against those tokens' forward and
    // backward compute (3 x a layer's forward FLOPs; the rank's s*b/(t*c)
    // tokens cancel): 4 passes of each copy's h elements, averaged over
    // the layers (DeepSeek-V3's dense layers exchange nothing), each byte
    // at its link's datasheet ratio times the achieved efficiency, as (5).
    const ExchangeCopies copies = CopiesPerToken(m, l, gpus_per_node);
    const double moe_share = MoeLayersIn(m, 0, m.layers) / m.layers;
    const double exchange =
        4 * moe_share * m.hidden * element_bytes *
        (copies.network * cost.peak_flops_per_network_byte +
         copies.nvlink * cost.peak_flops_per_nvlink_byte);
    f.expert = 1 / (1 + exchange * achieved / (3 * layer_flops));
  }
  if (l.pipeline > 1) {
    // Interleaving v chunks a rank divides the bubble by v [MT].
    f.bubble = (l.pipeline - 1) / (microbatches * l.virtual_stages);
    const double h = m.hidden;
    const double head_in_layers =
        HeadInLayers(m, weights, l.tensor, l.seq_length);
    const double per_stage = m.layers / l.pipeline;
    double slowest = per_stage + head_in_layers;  // the last stage
    if (stages.first > 0 && l.pipeline > 2) {
      const double middle =
          (m.layers - stages.first - stages.last) / (l.pipeline - 2);
      slowest = std::max({stages.first, middle, stages.last + head_in_layers});
    } else if (stages.first > 0) {  // two stages, no middle one
      slowest = std::max(stages.first, stages.last + head_in_layers);
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
                                        : cost.peak_flops_per_peer_link_byte;
      const double send_bytes = element_bytes * h *
                                (l.sequence_parallel ? 1 : l.tensor);
      const double compute = 3 * per_stage * layer_flops;
      f.send_share = 2 * send_bytes * flops_per_byte * achieved / compute;
      f.p2p = 1 / (1 + (l.virtual_stages - 1) * f.send_share);
    }
  }
  return f;
}

uint32_t MostLayersRecomputedBelow(double worth, uint32_t chunk_layers,
                                   double expert) {
  if (FullRecomputeCost(chunk_layers, chunk_layers, expert) < worth) {
    return chunk_layers;
  }
  // Bisection: O(log chunk_layers) whatever the model's depth.
  uint32_t lo = 0, hi = chunk_layers;  // lo costs less (or is 0), hi not
  while (hi - lo > 1) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (FullRecomputeCost(mid, chunk_layers, expert) < worth) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace memgate
