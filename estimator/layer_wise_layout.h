#ifndef MEMGATE_ESTIMATOR_LAYER_WISE_LAYOUT_H_
#define MEMGATE_ESTIMATOR_LAYER_WISE_LAYOUT_H_

// [LW] Megatron-LM's layer-wise distributed optimizer (Lion and Muon with
// --use-distributed-optimizer, core 0.18.0 on): the buffer DDP lays its
// matrices out in. Megatron core/optimizer/layer_wise_optimizer.py
// LayerWiseDistributedOptimizer._compute_per_buffer_param_layout keeps
// every matrix whole in one of DP shards (the rank that updates it), so a
// bucket is DP x its fullest shard, padded: the bf16 weights and the
// gradients live in that buffer, whole, on every rank. This is the
// packing alone; memory_model.cc adds the bytes.
//
// Two packings, by release:
//   core 0.18.x, 0.19.x: the matrices of a bucket sorted by elements,
//     largest first, each to the shard holding the fewest elements; a
//     bucket closes once it holds max(bucket_size, 0.9 x DP x its largest
//     matrix) elements.
//   after 0.19 (main, d98e8a6): sorted by Newton-Schulz cost (the larger
//     dimension times the smaller squared), each to the shard with the
//     least cost so far (kept across buckets) among those it fits in
//     below 1.3 x the bucket's elements / DP, else to the emptiest; a
//     bucket closes once it has reached that size and the next matrix
//     would grow its fullest shard.
// Each matrix starts on a 64-element boundary (param_layout.py
// pad_param_start); a shard is padded to lcm(64, lcm(DP, 128) / DP)
// elements (lcm(DP, 128, 2^16) with --ddp-pad-buckets-for-high-nccl-busbw).
// tests/tools/layer_wise_layout_reference.py runs Megatron's own function
// on the same shapes.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace memgate {

// A matrix as this rank holds it (its tensor-parallel shard).
struct LayerWiseMatrix {
  uint64_t rows = 0;
  uint64_t cols = 0;
};

enum class LayerWisePacking {
  kByElements,         // core 0.18.x, 0.19.x
  kByNewtonSchulzCost  // after 0.19 (main)
};

struct LayerWisePackingOptions {
  uint64_t shards = 1;  // DP: the data-parallel group the buffer shards over
  // Elements a bucket reaches before it may close; 0: one bucket (DDP's
  // without --overlap-grad-reduce, and every chunk but the first pipeline
  // rank's first).
  uint64_t bucket_size = 0;
  bool pad_for_high_nccl_busbw = false;
  LayerWisePacking packing = LayerWisePacking::kByElements;
};

struct LayerWiseBuffer {
  uint64_t padded_elements = 0;  // the buffer, on every rank
  uint64_t buckets = 0;
};

// Only the first min(matrices, shards) shards are ever used: each choice
// Megatron makes (the emptiest shard, the least-cost one that fits, the
// least-loaded in its walk: the first such) falls on the first shard no
// matrix has reached while one is left, whose count and cost are 0,
// below any shard's that holds one. So the work is at most matrices x
// min(matrices, shards) steps (a scan of the shards used a matrix, as
// Megatron's loops run; memgate's heaps and runs of identical matrices,
// placed together, cost less: layer_wise_terms.h counts those for a
// plan); above this it is refused before it starts (validation checks a
// job's total, LayerWisePackingWork: an estimate at it took about as long
// as the largest MoE estimate, ~4 ms, bench/RESULTS.md session 53; 1.7 ms
// since blocks, session 55; 0.7 ms since the buckets' walk by blocks, 56).
inline constexpr uint64_t kMaxLayerWisePackingWork = uint64_t{1} << 21;

// At most the steps PackLayerWiseBuffer takes for `matrices` over
// `shards`.
inline double LayerWisePackingSteps(double matrices, double shards) {
  return matrices * (matrices < shards ? matrices : shards);
}

// Lays out one model chunk's buffer of `forward` (its matrices in the
// order the model defines them; DDP walks them backwards) and adds each
// shard's elements (the matrices its rank updates) to `owned`, grown to
// the shards used (the rest own nothing). InvalidArgument past
// kMaxLayerWisePackingWork or for a zero-sized matrix or shard count.
absl::StatusOr<LayerWiseBuffer> PackLayerWiseBuffer(
    absl::Span<const LayerWiseMatrix> forward,
    const LayerWisePackingOptions& options, std::vector<uint64_t>& owned);

// `repeat` copies of `pattern` in a row: a model lists its matrices so
// (equal layers, an MoE layer's experts), and the packing reads each block
// once, not each matrix (its identical matrices are placed together), but
// in DDP's buckets the repetitions a bucket may close in (by cost, every
// one: its walk estimates the bucket matrix by matrix):
// LayerWiseLayoutTest.BlocksPackAsOneMatrixAtATime.
struct LayerWiseBlock {
  std::vector<LayerWiseMatrix> pattern;
  uint64_t repeat = 1;
};

// Appends `repeat` copies of `pattern` to `blocks`: one more repetition
// of the last block where that is the same pattern.
void AppendLayerWiseBlock(std::vector<LayerWiseBlock>& blocks,
                          const std::vector<LayerWiseMatrix>& pattern,
                          uint64_t repeat);

// PackLayerWiseBuffer of the blocks' matrices in order; the bound counts
// every matrix.
absl::StatusOr<LayerWiseBuffer> PackLayerWiseBlocks(
    absl::Span<const LayerWiseBlock> forward,
    const LayerWisePackingOptions& options, std::vector<uint64_t>& owned);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_LAYER_WISE_LAYOUT_H_
