// [LW] The layer-wise distributed optimizer's buffers, as Megatron-LM
// (core_v0.18.0 to d98e8a6) builds them for Lion and Muon with
// --use-distributed-optimizer:
//   training/models/dist_utils.py _ddp_wrap: DDP runs its distributed-
//   optimizer buffers (use_distributed_optimizer re-enabled) with
//   LayerWiseDistributedOptimizer.compute_full_param_layout, a layout per
//   model chunk; buckets of bucket_size (--ddp-bucket-size, else
//   max(4e7, 1e6 x DP x CP); --ddp-num-buckets splits the rank's
//   parameters) only under --overlap-grad-reduce and only on the first
//   pipeline rank's first chunk ("None if disable_bucketing or pp_rank >
//   0"), one bucket elsewhere.
//   core/optimizer/layer_wise_optimizer.py is_managed_by_layer_wise_
//   optimizer: the parameters of two dimensions that are not the word
//   embeddings or LM head go to the layer-wise buffer (dense, over DP x
//   CP, and the routed experts', over the expert data-parallel group);
//   the rest to a buffer of the plain distributed optimizer
//   (core/optimizer/__init__.py "Route non-Muon params through
//   DistributedOptimizer"), which memory_model.cc's [BP] pads.
// The matrices of a chunk, in the order the model registers them
// (torch's parameters(): a module's own before its children's):
//   the position embedding (LanguageModelEmbedding), then each layer's
//   attention: linear_proj before linear_qkv (attention.py Attention
//   builds linear_proj, SelfAttention then linear_qkv); MLA's
//   linear_proj, then linear_q_proj or linear_q_down_proj and
//   linear_q_up_proj, linear_kv_down_proj, linear_kv_up_proj
//   (multi_latent_attention.py; fused: linear_qkv_down_proj,
//   linear_q_up_proj, linear_kv_up_proj); then the MLP's linear_fc1,
//   linear_fc2, or an MoE layer's router, experts and shared experts
//   (moe_layer.py; the shared experts' gate_weight before their FC1 and
//   FC2: shared_experts.py), in the expert buffer each local expert's FC1
//   then each one's FC2 (TEGroupedMLP's weight0..n-1, --moe-grouped-gemm)
//   or expert by expert (SequentialMLP); MTP's eh_proj before its layer
//   (multi_token_prediction.py), after the decoder.
// Shapes are this rank's shards (muon_terms.cc has Megatron's splits).

#include "estimator/layer_wise_terms.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "estimator/layer_wise_layout.h"
#include "estimator/moe_terms.h"

namespace memgate {
namespace {

using Matrices = std::vector<LayerWiseMatrix>;
// A buffer's matrices as blocks of a repeated pattern: a chunk's equal
// layers, an MoE layer's experts, each listed once (layer_wise_layout.h).
using Blocks = std::vector<LayerWiseBlock>;

uint64_t Whole(double x) { return static_cast<uint64_t>(std::llround(x)); }

void Add(Matrices& out, double rows, double cols) {
  out.push_back({Whole(rows), Whole(cols)});
}

void AppendAttention(const ModelShape& m, const Layout& l, Matrices& out) {
  const double h = m.hidden, a = m.heads, t = l.tensor;
  if (!m.mla) {
    Add(out, h, QueryWidth(m) / t);
    Add(out, (QueryWidth(m) + 2 * m.kv_heads * HeadDim(m)) / t, h);
    return;
  }
  const double qk = m.qk_nope + m.qk_rope;
  const double kv_down = m.kv_lora + m.qk_rope;
  Add(out, h, a * m.v_head / t);
  if (m.mla_fused_down_projection) {
    Add(out, (m.q_lora + kv_down) / t, h);
    Add(out, a * qk / t, m.q_lora);
  } else if (m.q_lora > 0) {
    Add(out, m.q_lora, h);
    Add(out, a * qk / t, m.q_lora);
    Add(out, kv_down, h);
  } else {
    Add(out, a * qk / t, h);
    Add(out, kv_down, h);
  }
  Add(out, a * (m.qk_nope + m.v_head) / t, m.kv_lora);
}

// An MLP of width `ffn` split over `group`: FC1 (both halves of a gated
// one), FC2.
void AppendMlp(const ModelShape& m, double ffn, double group,
               Matrices& out) {
  Add(out, (Gated(m) - 1) * ffn / group, m.hidden);
  Add(out, m.hidden, ffn / group);
}

// A layer's matrices after `dense` (a pattern begun by the caller, which
// adds it) and, for an MoE layer, its routed experts' blocks.
void AppendLayer(const ModelShape& m, const Layout& l, bool moe,
                 Matrices& dense, Blocks& expert) {
  AppendAttention(m, l, dense);
  if (!moe) {
    AppendMlp(m, m.ffn_hidden, l.tensor, dense);
    return;
  }
  Add(dense, m.experts, m.hidden);  // the router
  const uint64_t local = Whole(m.experts / l.expert_parallel);
  const double ffn = ExpertFfn(m) / l.expert_tensor;
  const LayerWiseMatrix fc1 = {Whole((Gated(m) - 1) * ffn), Whole(m.hidden)};
  const LayerWiseMatrix fc2 = {Whole(m.hidden), Whole(ffn)};
  if (m.grouped_experts) {
    AppendLayerWiseBlock(expert, {fc1}, local);
    AppendLayerWiseBlock(expert, {fc2}, local);
  } else {
    AppendLayerWiseBlock(expert, {fc1, fc2}, local);
  }
  if (m.shared_ffn > 0) {
    if (m.shared_gate) Add(dense, 1, m.hidden);
    AppendMlp(m, m.shared_ffn, l.tensor, dense);
  }
}

struct ChunkMatrices {
  Blocks dense, expert;
};

ChunkMatrices ChunkOf(const ModelShape& m, const Layout& l,
                      const LayerSpan& span, bool positions, bool mtp) {
  ChunkMatrices c;
  Matrices layer;  // each layer's dense matrices, then a block's
  if (positions && m.learned_positions > 0) {
    Add(layer, m.learned_positions, m.hidden);
    AppendLayerWiseBlock(c.dense, layer, 1);
  }
  const double end = span.first + span.count;
  for (double i = span.first; i < end; ++i) {
    layer.clear();
    AppendLayer(m, l, MoeLayersIn(m, i, 1) > 0, layer, c.expert);
    AppendLayerWiseBlock(c.dense, layer, 1);
  }
  if (mtp) {
    for (double k = 0; k < MtpBuiltLayers(m); ++k) {
      layer.clear();
      Add(layer, m.hidden / l.tensor, 2 * m.hidden);  // eh_proj
      AppendLayer(m, l, MtpLayerIsMoe(m), layer, c.expert);
      AppendLayerWiseBlock(c.dense, layer, 1);
    }
  }
  return c;
}

double Sum(const Blocks& blocks) {
  double n = 0;
  for (const LayerWiseBlock& b : blocks) {
    for (const LayerWiseMatrix& x : b.pattern) {
      n += double(x.rows) * double(x.cols) * double(b.repeat);
    }
  }
  return n;
}

double MatricesIn(const Blocks& blocks) {
  double n = 0;
  for (const LayerWiseBlock& b : blocks) {
    n += double(b.pattern.size()) * double(b.repeat);
  }
  return n;
}

double Largest(const std::vector<uint64_t>& owned) {
  return owned.empty()
             ? 0
             : double(*std::max_element(owned.begin(), owned.end()));
}

struct Packed {
  double buffer = 0;
  double owned = 0;
};

// One buffer kind (dense or expert) of every chunk under one packing, the
// first rank's first chunk with `bucket_size` (0: one bucket).
Packed PackChunks(const std::vector<const Blocks*>& chunks,
                  LayerWisePackingOptions o, uint64_t first_chunk_bucket) {
  std::vector<uint64_t> owned;  // grown to the shards used
  Packed p;
  for (size_t j = 0; j < chunks.size(); ++j) {
    o.bucket_size = j == 0 ? first_chunk_bucket : 0;
    // Validation bounds the job's packing (LayerWisePackingWork); a
    // packing refused anyway counts as no memory there is (the estimate
    // then refuses its non-finite peak), never as none.
    const absl::StatusOr<LayerWiseBuffer> b =
        PackLayerWiseBlocks(*chunks[j], o, owned);
    p.buffer += b.ok() ? double(b->padded_elements)
                       : std::numeric_limits<double>::infinity();
  }
  p.owned = Largest(owned);
  return p;
}

// Two matrices of a pattern with one Newton-Schulz cost and different
// sizes: sorted by cost, a repeated block of them is listed repetition by
// repetition (layer_wise_layout.cc AppendBlock), its runs as many as its
// matrices. Exact, as the packing compares them (dimensions past 2^32,
// which the packing refuses, count as apart).
bool OneCostTwoSizes(const Matrices& pattern) {
  using Wide = unsigned __int128;
  auto cost = [](const LayerWiseMatrix& w) {
    const Wide big = std::max(w.rows, w.cols);
    const Wide small = std::min(w.rows, w.cols);
    return big * small * small;
  };
  for (size_t i = 0; i < pattern.size(); ++i) {
    const LayerWiseMatrix& x = pattern[i];
    if (x.rows >> 32 || x.cols >> 32) return true;
    for (size_t j = i + 1; j < pattern.size(); ++j) {
      const LayerWiseMatrix& y = pattern[j];
      if (y.rows >> 32 || y.cols >> 32) return true;
      if (cost(x) == cost(y) && x.rows * x.cols != y.rows * y.cols) {
        return true;
      }
    }
  }
  return false;
}

// Matrices of a dense and of an MoE layer in each buffer: counted on a
// layer of one local expert (the job is not yet bounded, its experts may
// be any number), two a local expert; and the matrices an MoE layer's
// expert blocks list (their patterns: two, whatever the experts), the
// most in one pattern, and whether each buffer's patterns list every
// matrix apart under the packing by cost (OneCostTwoSizes).
struct MatrixCounts {
  double dense_layer = 0, moe_layer = 0, moe_expert = 0;
  double moe_expert_listed = 0;
  double dense_pattern = 0;
  // Distinct shapes in each buffer: a chunk's runs are at most these.
  double dense_shapes = 0, expert_shapes = 0;
  bool dense_apart = false, expert_apart = false;
};

double DistinctShapes(Matrices shapes) {
  std::sort(shapes.begin(), shapes.end(),
            [](const LayerWiseMatrix& a, const LayerWiseMatrix& b) {
              return a.rows != b.rows ? a.rows < b.rows : a.cols < b.cols;
            });
  return double(std::unique(shapes.begin(), shapes.end(),
                            [](const LayerWiseMatrix& a,
                               const LayerWiseMatrix& b) {
                              return a.rows == b.rows && a.cols == b.cols;
                            }) -
                shapes.begin());
}

MatrixCounts CountsOf(const ModelShape& m, const Layout& l) {
  ModelShape one_local = m;
  one_local.experts = l.expert_parallel;
  Matrices dense;
  Blocks expert;
  MatrixCounts c;
  // A layer's pattern, with MTP's eh_proj (a repeated MTP layer's), each
  // kind.
  const LayerWiseMatrix eh_proj = {Whole(m.hidden / l.tensor),
                                   Whole(2 * m.hidden)};
  AppendLayer(one_local, l, false, dense, expert);
  c.dense_layer = double(dense.size());
  Matrices every_dense = dense;
  dense.push_back(eh_proj);
  c.dense_apart = OneCostTwoSizes(dense);
  dense.clear();
  AppendLayer(one_local, l, true, dense, expert);
  c.moe_layer = double(dense.size());
  every_dense.insert(every_dense.end(), dense.begin(), dense.end());
  dense.push_back(eh_proj);
  c.dense_apart |= OneCostTwoSizes(dense);
  // MTP's eh_proj and a learned position embedding, of shapes apart.
  c.dense_shapes = DistinctShapes(every_dense) + 2;
  // A layer's dense matrices, and MTP's eh_proj before them.
  c.dense_pattern = std::max(c.dense_layer, c.moe_layer) + 1;
  c.moe_expert = MatricesIn(expert) * m.experts / l.expert_parallel;
  Matrices experts_listed;
  for (const LayerWiseBlock& b : expert) {
    c.moe_expert_listed += double(b.pattern.size());
    experts_listed.insert(experts_listed.end(), b.pattern.begin(),
                          b.pattern.end());
  }
  c.expert_apart = OneCostTwoSizes(experts_listed);
  c.expert_shapes = DistinctShapes(experts_listed);
  return c;
}

double ExpertShards(const Layout& l) {
  return l.tensor * l.context * l.data / (l.expert_tensor * l.expert_parallel);
}

}  // namespace

LayerWiseFigures LayerWiseFiguresOf(const ModelShape& m, const Layout& l,
                                    const LayerWiseStage& stage) {
  std::vector<ChunkMatrices> chunks;
  chunks.reserve(stage.chunks.size());
  for (size_t j = 0; j < stage.chunks.size(); ++j) {
    chunks.push_back(ChunkOf(m, l, stage.chunks[j],
                             stage.first_rank && j == 0,
                             stage.mtp && j + 1 == stage.chunks.size()));
  }
  LayerWiseFigures f;
  std::vector<const Blocks*> dense, expert;
  for (const ChunkMatrices& c : chunks) {
    f.matrix_elements += Sum(c.dense);
    f.expert_matrix_elements += Sum(c.expert);
    dense.push_back(&c.dense);
    expert.push_back(&c.expert);
  }
  // DDP's bucket size on the first rank's first chunk.
  uint64_t bucket = 0;
  if (stage.first_rank) {
    const double size =
        l.ddp_num_buckets > 0
            ? std::floor(stage.rank_parameters / l.ddp_num_buckets)
        : l.ddp_bucket_size > 0 ? l.ddp_bucket_size
                                : std::max(4e7, 1e6 * l.data * l.context);
    bucket = std::max<uint64_t>(1, Whole(size));
  }
  const bool packings[2] = {l.layer_wise_by_elements, l.layer_wise_by_cost};
  for (int k = 0; k < 2; ++k) {
    if (!packings[k]) continue;
    LayerWisePackingOptions o;
    o.pad_for_high_nccl_busbw = l.pad_buckets_for_high_busbw;
    o.packing = k == 0 ? LayerWisePacking::kByElements
                       : LayerWisePacking::kByNewtonSchulzCost;
    // One bucket (without --overlap-grad-reduce), then DDP's buckets.
    std::vector<uint64_t> first_buckets = {0};
    if (bucket > 0) first_buckets.push_back(bucket);
    for (uint64_t first_bucket : first_buckets) {
      o.shards = Whole(l.data * l.context);
      const Packed d = PackChunks(dense, o, first_bucket);
      o.shards = Whole(ExpertShards(l));
      const Packed e = f.expert_matrix_elements > 0
                           ? PackChunks(expert, o, first_bucket)
                           : Packed{};
      f.buffer_elements = std::max(f.buffer_elements, d.buffer + e.buffer);
      f.owned_elements = std::max(f.owned_elements, d.owned + e.owned);
    }
  }
  return f;
}

const LayerWiseFigures& LayerWiseMemo::FiguresOf(
    const ModelShape& m, const Layout& l, const LayerWiseStage& stage) {
  // What LayerWiseFiguresOf reads of the layout (and of the helpers it
  // calls: CountsOf, ChunkOf, ExpertShards), then of the stage, and the
  // one model setting a plan changes between a layout's estimates (a
  // candidate recomputing moe_act runs grouped GEMMs).
  std::vector<double> key = {double(m.grouped_experts),
                             l.tensor,
                             l.context,
                             l.data,
                             l.expert_parallel,
                             l.expert_tensor,
                             l.ddp_bucket_size,
                             l.ddp_num_buckets,
                             double(l.pad_buckets_for_high_busbw),
                             double(l.layer_wise_by_elements),
                             double(l.layer_wise_by_cost),
                             double(stage.first_rank),
                             double(stage.mtp),
                             stage.rank_parameters};
  for (const LayerSpan& span : stage.chunks) {
    key.push_back(span.first);
    key.push_back(span.count);
  }
  auto [it, added] = figures_.try_emplace(std::move(key));
  if (added) it->second = LayerWiseFiguresOf(m, l, stage);
  return it->second;
}

namespace {

// One buffer's matrices on a rank (or the whole model): how many, how many
// its blocks list apart (runs of identical matrices are at most these),
// the most in one block's pattern, and the ranks it shards over.
struct BufferTotals {
  double matrices = 0, listed = 0, pattern = 0, shards = 1;
  double shapes = 0;  // a chunk's runs at most (all its matrices: apart)
};

// A part of the model: its dense matrices (over DP x CP) and its routed
// experts' (over the expert data-parallel group).
struct MatrixTotals {
  BufferTotals dense, expert;
};

// A rank of at most `rank_layers` layers, each the kind with more
// matrices, with the MTP layers and a learned position embedding.
MatrixTotals RankOf(const ModelShape& m, const Layout& l,
                    const MatrixCounts& c, double rank_layers) {
  const double layers = std::min(rank_layers, double(m.layers));
  const double moe = std::min(layers, MoeLayersIn(m, 0, m.layers));
  const double mtp = MtpBuiltLayers(m);
  const bool mtp_moe = MtpLayerIsMoe(m);
  const double per_layer = std::max(c.dense_layer, moe > 0 ? c.moe_layer : 0);
  const double moe_layers = moe + (mtp_moe ? mtp : 0);
  MatrixTotals t;
  t.dense.matrices = layers * per_layer +
                     mtp * (1 + (mtp_moe ? c.moe_layer : c.dense_layer)) +
                     (m.learned_positions > 0 ? 1 : 0);
  t.dense.listed = t.dense.matrices;  // equal layers listed once or not
  t.dense.pattern = c.dense_pattern;
  t.dense.shards = l.data * l.context;
  t.dense.shapes = c.dense_shapes;
  t.expert.matrices = moe_layers * c.moe_expert;
  t.expert.listed = moe_layers * c.moe_expert_listed;
  t.expert.pattern = 2;  // {FC1, FC2}, or FC1 and FC2 apart
  t.expert.shards = ExpertShards(l);
  t.expert.shapes = c.expert_shapes;
  const double inf = std::numeric_limits<double>::infinity();
  if (l.layer_wise_by_cost) {
    if (c.dense_apart) t.dense.shapes = inf;
    if (c.expert_apart) {
      t.expert.listed = t.expert.matrices;
      t.expert.shapes = inf;
    }
  }
  return t;
}

double Packings(const Layout& l) {
  return double(l.layer_wise_by_elements) + double(l.layer_wise_by_cost);
}

// Placing `b`'s matrices over its shards in at most `runs` runs
// (layer_wise_layout.cc Packer, either packing): a few heap steps a
// matrix (log2 of the shards used, one at a time or, where cheaper, in
// bulk) and a few passes over the shards a call packs over (min(its
// matrices, DP)) a run: its cursors' range, the shards it fits, a heap
// built, the bulk's totals: by elements 4 (a run's cursors' range, the
// heap built or the bulk's totals; a bucket's cursors set and their
// largest), by cost 8 (the shards it fits and the heap of those too). A
// bucket's runs are at most its distinct shapes, so the passes are also at
// most shapes x the buckets' widths (`widths`: a chunk in one bucket is at
// most as wide as its matrices).
double PlacingSteps(const BufferTotals& b, bool by_cost, double runs,
                    double widths) {
  const double used = std::min(b.matrices, b.shards);
  const double passes = by_cost ? 8 : 4;
  return b.matrices * (3 * std::log2(used + 1) + 2) +
         passes *
             std::min(std::min(runs, b.matrices) * used, b.shapes * widths);
}

// Without buckets a packing lists its blocks' patterns and places their
// runs.
double OneBucketSteps(const BufferTotals& b, bool by_cost) {
  return PlacingSteps(b, by_cost, b.listed, b.matrices) +
         kListingStepsPerMatrix * std::min(b.listed, b.matrices);
}

// With DDP's buckets (the first rank's first chunk) the walk reads every
// matrix (by cost also a heap step each: its estimate of the bucket), and a
// bucket lists its blocks again: a block a bucket boundary cuts is listed
// in both and its cut repetition apart, at most twice the longest pattern
// more a bucket. A bucket holds at least 0.9 x DP of its largest matrix,
// so at least floor(0.9 x DP) matrices (one at least), but the last.
double BucketedSteps(const BufferTotals& b, bool by_cost) {
  const double buckets =
      std::min(b.matrices,
               std::ceil(b.matrices /
                         std::max(1.0, std::floor(0.9 * b.shards))) +
                   1);
  const double runs = b.listed + 2 * b.pattern * buckets;
  const double used = std::min(b.matrices, b.shards);
  // The first chunk's buckets, each as wide as the shards used, and the
  // rank's other chunks in one bucket each.
  return PlacingSteps(b, by_cost, runs, buckets * used + b.matrices) +
         kRelistingStepsPerMatrix * std::min(runs, b.matrices) +
         b.matrices * (kWalkingStepsPerMatrix +
                       (by_cost ? 3 * std::log2(used + 1) : 0));
}

// Each packing the layout runs.
template <typename Steps>
double EachPacking(const Layout& l, const MatrixTotals& t, Steps steps) {
  double sum = 0;
  for (bool by_cost : {false, true}) {
    if (by_cost ? l.layer_wise_by_cost : l.layer_wise_by_elements) {
      sum += steps(t.dense, by_cost) + steps(t.expert, by_cost);
    }
  }
  return sum;
}
double OneBucketSteps(const Layout& l, const MatrixTotals& t) {
  return EachPacking(l, t, [](const BufferTotals& b, bool by_cost) {
    return OneBucketSteps(b, by_cost);
  });
}
double BucketedSteps(const Layout& l, const MatrixTotals& t) {
  return EachPacking(l, t, [](const BufferTotals& b, bool by_cost) {
    return BucketedSteps(b, by_cost);
  });
}

// The whole model's matrices, each layer as it is.
double WholeModelMatrices(const ModelShape& m, const MatrixCounts& c,
                          double& expert) {
  const double moe = MoeLayersIn(m, 0, m.layers);
  const double mtp = MtpBuiltLayers(m);
  const bool mtp_moe = MtpLayerIsMoe(m);
  expert = (moe + (mtp_moe ? mtp : 0)) * c.moe_expert;
  return (m.layers - moe) * c.dense_layer + moe * c.moe_layer +
         mtp * (1 + (mtp_moe ? c.moe_layer : c.dense_layer)) +
         (m.learned_positions > 0 ? 1 : 0);
}

// Validation's bound on `c`'s layout (LayerWisePackingWork).
double PackingWorkOf(const ModelShape& m, const Layout& l,
                     const MatrixCounts& c) {
  double expert = 0;
  const double dense = WholeModelMatrices(m, c, expert);
  return 2 * Packings(l) *
         (LayerWisePackingSteps(dense, l.data * l.context) +
          LayerWisePackingSteps(expert, ExpertShards(l)));
}

}  // namespace

// Validation's bound: a scan of the shards used a matrix (the most any
// placement costs, Megatron's own loop), over the whole model (a chunk's
// steps are at most the whole model's: LayerWisePackingSteps grows faster
// than its sum); each packing bucketed and not.
double LayerWisePackingWork(const ModelShape& m, const Layout& l) {
  return PackingWorkOf(m, l, CountsOf(m, l));
}

LayerWisePlanWork LayerWisePlanWorkOf(const ModelShape& m, const Layout& l,
                                      double rank_layers) {
  // One count of the layout's matrices for all four figures (the plan
  // counts every layout).
  const MatrixCounts c = CountsOf(m, l);
  const MatrixTotals rank = RankOf(m, l, c, rank_layers);
  const MatrixTotals whole = RankOf(m, l, c, m.layers);
  return {PackingWorkOf(m, l, c), OneBucketSteps(l, rank),
          BucketedSteps(l, rank),
          OneBucketSteps(l, whole) + BucketedSteps(l, whole)};
}

}  // namespace memgate
