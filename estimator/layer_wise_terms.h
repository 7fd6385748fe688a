#ifndef MEMGATE_ESTIMATOR_LAYER_WISE_TERMS_H_
#define MEMGATE_ESTIMATOR_LAYER_WISE_TERMS_H_

// [LW] Lion and Muon with Megatron's layer-wise distributed optimizer
// (core 0.18.0 on): a stage's matrices, as DDP lays them out
// (layer_wise_layout.h), used by memory_model.cc. Internal to the
// estimator. Figures are elements on one GPU.

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

// Matrix-rank steps the estimate of every stage packs, over the whole
// model (each packing and bucketing counted): validation refuses a job
// above kMaxLayerWisePackingWork.
double LayerWisePackingWork(const ModelShape& m, const Layout& l);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_LAYER_WISE_TERMS_H_
