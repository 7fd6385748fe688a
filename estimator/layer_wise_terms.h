#ifndef MEMGATE_ESTIMATOR_LAYER_WISE_TERMS_H_
#define MEMGATE_ESTIMATOR_LAYER_WISE_TERMS_H_

// [LW] Lion and Muon with Megatron's layer-wise distributed optimizer
// (core 0.18.0 on): a stage's matrices, as DDP lays them out
// (layer_wise_layout.h), used by memory_model.cc. Internal to the
// estimator. Figures are elements on one GPU.

#include <map>
#include <vector>

#include "estimator/memory_model.h"

namespace memgate {

// A model chunk a pipeline rank holds: decoder layers [first, first +
// count).
struct LayerSpan {
  double first = 0;
  double count = 0;
};

struct LayerWiseStage {
  std::vector<LayerSpan> chunks;  // the rank's model chunks, in order
  bool first_rank = false;  // pipeline rank 0: a position embedding, and
                            // DDP's buckets on its first chunk
  bool mtp = false;         // MTP layers built in its last chunk
  // Every parameter the rank holds (--ddp-num-buckets divides them).
  double rank_parameters = 0;
};

struct LayerWiseFigures {
  // The matrices' own elements, dense (over DP x CP) and routed experts'
  // (over the expert data-parallel group).
  double matrix_elements = 0;
  double expert_matrix_elements = 0;
  // The two buffers as laid out, padded: every rank holds them whole, in
  // the bf16 weights and in the gradients.
  double buffer_elements = 0;
  // The most elements a rank updates (its shards of every chunk): the
  // dense buffer's fullest rank plus the expert buffer's (an upper bound
  // where they are different GPUs).
  double owned_elements = 0;
};

// The stage's buffers under each packing `l.layer_wise` names, the larger
// of each figure; the first rank's first chunk both in DDP's buckets
// (under --overlap-grad-reduce) and in one (without it), the larger.
LayerWiseFigures LayerWiseFiguresOf(const ModelShape& m, const Layout& l,
                                    const LayerWiseStage& stage);

// LayerWiseFiguresOf's answers for one model, each packed once: a caller
// that estimates many layouts of one model alike in what the packing reads
// (the planner: one layout's micro-batch sizes and recomputation probes)
// hands one to their LayoutLayerFigures (LayoutLaneFigures::layer_wise).
// Keyed by every input the packing reads (the layout's TP, CP, DP, EP,
// ETP, DDP buckets and packings, the stage's chunks and flags, and whether
// the experts run grouped GEMMs, which a plan turns on for moe_act), so a
// figure is the same, to the bit, as LayerWiseFiguresOf's
// (LayerWiseTermsTest.AMemoAnswersAsThePackingDoes). Grows by one entry a
// distinct stage: its owner bounds its life.
class LayerWiseMemo {
 public:
  const LayerWiseFigures& FiguresOf(const ModelShape& m, const Layout& l,
                                    const LayerWiseStage& stage);
  size_t size() const { return figures_.size(); }

 private:
  std::map<std::vector<double>, LayerWiseFigures> figures_;
};

// Matrix-rank steps the estimate of every stage packs, over the whole
// model (each packing and bucketing counted): validation refuses a job
// above kMaxLayerWisePackingWork.
double LayerWisePackingWork(const ModelShape& m, const Layout& l);

// A plan's count of one layout's work (the planner counts every layout's
// before it plans), its matrices counted once: `validated`, Layer-
// WisePackingWork (what validation bounds a job at); `rank`, the figures
// of one pipeline rank of at most `rank_layers` decoder layers (each
// counted as the layer kind with more matrices, the MTP layers and a
// learned position embedding beside them) in one bucket; `first_rank`,
// what the first pipeline rank adds, its first chunk in DDP's buckets
// (counted as the whole rank); `whole`, both for every layer on one
// rank. Upper bounds of any rank's under any split whose ranks hold at
// most that many layers. In each buffer (dense, experts), as
// layer_wise_layout.cc works: placing, 3 log2(shards used + 1) + 2 steps
// a matrix (a heap step, or less in bulk) and 4 passes over the shards
// used a run of identical matrices, 8 by cost (runs at most the matrices
// the blocks list, and a bucket's at most its distinct shapes, each pass
// as wide as its call's matrices at most); listing, kListingStepsPerMatrix a
// matrix the blocks list (building and sorting a chunk's blocks: an MoE
// layer's experts two patterns, whatever their number); in DDP's
// buckets, the runs again (a bucket cut from its neighbour lists a
// block's pattern twice more, a bucket holds at least floor(0.9 x DP)
// matrices), kRelistingStepsPerMatrix each, and kWalkingStepsPerMatrix a
// matrix the walk reads (by cost 3 log2(shards used + 1) more: its
// estimate of the bucket is a heap). The constants are a calibration on
// this project's 2-core VM (BM_PlanLayerWisePastTheBound, both packings,
// bench/RESULTS.md sessions 56 and 61): the plans measured take at most
// 0.143 ns a counted step (Mixtral-8x7B's many small chunks by cost the
// most), so the plan's bound of 2^31 steps is about 0.31 s of packing.
inline constexpr double kListingStepsPerMatrix = 640;
inline constexpr double kRelistingStepsPerMatrix = 32;
inline constexpr double kWalkingStepsPerMatrix = 16;
struct LayerWisePlanWork {
  double validated = 0, rank = 0, first_rank = 0, whole = 0;
};
LayerWisePlanWork LayerWisePlanWorkOf(const ModelShape& m, const Layout& l,
                                      double rank_layers);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_LAYER_WISE_TERMS_H_
