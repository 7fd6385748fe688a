#ifndef MEMGATE_PLANNER_STAGE_SPLIT_H_
#define MEMGATE_PLANNER_STAGE_SPLIT_H_

// How a plan puts a model's layers over its pipeline stages and each
// stage's chunks (interleaved 1F1B), as Megatron allows, and which ranks'
// chunks to estimate for a pipeline's peak. Internal to the planner.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "estimator/memory_model.h"

namespace memgate {

inline constexpr uint32_t kMaxPipelineStages = 4096;

// How L layers go over p stages: evenly when p divides L; otherwise as
// Megatron's uneven split, the middle stages ceil(L/p) layers each and the
// first and last the rest, halved (Llama-3.1-405B's 126 layers over 16: 7,
// 8 x 14, 7), each at least 1 and at most the middle's; two stages of odd
// L as (L - 1) / 2 and (L + 1) / 2, the second standing for the middle.
struct StageSplit {
  bool ok = false;
  uint32_t first = 0, middle = 0, last = 0;  // first = last = 0: even
  // The model's MTP layers, counted as units of the last stage beside the
  // loss (first = middle - 1, last = middle - 1 - mtp); 0: not so split.
  uint32_t mtp = 0;
};

StageSplit SplitLayers(uint32_t layers, uint32_t p, uint32_t mtp = 0);

// Where p divides L, the split that evens out the LM head: the last stage
// also runs it (and the loss), `head` layers' worth of forward FLOPs
// (cost_model.h HeadInLayers: 4.6 for gpt-oss-120b's 201,088-token
// vocabulary, 0.7 for Llama-3.1-405B's), and the pipeline runs at its
// slowest stage's pace (cost_model.h (4)). Layers move off the last stage
// onto the middle ones, the first keeping its L / p: it holds the most
// micro-batches in flight (p; rank r holds p - r), so the peak's stage
// keeps its layers. First L/p, middle L/p + j, last L/p - j (p - 2), as
// Megatron's --decoder-first/last-pipeline-num-layers give it (the middle
// layers divide evenly over the p - 2 middle stages), with the j >= 1
// that makes the slowest of L/p + j and L/p - j (p - 2) + head the least
// (j near head / (p - 1)). Two stages have no middle one: the first takes
// the x layers (L/2 + x and L/2 - x, x near head / 2), and its peak rises
// with them (the planner estimates both splits). Not ok where no such
// split is faster than the even one (a head of about a layer or less),
// p < 2 or p does not divide L. O(1).
StageSplit HeadBalancedSplit(uint32_t layers, uint32_t p, double head);

// A head-balanced `split` of `layers` over p stages a step back toward the
// even one: j - 1 (x - 1 of two stages). Slower than `split` but still
// faster than the even split, and lighter on the stages that took layers,
// where the layers' own weights outweigh the activations they save (gpt-
// oss-120b over 4: 9, 11, 11, 5 needs 7 layers a stage recomputed, 9, 10,
// 10, 7 fits recomputing 5, as the even split does). Not ok where the step
// back is the even split. O(1).
StageSplit TowardEven(const StageSplit& split, uint32_t layers, uint32_t p);

// The splits of its layers a pipeline depth is tried with, at most: its
// own (SplitLayers), and where p divides L HeadBalancedSplit's and the one
// a step TowardEven.
inline constexpr size_t kSplitsPerDepth = 3;

// How each rank's layers go over its v chunks, as Megatron allows
// (transformer_config.py, "Uneven PP" and the accounted split):
//  kEven        an even split, L / (p v) a chunk;
//  kAccounted   --account-for-embedding/loss-in-pipeline-split: the first
//               and/or last stage one layer short of the middle's, every
//               chunk middle / v except rank 0's first and the last rank's
//               last, one fewer (Llama-3.1-405B: 7, 8 x 14, 7), down to
//               none (one-layer chunks: the embedding or the loss alone,
//               as Megatron builds it);
//  kFirstLast   --decoder-first/last-pipeline-num-layers with every rank's
//               layers a multiple of v, a rank's layers / v a chunk;
//  kMtpLayout   --pipeline-model-parallel-layout: as kAccounted, the last
//               rank's last chunk also short of its MTP layers, which it
//               holds beside the loss (SplitCountingMtp);
//  kNone        v does not fit the split.
enum class ChunkForm { kNone, kEven, kAccounted, kFirstLast, kMtpLayout };

// The form of v chunks a rank over `split`, kNone where v does not fit.
ChunkForm ChunkFormOf(const StageSplit& split, uint32_t p, uint32_t v);

// Layers of chunk j of rank i (kAccounted / kFirstLast, v > 1).
uint32_t ChunkLayers(ChunkForm form, const StageSplit& split, uint32_t p,
                     uint32_t v, uint32_t i, uint32_t j);

// A kMtpLayout chunking as Megatron's --pipeline-model-parallel-layout
// (pipeline_layout.h): "E" and the first chunk's layers, the p v - 2
// middle chunks, the last chunk's layers, the MTP layers and "L";
// "Et|(t*2|)*30mL" for DeepSeek-V3 over 8 x 4.
std::string MtpLayoutText(const StageSplit& split, uint32_t p, uint32_t v);

// The chunks of the ranks whose peak can be the largest, each chunk with
// its first layer (estimate.cc ChunksOf: chunk j of rank r is the model's
// virtual stage j p + r). They depend only on (split, p, v) and the model,
// so Enumerate builds them once per pipeline and chunk count, not once per
// layout. Empty where the stage's layer count and rank say it all
// (PeakOf).
// fp8's layers run in bf16 at either end of the model [F8L]; none where
// the run is not fp8.
struct Bf16Ends {
  uint32_t first = 0, last = 0;
};

struct RankChunks {
  uint32_t stage;
  std::vector<double> layers, first;
  ChunkMix mix;  // of layers and first: what LayoutStages::Chunks reads
};

// An upper bound on DistinctRanksOf's work over a plan, O(1) a pipeline
// depth: p x (1 + 2 + ... + 32) for every depth p it can try, once for
// each of the kSplitsPerDepth splits where p may also be tried with
// HeadBalancedSplit's split and the one a step toward even (p >= 2
// dividing the layers).
uint64_t PlacementWork(const ModelShape& m, uint32_t layers,
                       const std::vector<uint32_t>& gpu_divisors);

// The ranks to estimate for the peak of (split, p, v), chunk by chunk:
// every rank whose MoE layers a chunk differ where the model's placement
// decides which peaks ([XR], stage_split.cc DistinctRanksOf), the first,
// middle and last ranks of an uneven interleaved split, and none (empty)
// where the stage's layer count and rank say it all. Every rank that
// holds one of fp8's bf16 layers (`bf16`) is among them.
std::vector<RankChunks> PeakRankChunksOf(const StageSplit& split, uint32_t p,
                                         uint32_t v, const ModelShape& m,
                                         Bf16Ends bf16);

}  // namespace memgate

#endif  // MEMGATE_PLANNER_STAGE_SPLIT_H_
