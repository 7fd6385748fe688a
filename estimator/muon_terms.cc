// [MU] Muon's step, as Megatron-LM (d98e8a6) and emerging_optimizers
// (fd77292) run it:
//   Megatron core/optimizer/emerging_optimizers.py TensorParallelMuon:
//   the matrices (two dimensions, not the word embeddings or LM head) are
//   orthogonalized one at a time; with --muon-tp-mode duplicated a
//   tensor-parallel shard is all-gathered (t empty_like shards, then
//   torch.cat: both alive through the iteration) and the whole matrix
//   orthogonalized on every rank, then chunked back; blockwise runs the
//   rank's shard alone (partition_dim None); distributed runs the shard
//   with the Gram matrices all-reduced; QKV is split into Q, K and V
//   first (reshape copies, results concatenated) unless
//   --muon-no-split-qkv. The update is scaled (`orth_grad * scale *
//   extra`: two shard-sized temporaries beside the orthogonalized matrix).
//   emerging_optimizers orthogonalized_optimizer.py step: the momentum
//   lerps in place; with --muon-nesterov `grad.lerp(momentum)` is a new
//   fp32 shard. muon_utils.py newton_schulz: X = normalize(x) (fp32), at
//   fp32 matmul precision "medium" (Megatron's default) converted to bf16
//   for the iteration (A = X X^T and B = b A + c A A, each m x m for the
//   smaller dimension m, and the new X) and back to fp32.
// Megatron places the matrices on TP as its TE layer spec does: QKV, FC1
// and the MLA up projections split by rows (partition_dim 0), the output
// projection and FC2 by columns (1), the router, a position embedding and
// the MLA down projections whole (TELinear "duplicated"), the routed
// experts over expert TP.

#include "estimator/muon_terms.h"

#include <algorithm>

#include "estimator/moe_terms.h"

namespace memgate {
namespace {

enum class Split { kNone, kRows, kColumns };

struct Matrix {
  double rows = 0, cols = 0;  // whole, before tensor parallelism
  Split split = Split::kNone;
  double group = 1;           // the ranks it is split over
};

double LocalElements(const Matrix& w) {
  const double whole = w.rows * w.cols;
  return w.split == Split::kNone ? whole : whole / w.group;
}

// --muon-nesterov: `grad.lerp(momentum)`, a new fp32 tensor of the
// parameter's local elements, alive through its orthogonalization.
double NesterovBytes(const Layout& l, double local) {
  return l.muon_nesterov ? 4 * local : 0;
}

// Bytes of one matrix's orthogonalization beside the states (Nesterov's
// blend apart).
double OrthogonalizationBytes(const Layout& l, const Matrix& w) {
  const double whole = w.rows * w.cols;
  const double local = LocalElements(w);
  const bool split = w.split != Split::kNone;
  const bool gathered = split && l.muon_tp_mode == v1::Muon::TP_MODE_DUPLICATED;
  double x = local;  // the matrix Newton-Schulz iterates on
  double gram = 0;   // its Gram matrix's elements
  if (gathered) {
    x = whole;
    gram = std::min(w.rows, w.cols) * std::min(w.rows, w.cols);
  } else if (split && l.muon_tp_mode == v1::Muon::TP_MODE_DISTRIBUTED) {
    // The shard's unsplit dimension is the one the Gram matrix spans.
    const double kept = w.split == Split::kRows ? w.cols : w.rows;
    gram = kept * kept;
  } else {
    const double rows = w.split == Split::kRows ? w.rows / w.group : w.rows;
    const double cols =
        w.split == Split::kColumns ? w.cols / w.group : w.cols;
    gram = std::min(rows, cols) * std::min(rows, cols);
  }
  // The normalized fp32 X beside its bf16 copy, or the iteration's X, A,
  // B and new X (bf16; all fp32 at high precision).
  const double iteration = l.muon_fp32_iteration
                               ? 8 * x + 8 * gram
                               : std::max(6 * x, 4 * x + 4 * gram);
  // The gathered shards and their concatenation, through the iteration.
  const double copies = gathered ? 8 * x : 0;
  // The orthogonalized matrix beside the two scaled shard temporaries.
  const double update = 4 * x + 8 * local;
  return std::max(copies + iteration, update);
}

double MatrixStepBytes(const Layout& l, const Matrix& w) {
  return NesterovBytes(l, LocalElements(w)) + OrthogonalizationBytes(l, w);
}

// QKV: whole, or split (emerging_optimizers.py orthogonalize): the
// pieces reshaped into copies of the local QKV first, then Q, K and V
// orthogonalized one at a time beside them and the results already made
// (together at most two local QKVs), then concatenated (the results and
// their concatenation: two).
double QkvStepBytes(const ModelShape& m, const Layout& l) {
  const double h = m.hidden, kv = m.kv_heads * HeadDim(m);
  const Matrix qkv{QueryWidth(m) + 2 * kv, h, Split::kRows, l.tensor};
  if (!l.muon_split_qkv) return MatrixStepBytes(l, qkv);
  const double local = LocalElements(qkv);
  const double pieces = std::max(
      OrthogonalizationBytes(l, {QueryWidth(m), h, Split::kRows, l.tensor}),
      OrthogonalizationBytes(l, {kv, h, Split::kRows, l.tensor}));
  return NesterovBytes(l, local) + 8 * local + pieces;
}

double AttentionStepBytes(const ModelShape& m, const Layout& l) {
  const double h = m.hidden, a = m.heads, t = l.tensor;
  if (!m.mla) {
    return std::max(
        QkvStepBytes(m, l),
        MatrixStepBytes(l, {h, QueryWidth(m), Split::kColumns, t}));
  }
  const double qk = m.qk_nope + m.qk_rope;
  double largest =
      std::max(MatrixStepBytes(l, {a * (m.qk_nope + m.v_head), m.kv_lora,
                                   Split::kRows, t}),
               MatrixStepBytes(l, {h, a * m.v_head, Split::kColumns, t}));
  largest = std::max(
      largest, m.q_lora > 0
                   ? MatrixStepBytes(l, {a * qk, m.q_lora, Split::kRows, t})
                   : MatrixStepBytes(l, {a * qk, h, Split::kRows, t}));
  // The down projections, fused into one split matrix or whole each.
  const double kv_down = m.kv_lora + m.qk_rope;
  if (m.mla_fused_down_projection) {
    largest = std::max(largest, MatrixStepBytes(l, {m.q_lora + kv_down, h,
                                                    Split::kRows, t}));
  } else {
    largest = std::max(largest, MatrixStepBytes(l, {kv_down, h}));
    if (m.q_lora > 0) {
      largest = std::max(largest, MatrixStepBytes(l, {m.q_lora, h}));
    }
  }
  return largest;
}

// An MLP's FC1 (both halves of a gated one together) and FC2 of width
// `ffn`, split over `group`.
double MlpStepBytes(const ModelShape& m, const Layout& l, double ffn,
                    double group) {
  const double h = m.hidden;
  return std::max(
      MatrixStepBytes(l, {(Gated(m) - 1) * ffn, h, Split::kRows, group}),
      MatrixStepBytes(l, {h, ffn, Split::kColumns, group}));
}

double LayerStepBytes(const ModelShape& m, const Layout& l, bool moe) {
  double largest = AttentionStepBytes(m, l);
  if (!moe) {
    return std::max(largest, MlpStepBytes(m, l, m.ffn_hidden, l.tensor));
  }
  largest = std::max(largest, MatrixStepBytes(l, {m.experts, m.hidden}));
  if (m.shared_ffn > 0) {
    largest = std::max(largest, MlpStepBytes(m, l, m.shared_ffn, l.tensor));
  }
  return std::max(largest, MlpStepBytes(m, l, ExpertFfn(m), l.expert_tensor));
}

}  // namespace

double MuonStepBytes(const ModelShape& m, const Layout& l,
                     const MuonStage& stage) {
  double largest = 0;
  if (stage.layers.dense > 0) {
    largest = std::max(largest, LayerStepBytes(m, l, false));
  }
  if (stage.layers.moe > 0) {
    largest = std::max(largest, LayerStepBytes(m, l, true));
  }
  if (stage.mtp_layers > 0) {
    // Its layer and its h x 2h projection (column-parallel: split rows).
    largest = std::max(
        {largest, LayerStepBytes(m, l, stage.mtp_is_moe),
         MatrixStepBytes(l, {m.hidden, 2 * m.hidden, Split::kRows, l.tensor})});
  }
  if (stage.first && m.learned_positions > 0) {
    largest = std::max(largest,
                       MatrixStepBytes(l, {m.learned_positions, m.hidden}));
  }
  return largest;
}

}  // namespace memgate
