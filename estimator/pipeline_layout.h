#ifndef MEMGATE_ESTIMATOR_PIPELINE_LAYOUT_H_
#define MEMGATE_ESTIMATOR_PIPELINE_LAYOUT_H_

// Megatron-LM's --pipeline-model-parallel-layout, read as Megatron reads it
// (megatron/core/transformer/pipeline_parallel_layer_layout.py): stages
// separated by '|', 'E' the embedding, 't' a transformer layer, 'L' the
// loss, 'm' an MTP layer; commas are cosmetic; "(X)*n" and "x*n" repeat.
// "Et*3|(tt|)*29,m|L" is 32 stages. Stage k is model chunk k / p of
// pipeline rank k % p, so the layout also fixes the virtual stages, v.

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/memgate.pb.h"

namespace memgate {

// The most characters a layout may expand to, and the most (virtual)
// stages a launch may list (megatron_args.cc): far beyond any real model
// (a layer is one character; Llama-3.1-405B's 16 stages of 8 are 142,
// a model of a thousand layers over 512 stages 1,512), small enough that
// expanding it and estimating its stages is cheap, also for the 64
// launches a batch script may hold (the Slurm hook's whole answer is
// bounded by its time limit, 2 s by default: a launch of 2^20 stages took
// 0.34 s to check, 64 of 2^14 stages 0.95 s, both on this project's
// 2-core machine under load). Larger ones are refused before any is
// built.
inline constexpr uint64_t kMaxExpandedLayout = 1u << 13;

struct PipelineLayout {
  uint32_t virtual_stages = 1;  // v = stages / p
  // Transformer layers of each of the p * v stages, in the layout's order.
  std::vector<uint32_t> layers;
  // Standalone MTP: the pipeline rank, before the last, whose last chunk
  // holds the 'm's (ParallelConfig.mtp_pipeline_rank); none beside 'L'.
  std::optional<uint32_t> mtp_pipeline_rank;
};

// Errors name --pipeline-model-parallel-layout and the rule: the stage
// count must be a multiple of `pipeline`, 'E' must open and 'L' close the
// layout (once each), the 't's must number `num_layers` and the 'm's
// (multi-token prediction layers) `mtp_layers`, after every 't', all in
// one stage, the last chunk of its rank (Megatron asserts both): beside
// 'L', or on a rank before the last (Megatron's "standalone" MTP).
absl::StatusOr<PipelineLayout> ParsePipelineLayout(absl::string_view text,
                                                   uint32_t pipeline,
                                                   uint32_t num_layers,
                                                   uint32_t mtp_layers = 0);

// Writes `layout` into a job's parallel settings: its stages' layers
// (layers_per_stage), its chunks a rank (virtual_pipeline_stages, cleared
// for one) and where its MTP layers sit (mtp_pipeline_rank, cleared
// beside the loss). The pipeline size is the caller's.
void ApplyPipelineLayout(const PipelineLayout& layout,
                         v1::ParallelConfig& parallel);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_PIPELINE_LAYOUT_H_
