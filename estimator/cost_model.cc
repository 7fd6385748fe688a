#include "estimator/cost_model.h"

namespace memgate {
namespace {

double Efficiency(double size, double half) { return size / (size + half); }

}  // namespace

SpeedFactors SpeedOf(const ModelShape& m, const Layout& l, double microbatches,
                     double gpus_per_node, const CostModel& cost) {
  SpeedFactors f;
  f.gemm = Efficiency(l.seq_length * l.micro_batch / l.context,
                      cost.gemm_rows_half) *
           Efficiency(m.hidden / l.tensor, cost.gemm_cols_half);
  if (l.tensor > 1) {
    const bool cross_node = gpus_per_node > 0 && l.tensor > gpus_per_node;
    f.tensor = 1 / (1 + (cross_node ? cost.tensor_cross_node_overhead
                                    : cost.tensor_overhead));
  }
  f.context = 1 / (1 + cost.context_overhead * (l.context - 1) / l.context);
  if (l.pipeline > 1) {
    // Interleaving v chunks a rank divides the bubble by v [MT].
    f.bubble = (l.pipeline - 1) / (microbatches * l.virtual_stages);
    // Per-token forward FLOPs of a layer: 2 per weight, plus causal
    // attention's QK^T and AV (2sh); of the LM head: 2hv.
    const double h = m.hidden;
    const double layer_weights =
        2 * h * h * (1 + m.kv_heads / m.heads) + 3 * h * m.ffn_hidden;
    const double head_in_layers =
        2 * h * m.vocab / (2 * layer_weights + 2 * l.seq_length * h);
    const double per_stage = m.layers / l.pipeline;
    f.imbalance = (per_stage + head_in_layers / l.pipeline) /
                  (per_stage + head_in_layers);
  }
  return f;
}

}  // namespace memgate
