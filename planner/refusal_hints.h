#ifndef MEMGATE_PLANNER_REFUSAL_HINTS_H_
#define MEMGATE_PLANNER_REFUSAL_HINTS_H_

// What a refused job is told it could do instead (admission.cc): other
// layouts on the same GPUs, more GPUs for the same layout, or the least
// recomputation that makes the job itself fit. Each runs on the Admit path
// and is bounded by its input before it starts.

#include <cstdint>
#include <vector>

#include "proto/memgate.pb.h"

namespace memgate {

// Suggestions run on the Admit path of every refusal, which must stay fast
// whatever the job: a search over more layouts than this gets none (a
// 16,384-GPU cluster has about 10,000).
inline constexpr uint64_t kMaxSuggestionLayouts = 1u << 15;
// And, for Lion and Muon, more layer-wise packing than this (planner.h
// kMaxPlanLayerWiseWork: a thirty-second of a plan's, under 10 ms at the
// 0.143 ns a counted step measured).
inline constexpr uint64_t kMaxSuggestionLayerWiseWork = uint64_t{1} << 26;

// For a refused job: the best `count` admitted layouts on the same GPUs
// (same model, GPU, sequence and global batch), each layout once. The
// search is counted first and not done when it exceeds `max_layouts`.
std::vector<v1::Candidate> SuggestLayouts(
    const v1::Job& resolved_job, double threshold, int count,
    uint64_t max_layouts = kMaxSuggestionLayouts);

// For a refused job: the smallest GPU count at which the same TP, CP, PP and
// MBS fit under `threshold` (more data-parallel ranks shard the optimizer
// further), or 0 when no count does.
uint32_t SmallestGpuCountThatFits(const v1::Job& resolved_job,
                                  double threshold);

// Jobs with more (virtual) pipeline stages than this are not searched for
// the recomputation that would make them fit: each probe is a whole
// estimate, and the search runs on the Admit path.
inline constexpr uint32_t kMaxRecomputeProbeStages = 4096;

// For a refused job that does not recompute whole layers: the fewest layers
// of each (virtual) stage whose full recomputation (method block) makes the
// same job fit under `threshold`, by bisection (at most about 2 + log2 of a
// stage's layers estimates); 0 when even every layer does not, or the job
// has more than kMaxRecomputeProbeStages stages.
uint32_t LeastRecomputeThatFits(const v1::Job& resolved_job, double threshold);

// For a refused job that does not recompute whole layers: its own selective
// modules and the cheap ones (cheap_recompute.h), and core attention where
// it runs unfused (Megatron's default selective recomputation, which drops
// the s x s scores [K 5]), when with them the same job fits under
// `threshold` (one estimate). Where they do not (or there are none), a
// dense model's MLP or an MoE model's MoE layers beside them
// (FfnModulesFor) when the job then fits and that costs less
// (cost_model.h (7)) than the full recomputation of
// `least_layers` a stage (LeastRecomputeThatFits's answer; 0: none fits or
// none was looked for), as a plan picks it (one more estimate). Empty
// otherwise.
std::vector<v1::Recompute::Module> ModulesThatFit(const v1::Job& resolved_job,
                                                  double threshold,
                                                  uint32_t least_layers);

}  // namespace memgate

#endif  // MEMGATE_PLANNER_REFUSAL_HINTS_H_
