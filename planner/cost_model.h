#ifndef MEMGATE_PLANNER_COST_MODEL_H_
#define MEMGATE_PLANNER_COST_MODEL_H_

// A deliberately simple model of relative training speed, used to rank
// layouts that fit. It encodes the paper's findings (section 4.2) as four
// mechanisms, and the prices of interleaving, of expert parallelism's
// exchange and of selective recomputation as three more, each a factor in
// (0, 1]:
//
//  1. GEMM efficiency. Matrix multiplies run closer to peak when they are
//     large: rows are the tokens of one micro-batch on one CP rank (s*b/c),
//     columns the hidden slice of one TP rank (h/t). Each dimension n counts
//     as n / (n + n_half). This is why a larger MBS helps (paper 4.2.2) and
//     why TP and CP have a price beyond communication.
//  2. Tensor-parallel communication: Megatron's all-gather/reduce-scatter
//     pairs sit on the critical path of every layer: a fixed overhead once
//     t > 1, far larger across nodes (InfiniBand instead of NVLink). The
//     overhead was measured on the paper's H100 (94 GB, NVLink bridges);
//     on another GPU it scales with that GPU's peak compute over its
//     NVLink bandwidth against the paper's H100's (the time a collective's
//     bytes take against the time the layer's FLOPs take): an A100 pays
//     0.37 of it, an H100 SXM 0.79, an H800 (NVLink cut to 400 GB/s) 1.78.
//     (Within the shared tables this changes no ranking: both leave-one-
//     table-out scores are the flat constant's; bench/RESULTS.md, session
//     34. A price computed from the datasheet alone, without the fitted
//     constant, scored worse: 0.970 against 0.989.)
//  3. Context-parallel communication: ring attention overlaps most of its
//     KV exchange with compute, so it costs less than TP (paper 4.2.1).
//  4. The pipeline: the 1F1B bubble (p - 1) / m with m micro-batches per
//     step, and stage imbalance: the last stage also computes the LM head
//     (2hv FLOPs a token, ~2 transformer layers for Llama-3's vocabulary),
//     and the pipeline runs at the pace of its slowest stage (uneven first
//     and last stages exist to even that out: HeadInLayers, and the
//     planner's stage_split.h HeadBalancedSplit).
//  5. Interleaving's point-to-point sends: each micro-batch leaves each of
//     a rank's v model chunks twice (its activations forward, their
//     gradient backward), s*b/c x h elements (split over TP under sequence
//     parallelism). Interleaving divides the bubble by v and multiplies
//     these sends by v (Narayanan et al. 2021, section 2.2.2: "the amount
//     of communication also increases by v"), so its depth is a trade:
//     the 2(v - 1) sends beyond plain 1F1B's are priced as not overlapped
//     with compute (an upper bound: Megatron's overlap_p2p_comm hides
//     part of them): 2-layer chunks of Llama-3.1-405B (TP 8, CP 2) cost
//     ~2% of the compute, 1-layer chunks ~4%. Plain 1F1B's own two sends
//     stay unpriced, as in the measurements the model reproduces. Sent
//     over the network or, when pipeline neighbours (t*c*d ranks apart in
//     Megatron's default rank order tp-cp-ep-dp-pp) share a node, NVLink.
//  6. Expert parallelism's token exchange (MoE layers): the dispatcher
//     sends each token's hidden state to the ranks of its k experts and
//     back (dispatch and combine, forward and backward: four passes), over
//     NVLink inside a node and the network beyond it. What a token costs
//     depends on the dispatcher: all-to-all sends one copy per routed
//     expert, DeepEP (flex) one per node and per GPU its experts are on,
//     all-gather every token of the group to every rank. Priced like (5),
//     at the same two datasheet ratios, as not overlapped (an upper bound:
//     --overlap-moe-expert-parallel-comm and DeepEP hide part of it).
//  7. Selective recomputation's price (SelectiveRecomputeCost): one more
//     forward of what the recomputed modules compute, against the layer's
//     forward and backward. A GEMM's FLOPs count as they are; an
//     elementwise kernel (an activation function, a norm, RoPE) does no
//     GEMM work but reads and writes its tensors, priced at the GPU's
//     datasheet ratio of peak compute to HBM bandwidth, as (5) prices a
//     network byte, at peak efficiency (an upper bound: a byte costs the
//     most against compute that runs at peak).
//
// Mixture-of-experts layers (beyond the paper): the routed experts' GEMMs
// get their own size in (1), the tokens routed to each local expert, which
// grow with EP; a layer's FLOPs count its k active experts, not a dense
// FFN; (6) prices the token exchange that EP costs. No constant is added
// for them: the H100 measurements of NVIDIA's Megatron MoE model zoo
// (Qwen3-235B, 256 GPUs) validate the order (cost_model_test), they were
// not fitted to.
//
// Data-parallel communication is not priced: the distributed optimizer's
// gradient reduce-scatter and parameter all-gather overlap the backward
// and the next forward, as in the paper's measurements. A Megatron-FSDP
// plan (PlanRequest.data_parallel_sharding) shards every layout alike and
// is not priced either; its ZeRO-3 strategy re-gathers each layer's
// weights before every micro-batch's forward and backward (2m gathers of
// a rank's weights a step, fewer bytes at larger TP), prefetched behind
// compute (docs megatron_fsdp.md) but not free: a known gap that favours
// small TP within such a plan, left unpriced for lack of a measurement.
//
// The constants were set from the paper's H100 Llama-3.1-8B 8k table (MBS
// 1 -> 2 gain, TP 2 -> 4 loss, TP 2 vs CP 2) and rounded. The planner uses
// this model only to order layouts of the same rule group (TP x CP x PP,
// plan_ranking.h RuleGroupOf; the paper's rule comes first, planner.h):
// out of sample, fitted on one shared table
// and scored on the other, that order reaches 0.989 of the best measured
// throughput in every column, the cost model alone 0.950 and the rule
// alone 0.937 (planner_test LeaveOneTableOutRankingValidation,
// bench/RESULTS.md).

#include "estimator/memory_model.h"

namespace memgate {

// The paper's H100 (94 GB): 835 dense bf16 TFLOP/s over its NVLink
// bridge's 300 GB/s a direction, FLOPs per byte: where tensor_overhead was
// measured (gpu_datasheets.cc).
inline constexpr double kTensorOverheadReference = 835e12 / 300e9;

struct CostModel {
  double gemm_rows_half = 1024;   // tokens per micro-batch per CP rank
  double gemm_cols_half = 256;    // hidden units per TP rank
  // t > 1 within a node, on the paper's H100 (kTensorOverheadReference).
  double tensor_overhead = 0.25;
  double tensor_cross_node_overhead = 1.0;  // t > GPUs per node
  double context_overhead = 0.1;  // times (c - 1) / c
  // (5) Peak dense compute over network bandwidth, FLOPs per byte: an
  // H100's 989 bf16 TFLOP/s over its one 400 Gb/s NIC (50 GB/s) is 2e4
  // (A100: 312 over 25 GB/s, 1.2e4; B200 over the same NIC, 4.5e4). Scaled
  // by the efficiency factors (1) to (3), it is the achieved compute a
  // byte of p2p costs. A datasheet ratio, not fitted: no table of the
  // paper interleaves. These defaults are the H100's; a plan on another
  // catalog GPU uses that GPU's (gpu_datasheets.cc).
  double peak_flops_per_network_byte = 2e4;
  // The same over NVLink, between pipeline neighbours in one node: 989
  // TFLOP/s over NVLink 4's 450 GB/s a direction (A100: 312 over 300).
  double peak_flops_per_nvlink_byte = 2.2e3;
  // The same to one peer, what a point-to-point send (5) gets: all of it
  // through an NVSwitch (NVIDIA's nodes: equal to the above), one link of
  // a fully connected mesh (an MI300X's 64 GB/s of its 448).
  double peak_flops_per_peer_link_byte = 2.2e3;
  // (7) The same over HBM: 989 TFLOP/s over an H100 SXM's 3.35 TB/s
  // (A100: 312 over 2.0 TB/s, 156; B200: 2,250 over 8 TB/s, 281).
  double peak_flops_per_hbm_byte = 295;
};

struct SpeedFactors {
  double gemm = 1;        // (1)
  double tensor = 1;      // (2)
  double context = 1;     // (3)
  double bubble = 0;      // (p - 1) / m
  double imbalance = 1;   // (4): ideal / slowest stage
  // (5): the compute share one chunk beyond the first adds in sends
  // (whatever v: it is a property of the layout), and the factor it makes
  // with v chunks, 1 / (1 + (v - 1) send_share); 1 without interleaving.
  double send_share = 0;
  double p2p = 1;
  double expert = 1;      // (6): 1 / (1 + the exchange's compute share)
  double speed() const {
    return gemm * tensor * context * imbalance * p2p * expert /
           (1 + bubble);
  }
};

// Layers of the first and last pipeline stages (Megatron's
// --decoder-first/last-pipeline-num-layers, or an accounted split's);
// 0, 0: an even split.
struct StageLayers {
  double first = 0;
  double last = 0;
};

// Per-token forward weight FLOPs / 2 of an average layer (2 FLOPs a weight
// a token), split by GEMM shape: `dense` runs on the token rows of one
// TP/CP rank (attention, dense MLPs, shared experts, router), `experts` on
// the rows routed to each local expert (MoE layers' k active experts).
// Depends on the model only: a search computes it once.
struct LayerWeights {
  double dense = 0;
  double experts = 0;
};
LayerWeights ActiveWeightsPerToken(const ModelShape& m);

// Modules Megatron's selective recomputation (--recompute-granularity
// selective --recompute-modules) recomputes, which the planner tries
// beside full recomputation: at a small price the experts' activation
// function (moe_act), the norms (layernorm), MLA's up projections and
// RoPE (mla_up_proj); at a GEMM's price a dense layer's whole MLP (mlp),
// which at long sequences costs less than the layers it would otherwise
// take to fit (attention's s x s work is not repeated), or an MoE layer
// whole (moe: its router, routed and shared experts, and its token
// exchange's forward, which MoeRecomputeExchange prices).
struct SelectiveModules {
  bool moe_act = false;
  bool layernorm = false;
  bool mla_up_proj = false;
  bool mlp = false;
  bool moe = false;
  bool any() const {
    return moe_act || layernorm || mla_up_proj || mlp || moe;
  }
};

// (7) 1 + the share of a layer's forward and backward that one more
// forward of `modules` adds, averaged over the model's layers, with
// `element_bytes` a 16-bit (2) or fp32 (4) activation element.
double SelectiveRecomputeCost(const ModelShape& m, const LayerWeights& weights,
                              const SelectiveModules& modules,
                              double seq_length, double element_bytes,
                              const CostModel& cost = {});

// (7), (6) The step's time, relative to what it was, where a share
// `recomputed` of the layers runs its expert exchange forward again (an
// MoE layer recomputed whole, by Megatron's "moe" module or by full
// recomputation): its dispatch and combine once more, two of the four
// passes (6) prices. `expert` is a layout's factor (6), 1 / (1 + x), the
// exchange x of the compute: 1 + recomputed x / (2 (1 + x)), which is
// 1 + recomputed (1 - expert) / 2; 1 without an exchange.
inline double ExchangeForwardAgain(double recomputed, double expert) {
  if (!(expert > 0 && expert < 1)) return 1;
  return 1 + recomputed * (1 - expert) / 2;
}

// The factor that recomputing every MoE layer whole adds to a layout's
// speed: (1 + x) / (1 + 3x/2).
inline double MoeRecomputeExchange(double expert) {
  return 1 / ExchangeForwardAgain(1, expert);
}

// (7) with (6): `cost`, SelectiveRecomputeCost of `modules`, at a layout
// whose expert factor is `expert`: where an MoE layer is recomputed whole,
// its exchange's forward runs again (the plan and a refusal's hint price
// it alike).
inline double SelectiveRecomputeCostAt(const SelectiveModules& modules,
                                       double cost, double expert) {
  return modules.moe ? cost / MoeRecomputeExchange(expert) : cost;
}

// 1 + the share of a chunk's forward and backward that full recomputation
// (method block) of `layers` of its `chunk_layers` adds: one more forward
// of them, a third of forward and backward, and, in an MoE model, their
// exchange's forward again, at a layout whose expert factor (6) is
// `expert` (1: none), as Megatron's "moe" module is priced
// (SelectiveRecomputeCostAt): recomputing a few whole MoE layers is not
// cheaper than it is.
inline double FullRecomputeCost(double layers, double chunk_layers,
                                double expert) {
  const double share = layers / chunk_layers;
  return (1 + share / 3) * ExchangeForwardAgain(share, expert);
}

// The most of `chunk_layers` whose full recomputation costs less than
// `worth` (FullRecomputeCost rises with the layers): 0 where none does.
uint32_t MostLayersRecomputedBelow(double worth, uint32_t chunk_layers,
                                   double expert);

// (4) The LM head's per-token forward FLOPs, 2hv (v the vocabulary's rows
// as padded at TP `tensor`), in layers of the model's average forward at
// `seq_length`: what the last stage computes beside its layers.
double HeadInLayers(const ModelShape& m, const LayerWeights& weights,
                    double tensor, double seq_length);

// `microbatches` per step (m = global batch / (b * d)); `gpus_per_node` 0
// means unknown (no cross-node penalty).
SpeedFactors SpeedOf(const ModelShape& m, const LayerWeights& weights,
                     const Layout& l, double microbatches,
                     double gpus_per_node, const CostModel& cost = {},
                     StageLayers stages = {});
// The same, computing `weights` from `m`.
SpeedFactors SpeedOf(const ModelShape& m, const Layout& l, double microbatches,
                     double gpus_per_node, const CostModel& cost = {},
                     StageLayers stages = {});

}  // namespace memgate

#endif  // MEMGATE_PLANNER_COST_MODEL_H_
